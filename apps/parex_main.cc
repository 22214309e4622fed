// parex: the command line (issue 6). `parex --help` lists the subcommands;
// apps/cli/ implements them. Each subcommand's options are registered by a
// function of its own here; main parses and dispatches.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "apps/cli/cli.h"
#include "apps/datasets.h"
#include "base/logging.h"
#ifdef PAREX_WITH_CUDA
#include "apps/cuda_loader.h"
#endif

namespace {

using namespace parex::cli;
using parex::kExitOk;
using parex::kExitUsage;

// This executable's path, for launch's children.
std::string SelfExecutable(const char* argv0) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) return std::string(buf, static_cast<size_t>(n));
  return argv0;
}

// The training options `train` and `node` share: the values CLI11 cannot
// leave unset (TrainOptions' optionals), and their options to ask whether
// they were given.
struct TrainFlags {
  int epochs = 0;
  int64_t batch = 0;
  double lr = 0;
  int64_t steps = 0;
  int64_t fuse = 0;
  int threads = 0;
  bool no_progress = false;
  bool no_shuffle = false;
  bool sync_batch_norm = false;
  bool no_channels_last = false;
  bool no_cuda_graphs = false;
  CLI::Option *epochs_opt, *batch_opt, *lr_opt, *steps_opt, *fuse_opt,
      *threads_opt;
};

// What to train: an example, or a program with its data, and how its rows
// are read.
void AddJobOptions(CLI::App* t, TrainOptions* o, TrainFlags* f) {
  o->data_dir = PAREX_DEFAULT_DATA_DIR;
  o->fashion_dir = parex::kFashionMnistDir;
  t->add_option("--model", o->model,
                "fit_a_line, digits_mlp, fashion_mlp or fashion_cnn")
      ->capture_default_str();
  t->add_option("--program", o->program,
                "train your own Paddle program instead: main.pdmodel, or a "
                "directory with "
                "main.pdmodel (and startup.pdmodel)");
  t->add_option("--startup", o->startup,
                "--program's startup program (initialises it)");
  t->add_option(
      "--params", o->params,
      "--program's persistables from a directory of Paddle tensor files "
      "(after --startup, if given)");
  t->add_option(
      "--data", o->data,
      "NAME=FILE.npy per variable --program reads (rows along dim 0), a "
      "directory of NAME.npy files, or a FILE.npz holding one array per "
      "variable");
  t->add_option(
      "--loss", o->loss,
      "--program's loss variable (default: the op marked as the loss)");
  t->add_option(
      "--eval-data", o->eval_data,
      "NAME=FILE.npy (or a directory or .npz as for --data) per variable of "
      "--program's evaluation set, run after each "
      "epoch on the trained parameters (mean loss, and accuracy when it has "
      "one)");
  t->add_option("--fetch", o->fetch,
                "--program's variables to report each step (mean over "
                "elements and places)");
  t->add_option("--lr-schedule", o->lr_schedule,
                "--program's learning rate per step: constant:LR, "
                "piecewise:B1,..:V0,V1,.., "
                "exponential:LR,GAMMA, cosine:LR,T_MAX[,ETA_MIN], "
                "warmup:STEPS,START,END[:INNER]");
  t->add_flag("--no-shuffle", f->no_shuffle,
              "the rows in file order every epoch");
  t->add_flag("--sync-batch-norm", f->sync_batch_norm,
              "batch norm statistics over every place's rows (and every "
              "node's), so the "
              "places train as one place with the whole batch");
  t->add_flag("--no-channels-last", f->no_channels_last,
              "keep convolutions channels-first (NCHW) on CPU places; by "
              "default a program's convolutions, the batch norms, pools and "
              "element-wise ops between them and their gradients run "
              "channels-last (NHWC), as oneDNN reads them without reordering");
  t->add_option("--max-staleness", o->max_staleness,
                "parameter servers: 0 trains in sync mode; K >= 1 in async "
                "mode, each step on the parameters of K steps before (no "
                "wait for the pservers' answer)")
      ->capture_default_str();
  t->add_flag("--no-cuda-graphs", f->no_cuda_graphs,
              "cuda places: run every step on the actors instead of "
              "replaying it as one CUDA graph after two warm-up steps");
}

