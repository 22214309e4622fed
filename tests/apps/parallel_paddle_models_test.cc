// Paddle's saved programs on two places with the batch split (issue 5,
// acceptance 5): the outputs match the single-place reference and the
// golden values PaddlePaddle produced.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "actors/executor/parallel_executor.h"
#include "apps/cli/npy.h"
#include "apps/datasets.h"
#include "kernels/io/model_io.h"
#include "kernels/reference_executor.h"
#include "tests/paddle_models.h"

namespace parex {
namespace {

const std::vector<Place> kTwoPlaces{Place::CPU(0), Place::CPU(1)};

// Runs `model` on two places and on the reference; returns both outputs.
void RunBoth(const InferenceModel& model, Scope* scope, const Tensor& x,
             Tensor* parallel, Tensor* reference) {
  ReferenceExecutor ref;
  auto want = ref.Run(model.program, scope, {{model.feed_names[0], x}},
                      model.fetch_names);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto pe = ParallelExecutor::Create(kTwoPlaces, model.program, "", scope);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  auto got = (*pe)->Run({{model.feed_names[0], x}}, model.fetch_names);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  *parallel = (*got)[0];
  *reference = (*want)[0];
}

double MaxAbsDiff(const Tensor& a, const Tensor& b) {
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    worst = std::max<double>(worst,
                             std::abs(a.data<float>()[i] - b.data<float>()[i]));
  }
  return worst;
}

TEST(ParallelPaddleModelsTest, FitALineOnTheHousingTestRows) {
  PAREX_REQUIRE_PADDLE_MODELS();
  Scope scope;
  auto model =
      LoadInferenceModel(testing::PaddleModelsDir() + "/fit_a_line", &scope);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto data =
      LoadUciHousing(std::string(PAREX_DATA_DIR) + "/boston_house_prices.csv");
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  Tensor parallel, reference;
  RunBoth(*model, &scope, data->test_x, &parallel, &reference);
  ASSERT_EQ(parallel.dims(), reference.dims());
  EXPECT_LE(MaxAbsDiff(parallel, reference), 1e-5);
  double mse = 0;
  for (int64_t i = 0; i < parallel.numel(); ++i) {
    const double d = parallel.data<float>()[i] - data->test_y.data<float>()[i];
    mse += d * d;
  }
  EXPECT_NEAR(mse / parallel.numel(), 16.4071, 1e-3);  // Paddle's figure
}

TEST(ParallelPaddleModelsTest, MnistMlpReproducesPaddlesProbabilities) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = testing::PaddleModelsDir() + "/mnist_mlp";
  Scope scope;
  auto model = LoadInferenceModel(dir, &scope);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto images = ReadIdxImages(dir + "/golden/images-64-idx3-ubyte");
  ASSERT_TRUE(images.ok()) << images.status().ToString();
  Tensor x(DType::kFP32, {64, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) {
    x.data<float>()[i] = images->data<uint8_t>()[i] / 255.0f * 2.0f - 1.0f;
  }
  Tensor parallel, reference;
  RunBoth(*model, &scope, x, &parallel, &reference);
  ASSERT_EQ(parallel.dims(), (Dims{64, 10}));
  EXPECT_LE(MaxAbsDiff(parallel, reference), 1e-6);
  const std::vector<std::vector<double>> golden =
      testing::ReadGoldenProbabilities(dir + "/golden/probabilities.csv");
  ASSERT_GE(golden.size(), 64u);
  int row = 0;
  double worst = 0;
  for (; row < 64; ++row) {
    for (int c = 0; c < 10; ++c) {
      worst = std::max(worst, std::abs(parallel.data<float>()[row * 10 + c] -
                                       golden[row][c]));
    }
  }
  EXPECT_EQ(row, 64);
  EXPECT_LE(worst, 1e-4);
}

TEST(ParallelPaddleModelsTest, SimpleModelTwoImagesOnePerPlace) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string dir = testing::PaddleModelsDir() + "/simple_model";
  Scope scope;
  auto model = LoadInferenceModel(dir + "/model.pdmodel",
                                  dir + "/model.pdiparams", &scope);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  Tensor x(DType::kFP32, {2, 3, 224, 224});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.0f;
  Tensor parallel, reference;
  RunBoth(*model, &scope, x, &parallel, &reference);
  ASSERT_EQ(parallel.dims(), (Dims{2, 32, 112, 112}));
  EXPECT_LE(MaxAbsDiff(parallel, reference), 1e-5);
  // Each image's output sums to Paddle's figure for one image of ones.
  const int64_t per_image = parallel.numel() / 2;
  for (int img = 0; img < 2; ++img) {
    double sum = 0;
    for (int64_t i = 0; i < per_image; ++i) {
      sum += parallel.data<float>()[img * per_image + i];
    }
    EXPECT_NEAR(sum, 179387.45, 179387.45 * 1e-3) << "image " << img;
  }
}

// A to_static list appended in a tensor `while` (a tensor array: Paddle
// makes it empty at the start of every run, and the loop appends at its
// length) whose loop writes the fed variable (`h = x` carried as x): three
// runs in a row give Paddle's output each time, on two places and on the
// reference executor, and the caller's input stays as it was.
TEST(ParallelPaddleModelsTest, TensorArraysStartEmptyEveryStep) {
  const std::string dir = std::string(PAREX_TEST_FIXTURES_DIR) +
                          "/paddle_control_flow/infer/list_net";
  Scope scope;
  auto model = LoadInferenceModel(dir + "/model.pdmodel",
                                  dir + "/model.pdiparams", &scope);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  StatusOr<Tensor> x = ReadNpy(dir + "/x.npy");
  StatusOr<Tensor> want = ReadNpy(dir + "/y.npy");
  ASSERT_TRUE(x.ok() && want.ok());
  Scope ref_scope;
  ASSERT_TRUE(LoadInferenceModel(dir + "/model.pdmodel",
                                 dir + "/model.pdiparams", &ref_scope)
                  .ok());
  ReferenceExecutor ref;
  auto pe = ParallelExecutor::Create(kTwoPlaces, model->program, "", &scope);
  ASSERT_TRUE(pe.ok()) << pe.status().ToString();
  for (int run = 0; run < 3; ++run) {
    auto one = ref.Run(model->program, &ref_scope, {{model->feed_names[0], *x}},
                       model->fetch_names);
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    EXPECT_LE(MaxAbsDiff((*one)[0], *want), 1e-6) << "run " << run;
    auto got = (*pe)->Run({{model->feed_names[0], *x}}, model->fetch_names);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    ASSERT_EQ((*got)[0].dims(), want->dims()) << "run " << run;
    EXPECT_LE(MaxAbsDiff((*got)[0], *want), 1e-6) << "run " << run;
  }
  EXPECT_EQ(MaxAbsDiff(*x, *ReadNpy(dir + "/x.npy")), 0);
}

}  // namespace
}  // namespace parex
