// The example models parex trains: their programs are graph/builder/examples.h
// (apps/train/ trains them); here, the data they train on and
// ExampleInference, what a trained one predicts, scores and saves.
#pragma once

#include <cstdint>
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

struct Evaluation {
  int64_t rows = 0;
  double mse = 0;       // regression: mean squared error of the prediction
  double accuracy = 0;  // classifiers: share of rows whose argmax is the label
};

// A trained example as an inference model, run with a ReferenceExecutor on
// the persistables of a scope: its predictions, its test metric, and the
// inference model written out. The model and the scope must outlive it.
// Not thread-safe.
class ExampleInference {
 public:
  ExampleInference(const ExampleProgram* model, Scope* scope)
      : model_(model), scope_(scope) {}

  // Predictions on (x, y) in batches through the pruned inference program
  // (batch_norm on its running statistics), then MSE or accuracy.
  StatusOr<Evaluation> Evaluate(const Tensor& x, const Tensor& y,
                                int64_t batch_size = 500);
  // The prediction for x (one run).
  StatusOr<Tensor> Predict(const Tensor& x);
  // The inference model: input -> prediction (kernels/io/model_io.h).
  Status SaveInferenceModel(const std::string& dir) const;

 private:
  StatusOr<const Program*> TestProgram();

  const ExampleProgram* model_;
  Scope* scope_;
  ReferenceExecutor executor_;
  std::optional<Program> test_program_;
};

// A copy of a fp32 or fp64 CPU tensor as `dtype` (fp32 or fp64); other
// dtypes are shared unchanged. Feeds fp32 data to fp64 examples.
Tensor CastFloating(const Tensor& t, DType dtype);

}  // namespace parex
