// ParallelExecutor: a program run data-parallel over N places by the actor
// runtime (seeds 000 and 001; DESIGN.md §3; PADDLE_FORMATS.md, Fluid's
// data-parallel contract).
//
// Construction builds the SsaGraph of the main program (BuildStrategy),
// compiles it once into a task graph whose nodes are the op handles, and
// spawns the actors. Each place has a local scope for persistables and an
// execution scope for temporaries:
//  - place 0's local scope sits on the caller's `scope`, whose persistables
//    (initialised by running the startup program there) place 0 uses and
//    updates in place; every other place gets a copy of each persistable
//    (Fluid's broadcast from place 0, in sorted-name order), except that in
//    Reduce mode on CPU places the places share parameters (no copy);
//  - the execution scopes are dropped every `num_iteration_per_drop_scope`
//    steps.
// Run splits each fed tensor along dim 0 (batch / N per place, the last
// place taking the remainder), runs one step, and returns each fetch target
// concatenated along dim 0 over the places (or per place).
//
// Thread-safety: one Run at a time.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/comm/communicator.h"
#include "actors/runtime/actor_runner.h"
#include "actors/runtime/scheduler_policy.h"
#include "actors/runtime/trace_recorder.h"
#include "base/place.h"
#include "base/status.h"
#include "graph/ir/program.h"
#include "graph/ssa/ssa_graph.h"
#include "kernels/feed.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex {

struct ExecutionStrategy {
  // CAF scheduler workers; 0: the hardware's cores (Fluid's CPU default,
  // 2 x places, assumes op threads that block; parex's never do).
  int num_threads = 0;
  // Temporaries are dropped every this many steps (Fluid's default 100).
  int num_iteration_per_drop_scope = 100;
  // Schedule and exchange messages as usual but run no kernels.
  bool dry_run = false;
  // How CAF's workers pick the next actor (actors/runtime/scheduler_policy.h).
  SchedulerPolicy scheduler = SchedulerPolicy::kResumeHere;
  // Linear chains of op handles on one place run as one actor.
  bool fuse_chains = true;
  // Records every op handle's span and every actor message when set (and
  // enabled); must outlive the executor. Node ids are op handle ids of
  // graph(); TraceJson() exports it.
  TraceRecorder* trace = nullptr;
  // The communicator the collectives go through (one per executor, joining
  // its places); null: the in-process backend over the places.
  std::shared_ptr<Communicator> communicator;
  // Asynchronous places (sim:N): how a stream waits for another (event or
  // full Wait; ParallelExecutor::set_stream_wait switches it between steps),
  // and how long the simulated device takes before each work item.
  StreamWaitStrategy stream_wait = StreamWaitStrategy::kEvent;
  int64_t sim_delay_us = 0;
  // A test hook (asynchronous places): the stream of op handle
  // `skip_wait_consumer` does not wait for op handle `skip_wait_producer`.
  int skip_wait_producer = -1;
  int skip_wait_consumer = -1;
  // The global index of place 0 among every node's places (a node's first
  // place): random ops seed their draws by the global place, so two nodes'
  // places draw as two places of one process do.
  int first_place = 0;
  // CPU places run as places with memory of their own would (cuda places
  // always do; actors/executor/device_places.h): streams driven through
  // device contexts, persistables copied onto every place, feeds copied in,
  // fetches and persistables copied out, collectives by the in-device
  // communicator. The tests use it to run the device path without a GPU.
  bool device_streams = false;
  // CUDA places: after two steps of a fetch list run on the actors, the
  // next one is captured as one CUDA graph and later steps replay it (the
  // runtime's actors are not involved then), while the feeds keep their
  // shapes and the execution scopes stay (actors/executor/step_graphs.cc
  // says when a program cannot be captured). Off: every step on actors.
  bool cuda_graphs = true;
};

class ParallelExecutor {
 public:
  // `places` empty: CPU_NUM CPU places (1, with a warning, when unset).
  // All places are of one kind: cpu, sim (simulated asynchronous devices:
  // host memory, every op handle's work on a stream actor of its place), or
  // cuda (every place on one GPU, so far: device_places.h).
  // `scope` holds the initialised persistables and must outlive the
  // executor. `share_vars_from`: a test executor reads the parameters of
  // that (training) executor's places instead of copies of its own; it must
  // have the same places and outlive this one.
  // Errors: CheckPlaces's, the graph builder's, a persistable of the program
  // missing from `scope`.
  static StatusOr<std::unique_ptr<ParallelExecutor>> Create(
      std::vector<Place> places, const Program& main_program,
      const std::string& loss_name, Scope* scope,
      const BuildStrategy& build_strategy = {},
      const ExecutionStrategy& exec_strategy = {},
      const ParallelExecutor* share_vars_from = nullptr);
  ~ParallelExecutor();

