// What parex train / parex node use besides their loop (train_command.cc):
// option checks, the parameter digest, paths per node, time formatting.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "actors/cluster.h"
#include "apps/cli/checkpoint.h"
#include "apps/cli/cli.h"
#include "base/status.h"
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
Status ResumeRun(const std::string& cmd, const std::string& dir, bool writer, Cluster* cluster,
                 const Program& main, CheckpointState* where, Scope* scope);

// "{node}" in a path becomes the node's name.
std::string ForNode(std::string path, const std::string& node);

}  // namespace parex::cli
