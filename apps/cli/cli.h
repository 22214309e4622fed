// The `parex` command line (issue 6): one function per subcommand, called
// by apps/parex_main.cc once CLI11 has parsed the arguments. Each returns
// the process exit code and prints its own errors, one line each
// (apps/exit_codes.h: 0 success, 1 a runtime error, 2 a usage error).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "apps/exit_codes.h"
#include "apps/train/train_options.h"
#include "base/place.h"
#include "base/status.h"
#include "graph/ssa/ssa_graph.h"
#include "kernels/io/model_io.h"
#include "kernels/scope.h"

namespace parex::cli {

using train::kClusterBucketBytes;
using train::TrainOptions;

// "a, b, c" ("(none)" for no names): lists in messages.
std::string JoinNames(const std::vector<std::string>& names);

// The *.pdmodel file of a directory, when it holds exactly one; NotFound /
// InvalidArgument naming the directory otherwise.
StatusOr<std::string> OnlyPdmodel(const std::string& dir);

// A place list as users write it (base/place.h: "cpu:2", "cuda:0x2",
// "cuda:all", ...) on this machine, "all" resolved; `what` names it in
// errors ("--places", or a topology's node). InvalidArgument for a bad
// spelling; FailedPrecondition for "cuda:all" where no device is visible.
StatusOr<std::vector<Place>> ParsePlaces(const std::string& spec,
                                         const std::string& what = "--places");
// ParsePlaces, then whether this process can run a program on the places
// (ParallelExecutor::CheckPlaces: one kind, CUDA places on visible devices
// and a runtime that runs them); errors name `spec` and the place. Every
// command that runs places asks this before it loads anything.
StatusOr<std::vector<Place>> RunnablePlaces(
    const std::string& spec, const std::string& what = "--places");
// The exit code of a place list's error: kExitUsage for a bad spelling
// (InvalidArgument), kExitRuntime for places that cannot run here.
int PlacesExitCode(const Status& status);

// --places and --mode ("allreduce" or "reduce") together: the places
// (RunnablePlaces when `to_run`, else ParsePlaces) and a BuildStrategy in
// that mode; InvalidArgument naming the bad one.
struct Parallelism {
  std::vector<Place> places;
  BuildStrategy build;
};
StatusOr<Parallelism> ParseParallelism(const std::string& places,
                                       const std::string& mode, bool to_run,
                                       const std::string& what = "--places");

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

// parex train (apps/cli/train_command.cc; the training is apps/train/).
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
  // The runs --trace records: trace_runs of them from run trace_from (the
  // first run is 0, --bench's are 1..bench), so a trace can leave out the
  // first run's preparation (kernels chosen, primitives built, buffers).
  int trace_from = 0;
  int trace_runs = 1;
  int bench = 0;     // timed runs after the first (0: none)
  bool fuse = true;  // graph/builder/inference_fusion.h, on CPU places
  // Rows per place each executor run takes of a larger batch
  // (apps/cli/infer_chunks.h); 0: the whole batch in one run.
  int64_t chunk_rows = 32;
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
  // --node NAME --topology FILE: that node's part of the program placed for
  // parameter-server training (apps/cli/place_command.cc), not the SSA graph.
  std::string node;
  std::string topology;
};
int RunGraph(const GraphOptions& options);
int RunNodeGraph(const GraphOptions& options, const std::string& format);

// parex place FILE --topology T -o PLACED: the training program with every
// op and variable placed for the trainers and pservers of T
// (graph/builder/placement.h), what each pserver holds printed.
struct PlaceOptions {
  std::string file;
  std::string topology;
  std::string output;
};
int RunPlace(const PlaceOptions& options);

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
