// What parex train measures while it trains: each step's loss, accuracy and
// --fetch values (StepMetrics), settled in windows across nodes into the
// epoch's means and the --metrics JSON lines (MetricsWindow); the mean of a
// fetched value and the parameter digest the run ends with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "actors/cluster/cluster.h"
#include "base/status.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex::train {

// A step's loss and accuracy: sums over this node's places until settled
// across nodes, the values after.
struct StepMetrics {
  int64_t step = 0, batch = 0;
  int epoch = 0;
  double loss = 0, accuracy = 0;
  std::vector<double> fetched;  // --fetch: means, summed like the loss
  double samples_per_s = 0, wall_s = 0;
  // This node's step account of the step (ms): the step's run, its time
  // in cross-node collectives (of which waiting for the slowest node's
  // arrival: this node's time less the least of any node's, settled with
  // the window), the cluster's own collectives since the step before
  // (metrics, stop agreement), the wait for its batch.
  double step_ms = 0, collective_ms = 0, waiting_ms = 0, other_ms = 0,
         feed_ms = 0;
};

// The steps run but not settled yet, the sums of the epoch's settled steps,
// and the --metrics lines of the run so far. A cluster sums kWindow steps'
// metrics at once (one Gloo call, not one per step), at points every node
// reaches at the same step. Not thread-safe (the training loop's).
class MetricsWindow {
 public:
  static constexpr size_t kWindow = 64;

  // `fetches`: the --fetch names; `classifier`: steps have an accuracy;
  // `world`: the places of every node (a cluster's sums are divided by it);
  // `lines`: keep the --metrics lines (a --metrics file is written).
  MetricsWindow(std::vector<std::string> fetches, bool classifier, int world,
                bool lines);

  // --resume: the lines the metrics file had up to the resumed step.
  void KeepLines(std::string lines) { lines_ = std::move(lines); }

  void Add(StepMetrics m) { pending_.push_back(std::move(m)); }
  size_t pending() const { return pending_.size(); }

  // Settles the pending steps: across nodes (`cluster` set) sums them in one
  // call that also carries whether this node was told to stop; checks each
  // loss (Internal naming the step when not finite: training diverged), adds
  // them to the epoch's sums and the lines. Returns the signal that stops
  // every node after this settle, 0 for none.
  StatusOr<int> Settle(Cluster* cluster);
  // Settle found a loss that is not finite. Across nodes every node finds it
  // at the same step, from the same sums: the failure is agreed.
  bool diverged() const { return diverged_; }

  // A new epoch: its sums start from zero.
  void StartEpoch();
  int64_t steps() const { return steps_; }  // settled in this epoch
  double mean_loss() const;                 // over them
  // Prints "epoch E/N: loss L[, train accuracy A][, FETCH V...], S steps,
  // T s" for the epoch's settled steps.
  void PrintEpochLine(int epoch, int epochs, double seconds) const;
  // --eval-data's result as a line of its own (the step, the epoch 1-based).
  void AddEvalLine(int64_t step, int epoch, double loss, double accuracy,
                   int64_t rows);

  const std::string& lines() const { return lines_; }

 private:
  Status SumAcrossNodes(Cluster* cluster, int* stop);
  void AddLine(const StepMetrics& m);

  const std::vector<std::string> fetches_;
  const bool classifier_;
  const int world_;
  const bool keep_lines_;
  std::vector<StepMetrics> pending_;
  bool diverged_ = false;
  double loss_sum_ = 0, acc_sum_ = 0;
  std::vector<double> fetch_sums_;  // of this epoch
  int64_t steps_ = 0;
  std::string lines_;  // JSON lines
};

// --resume with --metrics: the lines of the metrics file at `path` whose
// step is at most `step` (those of the steps the checkpoint holds, from the
// run it ended); "" when there is no such file.
std::string MetricsLinesUpTo(const std::string& path, int64_t step);

// Mean of a fetched per-place value (one element per place).
double Mean(const Tensor& t);

// SHA-256 over the trainable parameters in `scope` (sorted names; each
// name, dtype, dims and bytes): equal digests mean bit-identical parameters.
// (Other persistables, such as batch_norm's running statistics, are each
// place's own, as in Fluid.)
std::string ParameterDigest(const Scope& scope, std::vector<std::string> names);

}  // namespace parex::train
