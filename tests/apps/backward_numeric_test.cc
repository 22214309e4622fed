// Executed checks of AppendBackward: whole fp64 programs built with the
// layers API run on the reference executor, and every param@GRAD is compared
// with central differences of the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "graph/builder/backward.h"
#include "graph/builder/layers.h"
#include "kernels/reference_executor.h"

namespace parex {
namespace {

Tensor RandomFP64(const Dims& dims, double lo, double hi, uint32_t seed) {
  Tensor t(DType::kFP64, dims);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = dist(gen);
  return t;
}

Tensor Labels(int64_t n, int64_t classes, uint32_t seed) {
  Tensor t(DType::kInt64, {n, 1});
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(0, classes - 1);
  for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = dist(gen);
  return t;
}

class BackwardNumericTest : public ::testing::Test {
 protected:
  BackwardNumericTest() : b_(&main_, &startup_) { b_.set_random_seed(17); }

  VarDesc* Data(const std::string& name, const Dims& shape,
                DType dtype = DType::kFP64) {
    auto v = layers::Data(b_, name, shape, dtype);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return *v;
  }
  VarDesc* Fc(VarDesc* x, int size, const std::string& act = "",
              const std::string& param_name = "", bool has_bias = true) {
    layers::FcOptions o;
    o.size = size;
    o.act = act;
    o.param_attr.name = param_name;
    o.has_bias = has_bias;
    auto v = layers::Fc(b_, x, o);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return *v;
  }
  VarDesc* Mean(VarDesc* x) {
    auto v = layers::Mean(b_, x);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return *v;
  }
  int CountOps(const std::string& type) const {
    int n = 0;
    for (const auto& op : main_.global_block().ops()) n += op->type() == type;
    return n;
  }
  bool Writes(const std::string& type, const std::string& var) const {
    for (const auto& op : main_.global_block().ops()) {
      if (op->type() != type) continue;
      for (const auto& out : op->OutputArgumentNames()) {
        if (out == var) return true;
      }
    }
    return false;
  }

  // Appends the backward pass of `loss`, initialises the parameters and
  // compares every parameter gradient with (L(p+eps) - L(p-eps)) / 2eps.
  void CheckGradients(const std::string& loss, const FeedMap& feeds,
                      size_t expected_params) {
    auto pairs = AppendBackward(&main_, loss);
    ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
    ASSERT_EQ(pairs->size(), expected_params);
    Scope scope;
    ReferenceExecutor exec;
    auto init = exec.Run(startup_, &scope, {}, {});
    ASSERT_TRUE(init.ok()) << init.status().ToString();

    std::vector<std::string> fetch{loss};
    for (const ParamGrad& pg : *pairs) fetch.push_back(pg.grad);
    auto values = exec.Run(main_, &scope, feeds, fetch);
    ASSERT_TRUE(values.ok()) << values.status().ToString();
    auto loss_at = [&]() {
      auto v = exec.Run(main_, &scope, feeds, {loss});
      EXPECT_TRUE(v.ok()) << v.status().ToString();
      return v.ok() ? (*v)[0].data<double>()[0] : NAN;
    };
    const double eps = 1e-6;
    int failures = 0;
    for (size_t k = 0; k < pairs->size(); ++k) {
      const std::string& param = (*pairs)[k].param;
      const Tensor& analytic = (*values)[k + 1];
      Tensor* p = scope.FindVar(param)->GetMutableTensor();
      ASSERT_EQ(p->dtype(), DType::kFP64) << param;
      ASSERT_EQ(analytic.dims(), p->dims()) << param;
      for (int64_t i = 0; i < p->numel(); ++i) {
        double& x = p->data<double>()[i];
        const double orig = x;
        x = orig + eps;
        const double plus = loss_at();
        x = orig - eps;
        const double minus = loss_at();
        x = orig;
        const double numeric = (plus - minus) / (2 * eps);
        const double got = analytic.data<double>()[i];
        if (std::abs(got - numeric) > 1e-6 + 1e-5 * std::abs(numeric)) {
          ADD_FAILURE() << "d" << loss << "/d" << param << "[" << i
                        << "]: analytic " << got << ", numeric " << numeric;
          if (++failures > 10) return;
        }
      }
    }
  }