void AddCheckpointOptions(CLI::App* t, TrainOptions* o) {
  t->add_option(
      "--checkpoint-dir", o->checkpoint_dir,
      "write checkpoints here (every persistable in Paddle's tensor files "
      "and "
      "where training stood): at the end, on SIGINT/SIGTERM, and every "
      "--checkpoint-every steps");
  t->add_option(
       "--checkpoint-every", o->checkpoint_every,
       "steps between checkpoints (0: only at the end and when stopped)")
      ->capture_default_str();
  t->add_option("--keep", o->keep, "checkpoints kept, newest first")
      ->capture_default_str();
  t->add_option(
      "--resume", o->resume,
      "continue from the newest complete checkpoint in this directory");
}

// How long, with what batches, and how the places run.
void AddRunOptions(CLI::App* t, TrainOptions* o, TrainFlags* f) {
  f->epochs_opt = t->add_option("--epochs", f->epochs,
                                "epochs, >= 1 (default: the model's)");
  f->batch_opt =
      t->add_option("--batch", f->batch,
                    "global batch size, >= the places (default: the model's)");
  f->lr_opt = t->add_option(
      "--lr", f->lr, "learning rate, finite and > 0 (default: the model's)");
  f->steps_opt =
      t->add_option("--steps", f->steps, "stop after this many steps in all");
  f->fuse_opt =
      t->add_option("--fuse-buckets", f->fuse,
                    "pack all-reduces into buckets of at most BYTES (0: off; "
                    "default: off in one process, 1 MiB across nodes)");
  f->threads_opt =
      t->add_option("--threads", f->threads,
                    "scheduler workers, >= 1 (default: this machine's cores; "
                    "parex launch shares them among its nodes)");
  t->add_option("--mode", o->mode, "gradient exchange: allreduce or reduce")
      ->capture_default_str();
  t->add_option("--seed", o->seed, "seed of initialisers and shuffling")
      ->capture_default_str();
}

// What the run writes, and where the examples' data is.
void AddOutputOptions(CLI::App* t, TrainOptions* o, TrainFlags* f) {
  t->add_option(
      "--trace", o->trace,
      "write a Chrome trace (Perfetto, chrome://tracing) of the first steps");
  t->add_option("--trace-steps", o->trace_steps, "steps the trace records")
      ->capture_default_str();
  t->add_option(
       "--trace-from", o->trace_from,
       "the first step the trace records (0: from the start; later steps "
       "leave out the warm-up: first-use Gloo contexts, allocations)")
      ->capture_default_str();
  t->add_option("--metrics", o->metrics,
                "write one JSON line per step (step, epoch, loss, accuracy, "
                "samples/s)");
  t->add_option(
      "--save", o->save,
      "directory for the trained inference model (default: parex-MODEL)");
  t->add_option("--save-programs", o->save_programs,
                "write the training programs here before training "
                "(main.pdmodel, startup.pdmodel: Paddle's format)");
  t->add_option("--data-dir", o->data_dir, "UCI housing and digits CSVs")
      ->capture_default_str();
  t->add_option("--fashion-dir", o->fashion_dir, "Fashion-MNIST idx files")
      ->capture_default_str();
  t->add_flag("--no-progress", f->no_progress,
              "plain log lines even on a terminal");
}

void AddTrainOptions(CLI::App* t, TrainOptions* o, TrainFlags* f) {
  AddJobOptions(t, o, f);
  AddCheckpointOptions(t, o);
  AddRunOptions(t, o, f);
  AddOutputOptions(t, o, f);
}

