// fit_a_line: loads PaddlePaddle's saved fit_a_line inference model, runs it
// with the reference executor on the 102 UCI housing test rows and prints the
// first predictions and the test MSE.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "apps/datasets.h"
#include "kernels/io/model_io.h"
#include "kernels/reference_executor.h"

int main(int argc, char** argv) {
  CLI::App app{"Runs Paddle's fit_a_line model on the UCI housing test rows"};
  std::string model_dir = std::string(PAREX_DEFAULT_MODELS_DIR) + "/fit_a_line";
  std::string csv =
      std::string(PAREX_DEFAULT_DATA_DIR) + "/boston_house_prices.csv";
  app.add_option("--model", model_dir, "inference model directory")
      ->capture_default_str();
  app.add_option("--data", csv, "scikit-learn's boston_house_prices.csv")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  parex::Scope scope;
  auto model = parex::LoadInferenceModel(model_dir, &scope);
  if (!model.ok()) {
    std::fprintf(stderr, "fit_a_line: %s\n", model.status().ToString().c_str());
    return 1;
  }
  auto data = parex::LoadUciHousing(csv);
  if (!data.ok()) {
    std::fprintf(stderr, "fit_a_line: %s\n", data.status().ToString().c_str());
    return 1;
  }
  if (model->feed_names.size() != 1 || model->fetch_names.size() != 1) {
    std::fprintf(stderr, "fit_a_line: expected one feed and one fetch\n");
    return 1;
  }
  parex::ReferenceExecutor executor;
  auto out = executor.Run(model->program, &scope,
                          {{model->feed_names[0], data->test_x}},
                          {model->fetch_names[0]});
  if (!out.ok()) {
    std::fprintf(stderr, "fit_a_line: %s\n", out.status().ToString().c_str());
    return 1;
  }
  const parex::Tensor& pred = (*out)[0];
  const float* p = pred.data<float>();
  const float* y = data->test_y.data<float>();
  double mse = 0;
  for (int64_t i = 0; i < pred.numel(); ++i)
    mse += (p[i] - y[i]) * (p[i] - y[i]);
  mse /= pred.numel();
  std::printf("fit_a_line: %lld test rows, predictions[0:5] =",
              static_cast<long long>(pred.numel()));
  for (int i = 0; i < 5 && i < pred.numel(); ++i) std::printf(" %.4f", p[i]);
  std::printf("\nfit_a_line: test MSE = %.4f\n", mse);
  return 0;
}
