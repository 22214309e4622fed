// parex: the command line (issue 6). `parex --help` lists the subcommands;
// apps/cli/ implements them.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "apps/cli/cli.h"
#include "apps/datasets.h"
#include "base/logging.h"

int main(int argc, char** argv) {
  using namespace parex::cli;
  CLI::App app{
      "parex: a data-parallel executor for Paddle Fluid programs, on CAF actors.\n"
      "Trains, runs and inspects programs on N CPU places."};
  app.name("parex");
  app.require_subcommand(1);
  app.fallthrough();  // parex train -v works as well as parex -v train
  int verbose = 0;
  app.add_flag("-v,--verbose", verbose,
               "log more (-v info, -vv debug); PAREX_LOG_LEVEL sets the level too");

  TrainOptions train;
  train.data_dir = PAREX_DEFAULT_DATA_DIR;
  train.fashion_dir = parex::kFashionMnistDir;
  CLI::App* t = app.add_subcommand(
      "train", "train an example model (default: the digits MLP on 2 CPU places)");
  t->add_option("--model", train.model, "fit_a_line, digits_mlp, fashion_mlp or fashion_cnn")
      ->capture_default_str();
  t->add_option("--places", train.places, "cpu:N places to split each batch over (sim:N: simulated asynchronous devices)")
      ->capture_default_str();
  int epochs = 0;
  int64_t batch = 0;
  double lr = 0;
  CLI::Option* epochs_opt =
      t->add_option("--epochs", epochs, "epochs, >= 1 (default: the model's)");
  CLI::Option* batch_opt = t->add_option(
      "--batch", batch, "global batch size, >= the places (default: the model's)");
  CLI::Option* lr_opt =
      t->add_option("--lr", lr, "learning rate, finite and > 0 (default: the model's)");
  t->add_option("--mode", train.mode, "gradient exchange: allreduce or reduce")
      ->capture_default_str();
  t->add_option("--seed", train.seed, "seed of initialisers and shuffling")
      ->capture_default_str();
  t->add_option("--trace", train.trace,
                "write a Chrome trace (Perfetto, chrome://tracing) of the first steps");
  t->add_option("--trace-steps", train.trace_steps, "steps the trace records")
      ->capture_default_str();
  t->add_option("--save", train.save,
                "directory for the trained inference model (default: parex-MODEL)");
  t->add_option("--data-dir", train.data_dir, "UCI housing and digits CSVs")
      ->capture_default_str();
  t->add_option("--fashion-dir", train.fashion_dir, "Fashion-MNIST idx files")
      ->capture_default_str();
  bool no_progress = false;
  t->add_flag("--no-progress", no_progress, "plain log lines even on a terminal");

  InferOptions infer;
  CLI::App* i = app.add_subcommand("infer", "run a saved inference program on .npy inputs");
  i->add_option("--model", infer.model,
                "model directory (__model__ or *.pdmodel) or program file")
      ->required();
  i->add_option("--params", infer.params, "combined parameter file (*.pdiparams)");
  i->add_option("--input", infer.inputs, "NAME=FILE.npy, one per feed")->required();
  i->add_option("--output", infer.output, "directory for the outputs as NAME.npy");
  i->add_option("--places", infer.places, "cpu:N places to split the batch over (sim:N: simulated asynchronous devices)")
      ->capture_default_str();
  i->add_option("--trace", infer.trace, "write a Chrome trace of the run");

  std::string inspect_path, inspect_params;
  CLI::App* s = app.add_subcommand(
      "inspect", "what a program holds: version, feeds, fetches, ops, parameters");
  s->add_option("path", inspect_path, "program file or model directory")->required();
  s->add_option("--params", inspect_params, "combined parameter file");

  GraphOptions graph;
  CLI::App* g = app.add_subcommand("graph", "the SSA graph of a program after the passes");
  g->add_option("file", graph.file, "program file or model directory");
  g->add_option("--model", graph.model, "an example's training program instead");
  g->add_option("--places", graph.places, "cpu:N places")->capture_default_str();
  g->add_option("--mode", graph.mode, "allreduce or reduce")->capture_default_str();
  g->add_option("--format", graph.format, "dot or json (default: from -o)");
  g->add_option("-o,--output", graph.output, "output file")->required();

  if (argc < 2) {
    std::fprintf(stderr, "%s", app.help().c_str());
    return kExitUsage;
  }
  const std::string first = argv[1];
  if (first.empty() || first[0] != '-') {
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == first;
    if (!known) {
      std::fprintf(stderr,
                   "parex: unknown command '%s' (commands: train, infer, inspect, "
                   "graph; see parex --help)\n",
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
  train.progress = !no_progress;
  if (epochs_opt->count() > 0) train.epochs = epochs;
  if (batch_opt->count() > 0) train.batch = batch;
  if (lr_opt->count() > 0) train.lr = lr;
  if (*t) return RunTrain(train);
  if (*i) return RunInfer(infer);
  if (*s) return RunInspect(inspect_path, inspect_params);
  return RunGraph(graph);
}
