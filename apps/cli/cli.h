// The `parex` command line (issue 6): one function per subcommand, called
// by apps/parex_main.cc once CLI11 has parsed the arguments. Each returns
// the process exit code and prints its own errors, one line each:
//   0 success, 1 a runtime error ("parex <command>: error: ..."),
//   2 a usage error (bad argument values that CLI11 cannot check).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/place.h"
#include "base/status.h"
#include "graph/ssa/ssa_graph.h"
#include "kernels/io/model_io.h"
#include "kernels/scope.h"

namespace parex::cli {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

// Prints "parex <command>: error: <message>" to stderr; returns `code`.
int Fail(const std::string& command, const Status& status,
         int code = kExitRuntime);

// The *.pdmodel file of a directory, when it holds exactly one; NotFound /
// InvalidArgument naming the directory otherwise.
StatusOr<std::string> OnlyPdmodel(const std::string& dir);

// CPU numbers as "cpu 3" or "cpus 0-3,6": runs shortened, for the lines that
// say where a node runs. REQUIRES: ascending, not empty.
std::string CpuList(const std::vector<int>& cpus);

// "cpu:N" (N CPU places), "cpu" (one) or "cpu:0,1,3"; InvalidArgument
// otherwise (CUDA places are not run by the CLI yet).
StatusOr<std::vector<Place>> ParsePlaces(const std::string& spec);

// --places and --mode ("allreduce" or "reduce") together: the places and a
// BuildStrategy in that mode; InvalidArgument naming the bad one.
struct Parallelism {
  std::vector<Place> places;
  BuildStrategy build;
};
StatusOr<Parallelism> ParseParallelism(const std::string& places,
                                       const std::string& mode);

// A program named on the command line, with its parameters when `scope` is
// given:
//   DIR   a Paddle inference model: __model__ plus a file per parameter (or
//         __params__), or one *.pdmodel with its *.pdiparams beside it;
//   FILE  a program file (binary or text protobuf); `params` a combined
//         parameter file (*.pdiparams), or, when empty, one beside FILE
//         with the same stem, or none (a program without parameters).
// Errors name the path.
// The program is validated (ValidateProgram) unless `validate` is false
// (inspect reports validation itself).
StatusOr<InferenceModel> LoadModel(const std::string& path,
                                   const std::string& params, Scope* scope,
                                   bool validate = true);

struct TrainOptions {
  std::string model = "digits_mlp";
  // A user's program instead of an example (train_job.h): the main program
  // (a file or a directory with main.pdmodel), its startup program and/or a
  // directory of parameter files, NAME=FILE.npy per fed variable, the loss
  // ("": the one Fluid marked).
  std::string program, startup, params, loss;
  std::vector<std::string> data;
  std::string
      lr_schedule;  // --program's rate per step (lr_schedule.h); "": as it is
  std::vector<std::string>
      eval_data;                   // NAME=FILE.npy: evaluated after each epoch
  std::vector<std::string> fetch;  // more variables to report per step
  bool shuffle = true;             // false: the rows in file order every epoch
  // BuildStrategy::sync_batch_norm: batch statistics over every place.
  bool sync_batch_norm = false;
  // Checkpoints (checkpoint.h): written into checkpoint_dir every
  // checkpoint_every steps (0: only at the end and on SIGINT/SIGTERM), the
  // newest `keep` kept; `resume` continues from the newest one in a dir.
  std::string checkpoint_dir, resume;
  int64_t checkpoint_every = 0;
  int keep = 3;
  std::string places = "cpu:2";
  // Unset: the model's default. Set: checked up front (epochs and batch
  // positive, lr finite and positive), a usage error otherwise.
  std::optional<int> epochs;
  std::optional<int64_t> batch;  // split over the places
  std::optional<double> lr;
  std::string mode = "allreduce";
  int seed = 1;
  std::string trace;  // Chrome trace JSON of the first trace_steps steps
  int trace_steps = 20;
  int64_t trace_from = 0;  // the first step traced (after a warm-up, say)
  std::string save;        // "": parex-<model> in the working directory
  std::string data_dir;    // UCI housing and digits CSVs
  std::string fashion_dir;
  bool progress = true;          // a live line when stdout is a terminal
  std::optional<int64_t> steps;  // stop after this many steps in all
  std::string metrics;           // JSON lines: one per step
  // Dense all-reduces packed into buckets of at most this many bytes (0:
  // one call per gradient). Unset: off in one process (its all-reduce is
  // cheap per call), kClusterBucketBytes across nodes (a Gloo call costs a
  // round trip or more).
  std::optional<int64_t> fuse_bucket_bytes;
  // Scheduler workers; unset: this machine's cores (parex launch gives
  // each node it starts its share of them).
  std::optional<int> threads;
  // parex node: the topology file and this node's name in it (the places
  // are the node's; --save and --metrics are written by rank 0 only).
  std::string topology;
  std::string node;
};
constexpr int64_t kClusterBucketBytes = 1 << 20;
int RunTrain(const TrainOptions& options);
// parex node: RunTrain as one node of the topology's cluster.
int RunNode(const TrainOptions& options);

struct LaunchOptions {
  std::string topology;
  std::string parex;              // this executable (argv[0] resolved)
  std::vector<std::string> args;  // node options passed to every node
  std::vector<std::string> only;  // nodes to start ("" : every local one)
  bool no_pin = false;            // leave the nodes' CPU affinity alone
};
// parex launch: every node of the topology whose host is this machine, as
// child processes of `parex node`; their output prefixed with the node name.
int RunLaunch(const LaunchOptions& options);

struct InferOptions {
  std::string model;
  std::string params;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string output;               // "": print only
  std::string places = "cpu:1";
  std::string trace;
};
int RunInfer(const InferOptions& options);

int RunInspect(const std::string& path, const std::string& params);

struct GraphOptions {
  std::string file;   // a program (FILE or DIR), or
  std::string model;  // an example's training program
  std::string places = "cpu:2";
  std::string mode = "allreduce";
  std::string loss;    // a training program's loss ("": the one Fluid marked)
  std::string format;  // dot or json; "": from the output's extension
  std::string output;
};
int RunGraph(const GraphOptions& options);

// parex trace merge A.json B.json ... -o ALL.json
struct TraceMergeOptions {
  std::vector<std::string> inputs;
  std::string output;
};
int RunTraceMerge(const TraceMergeOptions& options);

// parex secret FILE: a new cluster secret (32 random bytes, hex) written
// with mode 0600; refuses to replace an existing file unless `force`.
int RunSecret(const std::string& path, bool force);

// parex plot METRICS.jsonl -o curve.svg|png: the loss (and accuracy) of a
// --metrics file, drawn by gnuplot.
struct PlotOptions {
  std::string metrics;
  std::string output;
  std::string title;  // "": the metrics file's name
};
int RunPlot(const PlotOptions& options);

}  // namespace parex::cli
