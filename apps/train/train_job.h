// What `parex train` / `parex node` train: one of the built-in examples
// (--model, ExampleJob here) or a user's own Paddle program and data
// (--program, --data: apps/cli/program_job.h reads those files).
// TrainSession runs either the same way; a TrainJob says what differs: the
// programs, the loss and metrics, the rows per feed, how the persistables
// start and what is written at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "actors/executor/parallel_executor.h"
#include "apps/train/train_options.h"
#include "graph/ir/program.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex::train {

struct TrainJob {
  std::string
      title;  // the first line's subject: "fashion_mlp", "program 'p.pdmodel'"
  Program main, startup;
  std::string loss;
  std::string accuracy;  // an accuracy op's output, "" when none
  // Trainable parameters (sorted): what the parameter digest covers.
  std::vector<std::string> params;
  // Training rows, one column per fed variable; the first's dim 0 counts them.
  std::vector<std::pair<std::string, Tensor>> columns;
  // An evaluation set (--eval-data) and the forward program that evaluates
  // it (loss and accuracy, is_test); empty without one.
  std::vector<std::pair<std::string, Tensor>> eval_columns;
  Program eval_program;
  // More variables reported each step (--fetch).
  std::vector<std::string> fetches;
  int default_epochs = 1;
  int64_t default_batch = 32;
  std::string default_save;  // --save's default
  // What a cluster's nodes must agree on beyond the programs and the common
  // options (the example, or the fed variables and their rows).
  std::string identity;
  // --lr-schedule: the persistable learning-rate variables it sets on every
  // place before each step, and the rate of step s (0-based); empty / null
  // without one.
  std::vector<std::string> lr_vars;
  std::function<double(int64_t step)> lr_at;
  // Without --lr-schedule: the optimizers' learning-rate variables that no
  // op of the program writes (a Paddle 2.x LRScheduler runs outside the
  // program, so its saved program keeps the first rate); the header names
  // each with its value at start and points to --lr-schedule.
  std::vector<std::string> fixed_lr_vars;
  // Sets the persistables of `scope` before training (startup program,
  // parameter files), but those in `skip` (a trainer's prefetched tables,
  // which live on the pservers only): the startup ops that make only them
  // do not run.
  std::function<Status(Scope* scope, const std::vector<std::string>& skip)>
      init;
  // After training, with the trained persistables in `scope`: evaluation
  // lines to print (may be empty), and when `writer` the model written to
  // `save` and the line saying so.
  struct Finished {
    std::string report;  // printed before the timing lines
    std::string saved;   // printed last, by the writer
  };
  std::function<StatusOr<Finished>(Scope* scope, bool writer,
                                   const std::string& save)>
      finish;
};

// Runs `job`'s evaluation set through `eval` (an executor of
// job.eval_program on `places` places, sharing the trained parameters) in
// batches of `batch`: the mean loss (and accuracy, when job.accuracy is
// set) over the rows, each place's value weighted by its rows. Batches
// smaller than the places are left out.
struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t rows = 0;
};
StatusOr<EvalResult> EvaluateJob(const TrainJob& job, ParallelExecutor* eval,
                                 int places, int64_t batch);

// The example `o.model` (its program built with o.seed and o.lr, its data
// read from o.data_dir / o.fashion_dir). Usage errors (an unknown model)
// come back as InvalidArgument with *usage set.
StatusOr<TrainJob> ExampleJob(const TrainOptions& o, bool* usage);

// --save-programs: `job`'s main and startup programs as DIR/main.pdmodel
// and DIR/startup.pdmodel (Paddle's binary format), DIR created.
Status SavePrograms(const TrainJob& job, const std::string& dir);

}  // namespace parex::train
