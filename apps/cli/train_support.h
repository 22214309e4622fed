// What parex train / parex node use besides their loop (train_command.cc):
// option checks, the parameter digest, paths per node, time formatting.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "actors/cluster/cluster.h"
#include "actors/executor/parallel_executor.h"
#include "apps/cli/checkpoint.h"
#include "apps/cli/cli.h"
#include "base/status.h"
#include "kernels/feed.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex::cli {

using Clock = std::chrono::steady_clock;

// The options' own checks, before anything is loaded: counts in range,
// --checkpoint-every with a directory, --program's options only with it and
// --lr only without. InvalidArgument naming the option.
Status CheckTrainOptions(const TrainOptions& o);

// ", on cpu 0" / ", on cpus 2-3" when this process may run on fewer CPUs
// than the machine has (parex launch pins each node to its share), else "".
std::string PinnedCpus();

double Seconds(Clock::time_point since);
// "42s", "3m07s".
std::string Duration(double seconds);

// Mean of a fetched per-place value (one element per place).
double Mean(const Tensor& t);

// SHA-256 over the trainable parameters in `scope` (sorted names; each
// name, dtype, dims and bytes): equal digests mean bit-identical parameters.
// (Other persistables, such as batch_norm's running statistics, are each
// place's own, as in Fluid.)
std::string ParameterDigest(const Scope& scope, std::vector<std::string> names);

// --resume: rank 0 (`writer`) reads the newest complete checkpoint in `dir`
// into `scope` and `where` (the other nodes may not see its directory);
// across nodes every node takes rank 0's position from a sum only rank 0
// adds to, and its persistables with the broadcast that follows. Prints
// where the run resumes.
Status ResumeRun(const std::string& cmd, const std::string& dir, bool writer,
                 Cluster* cluster, const Program& main, CheckpointState* where,
                 Scope* scope);

// "{node}" in a path becomes the node's name.
std::string ForNode(std::string path, const std::string& node);

// The options every node of a cluster must train with, as the handshake
// compares them: " --mode M --batch B --epochs E --steps S --seed N
// [--no-shuffle]{sync_bn} --fuse-buckets F --checkpoint-every C" (F 0: off).
std::string HandshakeOptions(const TrainOptions& o, int64_t batch, int epochs,
                             const std::string& sync_bn,
                             const BuildStrategy& build);

// A node whose peer was lost: unless the process ended within `grace` (its
// training loop saw the error and exited), it reports `status` as `cmd`'s
// error and ends here (kExitRuntime), whatever waits (a Gloo call cannot be
// cancelled).
void ExitUnlessEndedWithin(const std::string& cmd, const Status& status,
                           std::chrono::milliseconds grace);

// --resume with --metrics: the lines of the metrics file at `path` whose
// step is at most `step` (those of the steps the checkpoint holds, from the
// run it ended); "" when there is no such file.
std::string MetricsLinesUpTo(const std::string& path, int64_t step);

// --lr-schedule: sets `rate` into each of `vars` on every place (each holds
// its own copy of a persistable in AllReduce mode), as Paddle's LRScheduler
// does. InvalidArgument naming the variable and place when one is not a
// one-element float tensor.
Status SetLearningRate(ParallelExecutor* pe,
                       const std::vector<std::string>& vars, double rate);

// A node's share of the global batch `feed` of `rows` rows: for each of its
// `n` places, the rows place first_place + p would take in one process of
// `world` places (the last place of the world takes the remainder).
std::vector<FeedMap> NodeShareOfBatch(const FeedMap& feed, int64_t rows,
                                      int first_place, int n, int world);

}  // namespace parex::cli