void ApplyFlags(TrainOptions* o, const TrainFlags& f) {
  o->progress = !f.no_progress;
  o->shuffle = !f.no_shuffle;
  o->sync_batch_norm = f.sync_batch_norm;
  o->channels_last = !f.no_channels_last;
  o->cuda_graphs = !f.no_cuda_graphs;
  if (f.epochs_opt->count() > 0) o->epochs = f.epochs;
  if (f.batch_opt->count() > 0) o->batch = f.batch;
  if (f.lr_opt->count() > 0) o->lr = f.lr;
  if (f.steps_opt->count() > 0) o->steps = f.steps;
  if (f.fuse_opt->count() > 0) o->fuse_bucket_bytes = f.fuse;
  if (f.threads_opt->count() > 0) o->threads = f.threads;
}

// Every subcommand's options, and its CLI11 app (set once registered).
struct Commands {
  TrainOptions train, node;
  TrainFlags train_flags, node_flags;
  LaunchOptions launch;
  InferOptions infer;
  std::string inspect_path, inspect_params;
  GraphOptions graph;
  TraceMergeOptions merge;
  std::string secret_path;
  bool secret_force = false;
  PlotOptions plot;
  PlaceOptions place;
  CLI::App *train_app = nullptr, *node_app = nullptr, *launch_app = nullptr,
           *infer_app = nullptr, *inspect_app = nullptr, *trace_app = nullptr,
           *secret_app = nullptr, *plot_app = nullptr, *place_app = nullptr;
};

// parex train: the training options, and the places.
void AddTrain(CLI::App* app, Commands* c) {
  CLI::App* t = c->train_app =
      app->add_subcommand("train",
                          "train an example model (default: the "
                          "digits MLP on 2 CPU places) or your own "
                          "Paddle program (--program)");
  AddTrainOptions(t, &c->train, &c->train_flags);
  t->add_option("--places", c->train.places,
                "places to split each batch over: cpu:N, cpu:0-3, cpu:all, "
                "sim:N (simulated asynchronous devices), cuda:0, cuda:0,2, "
                "cuda:all, cuda:0x2 (2 places on device 0); "
                "docs/training.md#places")
      ->capture_default_str();
}

// parex node: the topology and the node, and the training options.
void AddNode(CLI::App* app, Commands* c) {
  CLI::App* nd = c->node_app = app->add_subcommand(
      "node", "train as one node of a cluster described by a topology file");
  nd->add_option("--topology", c->node.topology,
                 "the cluster's topology file (text protobuf)")
      ->required();
  nd->add_option("--node", c->node.node,
                 "this node's name in the topology (under mpirun with a "
                 "topology of collective MPI: the node of the process's rank "
                 "when left out)");
  AddTrainOptions(nd, &c->node, &c->node_flags);
  nd->footer(
      "The places are the node's in the topology; the global --batch is split "
      "over "
      "the places of all nodes. --save and --metrics are written by rank 0; "
      "{node} in a path becomes the node's name.");
}

// parex launch: the topology, which nodes; the rest goes to every node.
void AddLaunch(CLI::App* app, Commands* c) {
  CLI::App* la = c->launch_app = app->add_subcommand(
      "launch",
      "start every node of a topology on this machine (parex node each), "
      "output prefixed by node; a topology of collective MPI through "
      "mpirun");
  la->add_option("--topology", c->launch.topology,
                 "the cluster's topology file")
      ->required();
  la->add_option("--only", c->launch.only,
                 "start only these nodes (default: every local one)");
  la->add_flag("--no-pin", c->launch.no_pin,
               "do not pin each node to its share of this machine's cores");
  la->fallthrough(false);
  la->prefix_command();
  la->footer(
      "Other options go to every node: parex launch --topology two.pbtxt "
      "--model fashion_mlp --epochs 1");
}

