// parex: the command line (issue 6). `parex --help` lists the subcommands;
// apps/cli/ implements them.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "apps/cli/cli.h"
#include "apps/datasets.h"
#include "base/logging.h"

namespace {

// This executable's path, for launch's children.
std::string SelfExecutable(const char* argv0) {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) return std::string(buf, static_cast<size_t>(n));
  return argv0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace parex::cli;
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

  // The training options `train` and `node` share.
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
    CLI::Option *epochs_opt, *batch_opt, *lr_opt, *steps_opt, *fuse_opt,
        *threads_opt;
  };
  auto add_train_options = [](CLI::App* t, TrainOptions* o, TrainFlags* f) {
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
    f->epochs_opt = t->add_option("--epochs", f->epochs,
                                  "epochs, >= 1 (default: the model's)");
    f->batch_opt = t->add_option(
        "--batch", f->batch,
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
    t->add_option("--data-dir", o->data_dir, "UCI housing and digits CSVs")
        ->capture_default_str();
    t->add_option("--fashion-dir", o->fashion_dir, "Fashion-MNIST idx files")
        ->capture_default_str();
    t->add_flag("--no-progress", f->no_progress,
                "plain log lines even on a terminal");
  };
  auto apply_flags = [](TrainOptions* o, const TrainFlags& f) {
    o->progress = !f.no_progress;
    o->shuffle = !f.no_shuffle;
    o->sync_batch_norm = f.sync_batch_norm;
    if (f.epochs_opt->count() > 0) o->epochs = f.epochs;
    if (f.batch_opt->count() > 0) o->batch = f.batch;
    if (f.lr_opt->count() > 0) o->lr = f.lr;
    if (f.steps_opt->count() > 0) o->steps = f.steps;
    if (f.fuse_opt->count() > 0) o->fuse_bucket_bytes = f.fuse;
    if (f.threads_opt->count() > 0) o->threads = f.threads;
  };

  TrainOptions train;
  TrainFlags train_flags;
  CLI::App* t = app.add_subcommand("train",
                                   "train an example model (default: the "
                                   "digits MLP on 2 CPU places) or your own "
                                   "Paddle program (--program)");
  add_train_options(t, &train, &train_flags);
  t->add_option("--places", train.places,
                "cpu:N places to split each batch over (sim:N: simulated "
                "asynchronous devices)")
      ->capture_default_str();

  TrainOptions node;
  TrainFlags node_flags;
  CLI::App* nd = app.add_subcommand(
      "node", "train as one node of a cluster described by a topology file");
  nd->add_option("--topology", node.topology,
                 "the cluster's topology file (text protobuf)")
      ->required();
  nd->add_option("--node", node.node, "this node's name in the topology")
      ->required();
  add_train_options(nd, &node, &node_flags);
  nd->footer(
      "The places are the node's in the topology; the global --batch is split "
      "over "
      "the places of all nodes. --save and --metrics are written by rank 0; "
      "{node} in a path becomes the node's name.");

  LaunchOptions launch;
  CLI::App* la = app.add_subcommand(
      "launch",
      "start every node of a topology on this machine (parex node each), "
      "output prefixed by node");
  la->add_option("--topology", launch.topology, "the cluster's topology file")
      ->required();
  la->add_option("--only", launch.only,
                 "start only these nodes (default: every local one)");
  la->add_flag("--no-pin", launch.no_pin,
               "do not pin each node to its share of this machine's cores");
  la->fallthrough(false);
  la->prefix_command();
  la->footer(
      "Other options go to every node: parex launch --topology two.pbtxt "
      "--model fashion_mlp --epochs 1");

  InferOptions infer;
  CLI::App* i = app.add_subcommand(
      "infer", "run a saved inference program on .npy inputs");
  i->add_option("--model", infer.model,
                "model directory (__model__ or *.pdmodel) or program file")
      ->required();
  i->add_option("--params", infer.params,
                "combined parameter file (*.pdiparams)");
  i->add_option("--input", infer.inputs, "NAME=FILE.npy, one per feed")
      ->required();
  i->add_option("--output", infer.output,
                "directory for the outputs as NAME.npy");
  i->add_option("--places", infer.places,
                "cpu:N places to split the batch over (sim:N: simulated "
                "asynchronous devices)")
      ->capture_default_str();
  i->add_option("--trace", infer.trace, "write a Chrome trace of the run");

  std::string inspect_path, inspect_params;
  CLI::App* s = app.add_subcommand(
      "inspect",
      "what a program holds: version, feeds, fetches, ops, parameters");
  s->add_option("path", inspect_path, "program file or model directory")
      ->required();
  s->add_option("--params", inspect_params, "combined parameter file");

  GraphOptions graph;
  CLI::App* g = app.add_subcommand(
      "graph", "the SSA graph of a program after the passes");
  g->add_option("file", graph.file, "program file or model directory");
  g->add_option("--model", graph.model,
                "an example's training program instead");
  g->add_option("--places", graph.places, "cpu:N places")
      ->capture_default_str();
  g->add_option("--mode", graph.mode, "allreduce or reduce")
      ->capture_default_str();
  g->add_option("--loss", graph.loss,
                "a training program's loss variable (default: the one marked "
                "as the loss)");
  g->add_option("--format", graph.format, "dot or json (default: from -o)");
  g->add_option("-o,--output", graph.output, "output file")->required();

  TraceMergeOptions merge;
  CLI::App* tr =
      app.add_subcommand("trace", "work on traces: merge the nodes' traces");
  tr->require_subcommand(1);
  CLI::App* tm = tr->add_subcommand("merge",
                                    "one timeline of a cluster's node traces, "
                                    "clocks aligned (a process per node)");
  tm->add_option("traces", merge.inputs,
                 "the nodes' traces (parex node/launch --trace)")
      ->required()
      ->check(CLI::ExistingFile);
  tm->add_option("-o,--output", merge.output, "the merged trace")->required();

  std::string secret_path;
  bool secret_force = false;
  CLI::App* se = app.add_subcommand(
      "secret",
      "write a new cluster secret (for a topology's secret_file), mode 0600");
  se->add_option("file", secret_path, "where to write it")->required();
  se->add_flag("--force", secret_force, "replace an existing file");

  PlotOptions plot;
  CLI::App* pl = app.add_subcommand("plot",
                                    "draw the loss and accuracy curves of a "
                                    "--metrics file (gnuplot: SVG or PNG)");
  pl->add_option("metrics", plot.metrics, "a --metrics file (JSON lines)")
      ->required()
      ->check(CLI::ExistingFile);
  pl->add_option("-o,--output", plot.output,
                 "the picture: curve.svg or curve.png")
      ->required();
  pl->add_option("--title", plot.title,
                 "the picture's title (default: the file's name)");

  if (argc < 2) {
    std::fprintf(stderr, "%s", app.help().c_str());
    return kExitUsage;
  }
  const std::string first = argv[1];
  if (first.empty() || first[0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({}))
      known = known || sub->get_name() == first;
    if (!known) {
      std::fprintf(
          stderr,
          "parex: unknown command '%s' (commands: train, node, launch, infer, "
          "inspect, graph, trace, plot, secret; see parex --help)\n",
          first.c_str());
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, or the error and a hint
    return code == 0 ? kExitOk : kExitUsage;
  }
  if (verbose > 0) parex::SetLogLevel(verbose > 1 ? "debug" : "info");
  apply_flags(&train, train_flags);
  apply_flags(&node, node_flags);
  if (*t) return RunTrain(train);
  if (*nd) return RunNode(node);
  if (*la) {
    launch.args = la->remaining();
    launch.parex = SelfExecutable(argv[0]);
    return RunLaunch(launch);
  }
  if (*i) return RunInfer(infer);
  if (*s) return RunInspect(inspect_path, inspect_params);
  if (*tr) return RunTraceMerge(merge);
  if (*pl) return RunPlot(plot);
  if (*se) return RunSecret(secret_path, secret_force);
  return RunGraph(graph);
}