  // Whether this process can run a program on `places`, checked before
  // anything is loaded (the CLI asks it first, Create again): one kind, no
  // place twice (InvalidArgument), every CUDA place on a visible device
  // (FailedPrecondition, kernels/visible_devices.h), and CUDA places either
  // the slots of one GPU or one place per GPU with the NCCL communicator
  // built in (Unimplemented otherwise). Each error names the place.
  static Status CheckPlaces(const std::vector<Place>& places);

  // One step. `feed`: one dict, every tensor split along dim 0 over the
  // places. Returns the fetch targets merged along dim 0 (a scalar loss from
  // 4 places comes back with shape [4]).
  // Errors: fewer samples than places, an unknown fetch name or feed name,
  // a feed of the wrong dtype or shape, a kernel failing on some place
  // (naming op and place); the executor stays usable after any of them.
  StatusOr<std::vector<Tensor>> Run(const FeedMap& feed,
                                    const std::vector<std::string>& fetch_list);
  // One step with one feed dict per place; the fetched values per place:
  // result[i][p] is fetch_list[i] on place p.
  StatusOr<std::vector<std::vector<Tensor>>> RunPerPlace(
      const std::vector<FeedMap>& feeds,
      const std::vector<std::string>& fetch_list);

  const std::vector<Place>& places() const;
  // Where feeds are best made (a reader's batches, Tensor::TryAllocateFrom):
  // a host tensor from it reaches the places without a staging copy
  // (pinned host memory on CUDA places; a pool of its own for CPU places
  // run as devices, ExecutionStrategy::device_streams). Null where a plain
  // host tensor serves as well (CPU places on the host path).
  Allocator* feed_allocator() const;
  // The graph of the last fetch list run (or of none, before any Run).
  const SsaGraph& graph() const;
  // The trace of ExecutionStrategy::trace as Chrome trace JSON, labelled
  // with the op handles of the last fetch list run.
  // `metadata`: added to the trace's "metadata" object (a node's name,
  // rank and clock offset, for trace_merge.h).
  std::string TraceJson(
      const std::map<std::string, std::string>& metadata = {}) const;
  // Aborts the step in flight, if any (a peer gone, a deadline passed): Run
  // returns `reason` within a bounded time, and the next Run starts clean.
  // Callable from any thread.
  void Abort(const Status& reason);
  // The stream wait strategy of asynchronous places, from the next step.
  // REQUIRES: no step running.
  void set_stream_wait(StreamWaitStrategy strategy);

  // Place p's local scope (persistables of place p). On places with memory
  // of their own (device_places.h) its tensors live there: read them through
  // SyncPersistables and write them through SetOnPlaces.
  Scope* local_scope(int place) const;
  // Every place's copy of persistable `name` becomes `value` (a host
  // tensor of its element count and dtype), e.g. a learning rate set
  // between steps. Errors name the variable and place.
  Status SetOnPlaces(const std::string& name, const Tensor& value);
  // Brings the caller's `scope` (place 0's persistables) up to date with
  // where each persistable really lives: one that the steps update on other
  // places only (Reduce mode: a parameter's optimizer accumulators, moments
  // and beta powers, updated by the parameter's owner) is copied there from
  // the lowest such place. Place 0 never reads its own copy of such a
  // persistable, so the copy changes nothing the steps compute. Call between
  // steps, before anything reads persistables from `scope` (checkpoints, a
  // saved model, a broadcast to other nodes). On places with memory of their
  // own, every persistable a step writes is copied back (from place 0, or
  // the lowest place writing it); an error of the device.
  Status SyncPersistables();
  // CAF scheduler workers this executor runs on.
  int num_threads() const;
  int64_t steps_run() const;
  // The number of the next step (0 at creation, then one more per step run):
  // random ops key their draws by it, so a run resumed at step N draws what
  // an uninterrupted run draws at step N.
  void SetNextStep(int64_t step);

  struct Impl;

 private:
  explicit ParallelExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace parex