  Program main_;
  Program startup_;
  ProgramBuilder b_;
};

// fc -> relu -> fc -> softmax_with_cross_entropy -> mean.
TEST_F(BackwardNumericTest, MlpWithSoftmaxCrossEntropy) {
  VarDesc* x = Data("x", {4});
  VarDesc* label = Data("label", {1}, DType::kInt64);
  VarDesc* h = Fc(x, 5, "relu");
  VarDesc* logits = Fc(h, 3);
  auto loss = layers::SoftmaxWithCrossEntropy(b_, logits, label);
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  VarDesc* avg = Mean(*loss);
  FeedMap feeds{{"x", RandomFP64({6, 4}, -1, 1, 3)},
                {"label", Labels(6, 3, 4)}};
  CheckGradients(avg->name(), feeds, 4);
}

// h feeds two ops (an fc and an add) and a weight is shared by two fcs: both
// gradients are sums of renamed contributions.
TEST_F(BackwardNumericTest, TwoConsumersAndSharedWeight) {
  VarDesc* x = Data("x", {4});
  VarDesc* y = Data("y", {4});
  VarDesc* h = Fc(x, 4, "tanh");
  VarDesc* a = Fc(h, 4, "", "shared_w", /*has_bias=*/false);
  VarDesc* c = Fc(a, 4, "sigmoid", "shared_w", /*has_bias=*/false);
  VarDesc* s = b_.CreateTemporary("add", DType::kFP64);
  ASSERT_TRUE(b_.AppendOp("elementwise_add",
                          {{"X", {h->name()}}, {"Y", {c->name()}}},
                          {{"Out", {s->name()}}})
                  .ok());
  auto cost = layers::SquareErrorCost(b_, s, y);
  ASSERT_TRUE(cost.ok()) << cost.status().ToString();
  VarDesc* avg = Mean(*cost);
  FeedMap feeds{{"x", RandomFP64({5, 4}, -1, 1, 5)},
                {"y", RandomFP64({5, 4}, -1, 1, 6)}};
  CheckGradients(avg->name(), feeds, 3);
  EXPECT_TRUE(Writes("sum", h->name() + "@GRAD"));
  EXPECT_TRUE(Writes("sum", "shared_w@GRAD"));
  EXPECT_EQ(CountOps("sum"), 2);
}

// conv2d -> batch_norm (training statistics) -> tanh -> avg pool2d -> fc ->
// softmax_with_cross_entropy -> mean.
TEST_F(BackwardNumericTest, ConvBatchNormPool) {
  VarDesc* img = Data("img", {2, 5, 5});
  VarDesc* label = Data("label", {1}, DType::kInt64);
  layers::Conv2dOptions c;
  c.num_filters = 3;
  c.filter_size = {3, 3};
  c.padding = {1, 1};
  auto conv = layers::Conv2d(b_, img, c);
  ASSERT_TRUE(conv.ok()) << conv.status().ToString();
  layers::BatchNormOptions bn;
  bn.act = "tanh";
  auto norm = layers::BatchNorm(b_, *conv, bn);
  ASSERT_TRUE(norm.ok()) << norm.status().ToString();
  layers::Pool2dOptions p;
  p.pool_type = "avg";
  p.pool_size = {2, 2};
  p.stride = {2, 2};
  auto pool = layers::Pool2d(b_, *norm, p);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  VarDesc* logits = Fc(*pool, 3);
  auto loss = layers::SoftmaxWithCrossEntropy(b_, logits, label);
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  VarDesc* avg = Mean(*loss);
  FeedMap feeds{{"img", RandomFP64({4, 2, 5, 5}, -1, 1, 8)},
                {"label", Labels(4, 3, 9)}};
  // conv w, b; batch_norm scale, bias (not the running statistics); fc w, b.
  CheckGradients(avg->name(), feeds, 6);
}

}  // namespace
}  // namespace parex
