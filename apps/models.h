// The example models parex trains: their programs are graph/builder/examples.h;
// here, the data they train on and Trainer, the loop that trains and
// evaluates them with the reference executor.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "apps/reader.h"
#include "base/status.h"
#include "graph/builder/backward.h"
#include "graph/builder/examples.h"
#include "graph/ir/program.h"
#include "kernels/example_feed.h"
#include "kernels/reference_executor.h"
#include "kernels/scope.h"

namespace parex {

// The rows an example trains and is tested on, ready to feed in fp32:
//   fit_a_line   LoadUciHousing(data_dir/boston_house_prices.csv): 404 / 102.
//   digits_mlp   LoadDigits(data_dir/digits.csv.gz), the 1437 training
//                images with their eight one-pixel shifts (AddShiftedCopies:
//                12933 rows), every pixel standardised with the statistics
//                of those rows (StandardizeFeatures); the last 360 test.
//   fashion_*    LoadFashionMnist(fashion_dir): 60000 / 10000.
struct ExampleData {
  Tensor train_x, train_y, test_x, test_y;
};
StatusOr<ExampleData> LoadExampleData(ExampleKind kind,
                                      const std::string& data_dir,
                                      const std::string& fashion_dir);

struct EpochSummary {
  int64_t epoch = 0;
  int64_t steps = 0;         // steps run in this epoch by this call
  double mean_loss = 0;      // over those steps
  double mean_accuracy = 0;  // over those steps (classifiers)
  double seconds = 0;
};

struct Evaluation {
  int64_t rows = 0;
  double mse = 0;       // regression: mean squared error of the prediction
  double accuracy = 0;  // classifiers: share of rows whose argmax is the label
};

// Where a training run stands: the next batch to run is batch `batch` of
// epoch `epoch`; `step` counts the steps run so far.
struct TrainerState {
  int64_t epoch = 0;
  int64_t batch = 0;
  int64_t step = 0;
};

// Trains an example with a ReferenceExecutor, step by step in the caller's
// thread. The scope holds the persistables; the model and the scope must
// outlive the trainer. Not thread-safe.
class Trainer {
 public:
  Trainer(const ExampleProgram* model, Scope* scope)
      : model_(model), scope_(scope) {}

  // Runs the startup program (initialises the persistables). Once, before
  // the first Train, unless LoadCheckpoint restored them.
  Status RunStartup();

  // Trains from the current state until epoch `epochs` is complete, or
  // after `max_steps` steps when max_steps >= 0. Returns each step's loss.
  // `on_epoch` runs after each completed epoch, when state() already points
  // at the next one (a checkpoint saved there resumes with it).
  // REQUIRES: the reader's columns are the model's input and label; the
  // same reader (rows, batch size, seed) across a checkpoint and its resume.
  StatusOr<std::vector<double>> Train(
      const BatchReader& reader, int64_t epochs, int64_t max_steps = -1,
      const std::function<void(const EpochSummary&)>& on_epoch = {});

  // Predictions on (x, y) in batches through the pruned inference program
  // (batch_norm on its running statistics), then MSE or accuracy.
  StatusOr<Evaluation> Evaluate(const Tensor& x, const Tensor& y,
                                int64_t batch_size = 500);
  // The prediction for x (one run).
  StatusOr<Tensor> Predict(const Tensor& x);

  // The model's persistables plus `trainer_state` (epoch, batch, step),
  // written last: a directory holding it is a complete checkpoint.
  Status SaveCheckpoint(const std::string& dir) const;
  // Restores what SaveCheckpoint wrote (no startup run needed).
  Status LoadCheckpoint(const std::string& dir);
  // The inference model: input -> prediction (kernels/io/model_io.h).
  Status SaveInferenceModel(const std::string& dir) const;

  const TrainerState& state() const { return state_; }

 private:
  StatusOr<const Program*> TestProgram();

  const ExampleProgram* model_;
  Scope* scope_;
  ReferenceExecutor executor_;
  TrainerState state_;
  std::optional<Program> test_program_;
};

// True when `dir` holds a complete checkpoint (its trainer_state).
bool HasCheckpoint(const std::string& dir);

// A copy of a fp32 or fp64 CPU tensor as `dtype` (fp32 or fp64); other
// dtypes are shared unchanged. Feeds fp32 data to fp64 examples.
Tensor CastFloating(const Tensor& t, DType dtype);

}  // namespace parex
