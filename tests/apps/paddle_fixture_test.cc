// A training program built by PaddlePaddle 2.6 (an MLP with
// softmax_with_cross_entropy and Momentum; fixtures/paddle_mlp_momentum,
// made by its make_fixture.py) runs in parex's reference executor from
// Paddle's initial parameters and reproduces the losses Paddle computed for
// ten fixed batches.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "graph/builder/backward.h"
#include "graph/ir/op_role.h"
#include "graph/ir/validate.h"
#include "kernels/io/model_io.h"
#include "kernels/io/tensor_io.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

const std::string kFixture =
    std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_mlp_momentum";

std::string LossName(const Program& program) {
  for (const auto& op : program.global_block().ops()) {
    if (op->type() == "reduce_mean" || op->type() == "mean") {
      return op->FirstOutput("Out");
    }
  }
  return "";
}

TEST(PaddleFixtureTest, MomentumMlpReproducesPaddleLosses) {
  auto main = Program::Load(kFixture + "/main.pdmodel");
  ASSERT_TRUE(main.ok()) << main.status().ToString();
  auto startup = Program::Load(kFixture + "/startup.pdmodel");
  ASSERT_TRUE(startup.ok()) << startup.status().ToString();

  // The Fluid conventions the multi-device passes rely on are there.
  int loss_grad_fills = 0, optimize_ops = 0;
  for (const auto& op : main->global_block().ops()) {
    int role = *op->GetAttr<int>("op_role");
    if (role == (kOpRoleBackward | kOpRoleLoss)) ++loss_grad_fills;
    if (op->type() == "momentum") {
      ++optimize_ops;
      EXPECT_EQ(role, kOpRoleOptimize);
      auto pair = *op->GetAttr<std::vector<std::string>>("op_role_var");
      ASSERT_EQ(pair.size(), 2u);
      EXPECT_EQ(pair[1], pair[0] + "@GRAD");
    }
  }
  EXPECT_EQ(loss_grad_fills, 1);
  EXPECT_EQ(optimize_ops, 4);

  ReferenceExecutor executor;
  // Paddle's startup program runs in parex too (its random values differ:
  // the losses below start from Paddle's own initial parameters).
  Scope startup_scope;
  auto ran = executor.Run(*startup, &startup_scope, {}, {});
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();

  Scope scope;
  Status loaded = LoadPersistables(*main, kFixture + "/params", &scope);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  const std::string loss = LossName(*main);
  ASSERT_FALSE(loss.empty());

  std::ifstream expected_file(kFixture + "/losses.txt");
  for (int step = 0; step < 10; ++step) {
    double expected = 0;
    ASSERT_TRUE(expected_file >> expected);
    Tensor x, label;
    ASSERT_TRUE(
        LoadTensorFile(kFixture + "/batches/x_" + std::to_string(step), &x)
            .ok());
    ASSERT_TRUE(LoadTensorFile(
                    kFixture + "/batches/label_" + std::to_string(step), &label)
                    .ok());
    auto out =
        executor.Run(*main, &scope, {{"x", x}, {"label", label}}, {loss});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    double got = (*out)[0].data<float>()[0];
    EXPECT_NEAR(got, expected, 1e-4 * std::abs(expected)) << "step " << step;
  }
}

}  // namespace
}  // namespace parex

namespace parex {
namespace {

const std::string kCnnFixture =
    std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_cnn_bn_adam";

// A CNN built by PaddlePaddle 2.6 with conv2d, batch_norm (whose grad op
// reads Paddle 2.x's MeanOut / VarianceOut), pool2d, dropout (off), Adam and
// a piecewise learning rate set before each step, as Paddle's LRScheduler
// does (fixtures/paddle_cnn_bn_adam/make_fixture.py): parex's reference
// executor reproduces Paddle's ten losses from Paddle's initial parameters,
// and ends with Paddle's parameters and moments.
TEST(PaddleFixtureTest, BatchNormAdamCnnWithPiecewiseRateReproducesPaddle) {
  auto main = Program::Load(kCnnFixture + "/main.pdmodel");
  ASSERT_TRUE(main.ok()) << main.status().ToString();
  ASSERT_TRUE(ValidateProgram(*main).ok()) << ValidateProgram(*main).ToString();
  auto startup = Program::Load(kCnnFixture + "/startup.pdmodel");
  ASSERT_TRUE(startup.ok()) << startup.status().ToString();
  ASSERT_TRUE(ValidateProgram(*startup).ok());
  const std::vector<std::string> losses = MarkedLosses(main->global_block());
  ASSERT_EQ(losses.size(), 1u);

  Scope scope;
  Status loaded = LoadPersistables(*main, kCnnFixture + "/params", &scope);
  ASSERT_TRUE(loaded.ok()) << loaded.ToString();
  std::ifstream lr_file(kCnnFixture + "/lr.txt");
  std::string lr_var;
  ASSERT_TRUE(lr_file >> lr_var);
  std::ifstream expected_file(kCnnFixture + "/losses.txt");
  ReferenceExecutor executor;
  for (int step = 0; step < 10; ++step) {
    double expected = 0, rate = 0;
    ASSERT_TRUE(expected_file >> expected);
    ASSERT_TRUE(lr_file >> rate);
    Tensor* lr = scope.FindVar(lr_var)->GetMutableTensor();
    ASSERT_EQ(lr->numel(), 1);
    lr->data<float>()[0] = static_cast<float>(rate);
    Tensor x, label;
    ASSERT_TRUE(
        LoadTensorFile(kCnnFixture + "/batches/x_" + std::to_string(step), &x)
            .ok());
    ASSERT_TRUE(
        LoadTensorFile(kCnnFixture + "/batches/label_" + std::to_string(step),
                       &label)
            .ok());
    auto out =
        executor.Run(*main, &scope, {{"x", x}, {"label", label}}, {losses[0]});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const double got = (*out)[0].data<float>()[0];
    EXPECT_NEAR(got, expected, 1e-4 * std::abs(expected)) << "step " << step;
  }
  // Parameters, moments and batch-norm statistics after the ten steps.
  Scope final_scope;
  ASSERT_TRUE(
      LoadPersistables(*main, kCnnFixture + "/final", &final_scope).ok());
  int compared = 0;
  for (const std::string& name : PersistableTensorNames(*main)) {
    const Tensor& want = *final_scope.FindVar(name)->GetTensor();
    const Tensor& got = *scope.FindVar(name)->GetTensor();
    if (want.dtype() != DType::kFP32) continue;
    ASSERT_EQ(got.dims(), want.dims()) << name;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double w = want.data<float>()[i], g = got.data<float>()[i];
      ASSERT_NEAR(g, w, 1e-5 + 1e-3 * std::abs(w)) << name << "[" << i << "]";
    }
    ++compared;
  }
  EXPECT_GE(compared, 20);
}

}  // namespace
}  // namespace parex
