// One training run of a TrainJob (train_job.h) on this process's places,
// alone (parex train) or as one node of a cluster (parex node, with a
// ClusterSession): TrainSession owns the run's state (the scope, the
// executors, the reader, the step and epoch it stands at, what it
// measured) and runs it from the persistables' start to the final report.
// Its parts: Checkpointer (checkpoint.h: --resume, --checkpoint-dir),
// MetricsWindow (metrics.h: the epoch lines and --metrics), StopSignals
// (stop_signal.h: SIGINT / SIGTERM), ProgressLine (progress.h), and
// --eval-data, --lr-schedule and --trace between the steps.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "actors/runtime/trace_recorder.h"
#include "apps/reader.h"
#include "apps/train/checkpoint.h"
#include "apps/train/cluster_session.h"
#include "apps/train/metrics.h"
#include "apps/train/progress.h"
#include "apps/train/pserver_run.h"
#include "apps/train/train_job.h"
#include "apps/train/train_options.h"
#include "base/place.h"
#include "kernels/scope.h"

namespace parex::train {

// Where and how this process trains, as the command worked it out from the
// options, the topology and the job before the run starts.
struct TrainPlan {
  std::vector<Place> places;  // this process's
  BuildStrategy build;
  ExecutionStrategy exec;  // its trace is the session's
  int world = 1;           // the places of every node
  int first_place = 0;     // this process's first place, of the world's
  int epochs = 1;
  int64_t batch = 32;  // global, split over the world's places
  bool writer = true;  // rank 0: writes --save, --metrics and checkpoints
  // This node's paths ("{node}" replaced; "" for none but `save`).
  std::string save, trace, metrics, checkpoint_dir, resume;
  // Parameter-server training: this node's part (null: collective mode).
  std::shared_ptr<PserverRun> pserver_run;
  Clock::time_point wall_start = Clock::now();  // the wall time's start
};

// Sets `plan`'s paths for node `node` ("" outside a cluster) from the
// options (--save defaulting to `default_save`) and checks them before any
// work: an unwritable --save, --metrics (the writer's) or --trace is found
// now, not after training.
Status SetOutputs(const TrainOptions& o, const std::string& node,
                  const std::string& default_save, TrainPlan* plan);

// A run's prepared state and its loop. Not thread-safe: one Run, on the
// thread that made it.
class TrainSession {
 public:
  // `cmd` names the command in lines and errors; `reader` yields `job`'s
  // columns in batches of plan.batch; `cluster` is null for one process.
  TrainSession(std::string cmd, const TrainOptions& o, TrainJob job,
               BatchReader reader, TrainPlan plan,
               std::unique_ptr<ClusterSession> cluster);
  ~TrainSession();
  TrainSession(const TrainSession&) = delete;
  TrainSession& operator=(const TrainSession&) = delete;

  // Trains, prints the lines of `parex train` and writes its files; the
  // process exit code: 0, 1 after an error (printed; a node that joined its
  // cluster ends the process instead), or 128 + the signal that stopped it.
  int Run();

  // The persistables after Run (the trained parameters).
  Scope* scope() { return &scope_; }

 private:
  int Failed(const Status& status);
  Status Prepare();
  void PrintHeader() const;
  // Each of job_.fixed_lr_vars with its value (after Prepare).
  void PrintFixedLearningRates() const;
  Status TrainEpochs();
  Status TrainEpoch(int epoch);
  // batches->Next, its wait counted as feeding.
  bool NextBatch(BatchPrefetcher* batches, FeedMap* feed);
  Status RunStep(const FeedMap& feed, int64_t rows, int epoch, int64_t b);
  Status Fetch(const FeedMap& feed, int64_t rows, StepMetrics* m);
  Status AfterStep(int epoch, int64_t b);
  Status EndEpoch(int epoch, Clock::time_point epoch_start);
  Status Settle();
  // What of each batch this process feeds: a cluster node its places' rows
  // (a parameter server none), one process all (nullopt).
  std::optional<RowShare> FeedShare() const;
  // Parameter-server training (every node, at the same step): what async
  // mode has in flight received (Drain), then (Gather) the pservers' state
  // on every node, the prefetched tables included (the end of the run).
  Status DrainPserverState();
  Status GatherPserverState();
  StatusOr<std::string> Evaluate(int epoch);
  StatusOr<std::string> Checkpoint(int64_t epoch, int64_t next_batch);
  Status WriteMetrics() const;
  void SwitchTrace();
  int Stop(int signal, const std::string& checkpoint);
  int Conclude();
  Status WriteTrace();
  void PrintTraceSummary() const;
  // The cluster's collective time so far (zero for one process).
  Cluster::CollectiveTime CollectiveTimeNow() const;
  // "step account ..." (issue 33): this run's steps' time, split into
  // compute, the steps' collectives (and of them, waiting for slower
  // peers), the cluster's other collectives and feeding. A cluster's nodes
  // all call it at the same point (one sum across nodes).
  StatusOr<std::string> StepAccount();
  // Parameter-server training: the tensor bytes this node sent and got.
  void PrintPserverTraffic() const;

  const std::string cmd_;
  const TrainOptions o_;
  const TrainJob job_;
  BatchReader reader_;  // its batch allocator set once the executor is made
  TrainPlan plan_;      // its exec.communicator is the cluster's (Gloo)
  std::unique_ptr<ClusterSession> cluster_;
  Scope scope_;
  std::vector<std::string> persistables_;  // the startup's (sorted)
  Checkpointer checkpointer_;
  TraceRecorder trace_;
  std::unique_ptr<ParallelExecutor> pe_;
  std::unique_ptr<ParallelExecutor> eval_pe_;  // --eval-data, made at need
  // What a step fetches: the loss, the accuracy (classifiers), --fetch's.
  std::vector<std::string> fetch_;
  size_t first_extra_ = 0;  // fetch_'s first --fetch
  MetricsWindow metrics_;
  ProgressLine progress_;
  int64_t total_steps_ = 0;
  int64_t step_ = 0, samples_ = 0;
  int64_t last_epoch_ = 0, last_batch_ = 0;  // the next batch to run
  int stop_ = 0;     // the signal that stops every node (0: none)
  int stopped_ = 0;  // a node that stopped at once without a checkpoint
  Clock::time_point train_start_;
  // The step account's sums since train_start_ (seconds), from step
  // first_step_ on.
  int64_t first_step_ = 0;
  double feed_s_ = 0, last_feed_s_ = 0, step_s_ = 0;
  Cluster::CollectiveTime collective_at_start_;
  double own_at_last_step_ = 0;  // the cluster's own collectives' time then
};

}  // namespace parex::train