// parex infer: a saved inference program on .npy inputs.
void AddInfer(CLI::App* app, Commands* c) {
  CLI::App* i = c->infer_app = app->add_subcommand(
      "infer", "run a saved inference program on .npy inputs");
  i->add_option("--model", c->infer.model,
                "model directory (__model__ or *.pdmodel) or program file")
      ->required();
  i->add_option("--params", c->infer.params,
                "combined parameter file (*.pdiparams)");
  i->add_option("--input", c->infer.inputs, "NAME=FILE.npy, one per feed")
      ->required();
  i->add_option("--output", c->infer.output,
                "directory for the outputs as NAME.npy");
  i->add_option("--places", c->infer.places,
                "places to split the batch over: cpu:N, cpu:all, sim:N, "
                "cuda:0, cuda:all, cuda:0x2 (as train's --places)")
      ->capture_default_str();
  i->add_option("--trace", c->infer.trace,
                "write a Chrome trace of the first run (or of the runs "
                "--trace-from and --trace-runs name)");
  i->add_option("--trace-from", c->infer.trace_from,
                "the first run the trace records: 0 is the first run, "
                "1..N --bench's (a steady-state trace leaves out the first "
                "run's preparation)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  i->add_option("--trace-runs", c->infer.trace_runs,
                "how many runs the trace records")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  i->add_option("--bench", c->infer.bench,
                "after the first run, N timed runs of the same batch: median "
                "and p99 latency, rows/s, peak memory")
      ->check(CLI::Range(1, 1000000));
  i->add_option("--chunk-rows", c->infer.chunk_rows,
                "rows per place each run takes of a larger batch, so that "
                "activations stay in cache (0: the whole batch at once); a "
                "program that mixes rows runs whole")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  i->add_flag("!--no-fuse", c->infer.fuse,
              "run the program as saved: no batch norm, residual add or "
              "activation fused into the convolutions before it, no "
              "identity (scale by 1, test-time dropout) dropped, no "
              "channels-last rewrite (CPU places fuse by default)");
}

// parex inspect: what a program holds.
void AddInspect(CLI::App* app, Commands* c) {
  CLI::App* s = c->inspect_app = app->add_subcommand(
      "inspect",
      "what a program holds: version, feeds, fetches, ops, parameters");
  s->add_option("path", c->inspect_path, "program file or model directory")
      ->required();
  s->add_option("--params", c->inspect_params, "combined parameter file");
}

// parex graph: the SSA graph of a program (the default subcommand's
// options when no other was given).
void AddGraph(CLI::App* app, Commands* c) {
  CLI::App* g = app->add_subcommand(
      "graph", "the SSA graph of a program after the passes");
  g->add_option("file", c->graph.file, "program file or model directory");
  g->add_option("--model", c->graph.model,
                "an example's training program instead");
  g->add_option("--places", c->graph.places,
                "places, as train's --places (cuda places are drawn too)")
      ->capture_default_str();
  g->add_option("--mode", c->graph.mode, "allreduce or reduce")
      ->capture_default_str();
  g->add_option("--loss", c->graph.loss,
                "a training program's loss variable (default: the one marked "
                "as the loss)");
  g->add_option("--format", c->graph.format, "dot or json (default: from -o)");
  g->add_option("-o,--output", c->graph.output, "output file")->required();
  g->add_option("--node", c->graph.node,
                "draw this node's part of the program placed for "
                "parameter-server training (with --topology)");
  g->add_option("--topology", c->graph.topology,
                "the cluster of --node (trainer and pserver nodes)");
}

// parex place: a training program placed for parameter-server training.
void AddPlace(CLI::App* app, Commands* c) {
  CLI::App* pl = c->place_app = app->add_subcommand(
      "place",
      "place a training program's ops and variables on a topology's trainers "
      "and pservers (one program for every role)");
  pl->add_option("file", c->place.file, "training program file")->required();
  pl->add_option("--topology", c->place.topology,
                 "the cluster: trainer and pserver (role: PSERVER) nodes")
      ->required();
  pl->add_option("-o,--output", c->place.output, "the placed program")
      ->required();
}

// parex trace merge: the nodes' traces on one timeline.
void AddTraceMerge(CLI::App* app, Commands* c) {
  CLI::App* tr = c->trace_app =
      app->add_subcommand("trace", "work on traces: merge the nodes' traces");
  tr->require_subcommand(1);
  CLI::App* tm = tr->add_subcommand("merge",
                                    "one timeline of a cluster's node traces, "
                                    "clocks aligned (a process per node)");
  tm->add_option("traces", c->merge.inputs,
                 "the nodes' traces (parex node/launch --trace)")
      ->required()
      ->check(CLI::ExistingFile);
  tm->add_option("-o,--output", c->merge.output, "the merged trace")
      ->required();
}

