// The three programs PaddlePaddle saved (../shared/paddle_models) load and
// run unchanged in the reference executor and reproduce the reference
// outputs listed in that folder's README.
#include "tests/paddle_models.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "apps/datasets.h"
#include "kernels/io/model_io.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

const std::string& kModels = testing::PaddleModelsDir();
const std::string kData = PAREX_DATA_DIR;

TEST(PaddleModelsTest, FitALineReproducesTestMse) {
  PAREX_REQUIRE_PADDLE_MODELS();
  Scope scope;
  auto model = LoadInferenceModel(kModels + "/fit_a_line", &scope);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  ASSERT_EQ(model->feed_names, std::vector<std::string>{"x"});
  auto data = LoadUciHousing(kData + "/boston_house_prices.csv");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  ASSERT_EQ(data->test_x.dims(), (Dims{102, 13}));
  ReferenceExecutor executor;
  auto out = executor.Run(model->program, &scope, {{"x", data->test_x}},
                          model->fetch_names);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& pred = (*out)[0];
  ASSERT_EQ(pred.dims(), (Dims{102, 1}));
  const float expected[] = {13.5011f, 13.5695f, 13.6182f, 15.7586f, 14.3852f};
  for (int i = 0; i < 5; ++i)
    EXPECT_NEAR(pred.data<float>()[i], expected[i], 1e-3);
  double mse = 0;
  for (int i = 0; i < 102; ++i) {
    double d = pred.data<float>()[i] - data->test_y.data<float>()[i];
    mse += d * d;
  }
  EXPECT_NEAR(mse / 102, 16.4071, 1e-3);
}

TEST(PaddleModelsTest, MnistMlpReproducesProbabilities) {
  PAREX_REQUIRE_PADDLE_MODELS();
  Scope scope;
  auto model = LoadInferenceModel(kModels + "/mnist_mlp", &scope);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto images =
      ReadIdxImages(kModels + "/mnist_mlp/golden/images-64-idx3-ubyte");
  auto labels =
      ReadIdxLabels(kModels + "/mnist_mlp/golden/labels-64-idx1-ubyte");
  ASSERT_TRUE(images.ok()) << images.status().ToString();
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  Tensor x(DType::kFP32, {64, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = images->data<uint8_t>()[i] / 255.0f * 2.0f - 1.0f;
  }
  ReferenceExecutor executor;
  auto out = executor.Run(model->program, &scope, {{model->feed_names[0], x}},
                          model->fetch_names);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& prob = (*out)[0];
  ASSERT_EQ(prob.dims(), (Dims{64, 10}));

  const std::vector<std::vector<double>> golden =
      testing::ReadGoldenProbabilities(kModels +
                                       "/mnist_mlp/golden/probabilities.csv");
  ASSERT_GE(golden.size(), 64u);
  int row = 0, correct = 0;
  double worst = 0;
  for (; row < 64; ++row) {
    int argmax = 0;
    for (int c = 0; c < 10; ++c) {
      float p = prob.data<float>()[row * 10 + c];
      worst = std::max(worst, std::abs(p - golden[row][c]));
      if (p > prob.data<float>()[row * 10 + argmax]) argmax = c;
    }
    correct += argmax == labels->data<int64_t>()[row];
  }
  EXPECT_EQ(row, 64);
  EXPECT_LE(worst, 1e-4);
  EXPECT_EQ(correct, 63);
}

TEST(PaddleModelsTest, SimpleModelConvBatchNormOnOnes) {
  PAREX_REQUIRE_PADDLE_MODELS();
  Scope scope;
  auto model =
      LoadInferenceModel(kModels + "/simple_model/model.pdmodel",
                         kModels + "/simple_model/model.pdiparams", &scope);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Tensor x(DType::kFP32, {1, 3, 224, 224});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.0f;
  ReferenceExecutor executor;
  auto out = executor.Run(model->program, &scope, {{model->feed_names[0], x}},
                          model->fetch_names);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& y = (*out)[0];
  ASSERT_EQ(y.dims(), (Dims{1, 32, 112, 112}));
  double sum = 0, max = -1e30;
  for (int64_t i = 0; i < y.numel(); ++i) {
    sum += y.data<float>()[i];
    max = std::max<double>(max, y.data<float>()[i]);
  }
  EXPECT_NEAR(sum, 179387.45, 179387.45 * 1e-3);
  EXPECT_NEAR(sum / y.numel(), 0.446896, 0.446896 * 1e-3);
  EXPECT_NEAR(max, 1.757295, 1e-3);
  const float first[] = {0.880181f, 0.809697f, 0.809697f, 0.809697f};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y.data<float>()[i], first[i], 1e-4);
}

TEST(PaddleModelsTest, BrokenModelDirectoriesGiveNamedErrors) {
  PAREX_REQUIRE_PADDLE_MODELS();
  Scope scope;
  auto missing = LoadInferenceModel(kModels + "/no_such_model", &scope);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_such_model"),
            std::string::npos);
  // The simple_model program with fit_a_line's parameter file layout: the
  // combined file misses records.
  auto wrong = LoadInferenceModel(kModels + "/simple_model/model.pdmodel",
                                  kModels + "/fit_a_line/fc_0.w_0", &scope);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("fc_0.w_0"), std::string::npos);
}

}  // namespace
}  // namespace parex