// parex secret: a new cluster secret.
void AddSecret(CLI::App* app, Commands* c) {
  CLI::App* se = c->secret_app = app->add_subcommand(
      "secret",
      "write a new cluster secret (for a topology's secret_file), mode 0600");
  se->add_option("file", c->secret_path, "where to write it")->required();
  se->add_flag("--force", c->secret_force, "replace an existing file");
}

// parex plot: the curves of a --metrics file.
void AddPlot(CLI::App* app, Commands* c) {
  CLI::App* pl = c->plot_app =
      app->add_subcommand("plot",
                          "draw the loss and accuracy curves of a "
                          "--metrics file (gnuplot: SVG or PNG)");
  pl->add_option("metrics", c->plot.metrics, "a --metrics file (JSON lines)")
      ->required()
      ->check(CLI::ExistingFile);
  pl->add_option("-o,--output", c->plot.output,
                 "the picture: curve.svg or curve.png")
      ->required();
  pl->add_option("--title", c->plot.title,
                 "the picture's title (default: the file's name)");
}

// Runs the subcommand CLI11 parsed.
int Dispatch(Commands* c, const char* argv0) {
  ApplyFlags(&c->train, c->train_flags);
  ApplyFlags(&c->node, c->node_flags);
  if (*c->train_app) return RunTrain(c->train);
  if (*c->node_app) return RunNode(c->node);
  if (*c->launch_app) {
    c->launch.args = c->launch_app->remaining();
    c->launch.parex = SelfExecutable(argv0);
    return RunLaunch(c->launch);
  }
  if (*c->infer_app) return RunInfer(c->infer);
  if (*c->inspect_app) return RunInspect(c->inspect_path, c->inspect_params);
  if (*c->trace_app) return RunTraceMerge(c->merge);
  if (*c->plot_app) return RunPlot(c->plot);
  if (*c->secret_app) return RunSecret(c->secret_path, c->secret_force);
  if (*c->place_app) return RunPlace(c->place);
  return RunGraph(c->graph);
}

// A first argument that is neither an option nor a subcommand: the error
// line, true.
bool UnknownCommand(const CLI::App& app, const std::string& first) {
  if (!first.empty() && first[0] == '-') return false;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == first) return false;
  }
  std::fprintf(stderr,
               "parex: unknown command '%s' (commands: train, node, launch, "
               "infer, inspect, graph, trace, plot, secret; see parex "
               "--help)\n",
               first.c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef PAREX_WITH_CUDA
  // cuda places: kernels, allocator, device contexts, the visible devices;
  // NCCL between GPUs; loaded when a place list first names cuda.
  parex::InstallCudaLoader();
#endif
  CLI::App app{
      "parex: a data-parallel executor for Paddle Fluid programs, on CAF "
      "actors.\n"
      "Trains, runs and inspects programs on N CPU places."};
  app.name("parex");
  app.require_subcommand(1);
  app.fallthrough();  // parex train -v works as well as parex -v train
  int verbose = 0;
  app.add_flag(
      "-v,--verbose", verbose,
      "log more (-v info, -vv debug); PAREX_LOG_LEVEL sets the level too");
  Commands c;
  AddTrain(&app, &c);
  AddNode(&app, &c);
  AddLaunch(&app, &c);
  AddInfer(&app, &c);
  AddInspect(&app, &c);
  AddGraph(&app, &c);
  AddTraceMerge(&app, &c);
  AddSecret(&app, &c);
  AddPlot(&app, &c);
  AddPlace(&app, &c);
  if (argc < 2) {
    std::fprintf(stderr, "%s", app.help().c_str());
    return kExitUsage;
  }
  if (UnknownCommand(app, argv[1])) return kExitUsage;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error and a hint
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (verbose > 0) parex::SetLogLevel(verbose > 1 ? "debug" : "info");
  return Dispatch(&c, argv[0]);
}
