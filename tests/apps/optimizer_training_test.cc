// Training with graph/builder/optimizer.cc end to end: a linear model built
// with ProgramBuilder and layers, Minimize, then the startup program and
// several steps of the main program on the reference executor. After every step
// the parameters and optimizer state are checked against the update rules
// written out here (sgd, momentum with and without Nesterov, adam), with the
// gradients of the model computed here by hand; likewise the learning rate
// of both schedules, L2 regularisation and clipping by global norm. Finally
// the optimizer part of a program PaddlePaddle 2.6 built
// (fixtures/paddle_mlp_momentum) is compared with the one Minimize builds for
// the same model.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/ir/program.h"
#include "kernels/reference_executor.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex {
namespace {

using Values = std::vector<double>;

constexpr int kBatch = 4;
constexpr int kFeatures = 3;

// pred = x w + b with w [3,1] ("w", uniform init) and b [1] ("b", 0.25);
// loss = mean((pred - y)^2). The parameters sort as b, w.
class Trainer {
 public:
  // `target_scale` scales the labels (large labels give large gradients).
  explicit Trainer(double target_scale = 1.0) {
    auto x = layers::Data(b_, "x", {kFeatures});
    auto y = layers::Data(b_, "y", {1});
    PAREX_CHECK(x.ok() && y.ok(), "data layers");
    layers::FcOptions o;
    o.size = 1;
    o.param_attr.name = "w";
    o.param_attr.initializer = Initializer::Uniform(-1, 1, 7);
    o.bias_attr.name = "b";
    o.bias_attr.initializer = Initializer::Constant(0.25);
    auto pred = layers::Fc(b_, *x, o);
    PAREX_CHECK(pred.ok(), pred.status().ToString());
    auto cost = layers::SquareErrorCost(b_, *pred, *y);
    PAREX_CHECK(cost.ok(), cost.status().ToString());
    auto loss = layers::Mean(b_, *cost);
    PAREX_CHECK(loss.ok(), loss.status().ToString());
    loss_ = *loss;

    std::vector<float> xs, ys;
    for (int i = 0; i < kBatch; ++i) {
      for (int j = 0; j < kFeatures; ++j) {
        xs.push_back(static_cast<float>(0.5 * i - 0.3 * j + 0.1 * i * j));
      }
      ys.push_back(static_cast<float>(target_scale * (1.0 - 0.4 * i)));
    }
    x_ = MakeTensor<float>({kBatch, kFeatures}, xs);
    y_ = MakeTensor<float>({kBatch, 1}, ys);
  }

  // Minimize, then the startup program.
  void Setup(Optimizer& opt) {
    auto pgs = opt.Minimize(b_, loss_);
    ASSERT_TRUE(pgs.ok()) << pgs.status().ToString();
    lr_name_ = opt.learning_rate_name();
    auto out = executor_.Run(startup_, &scope_, {}, {});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
  }

  // One step of the main program; returns the values of `fetch`.
  std::vector<Values> Step(const std::vector<std::string>& fetch = {}) {
    auto out = executor_.Run(main_, &scope_, {{"x", x_}, {"y", y_}}, fetch);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    std::vector<Values> values;
    if (!out.ok()) return values;
    for (const Tensor& t : *out) values.push_back(AsDoubles(t));
    return values;
  }

  // The learning rate this step used (read after the step).
  double StepLearningRate() { return Get(lr_name_)[0]; }

  // A persistable value of the scope.
  Values Get(const std::string& name) const {
    const Variable* v = scope_.FindVar(name);
    PAREX_CHECK(v != nullptr && v->GetTensor() != nullptr, "no var " + name);
    return AsDoubles(*v->GetTensor());
  }

  // The loss at the scope's current parameters, by hand.
  double Loss() const {
    const Values w = Get("w");
    double loss = 0;
    for (int i = 0; i < kBatch; ++i) {
      double r = Get("b")[0] - y_.data<float>()[i];
      for (int j = 0; j < kFeatures; ++j) {
        r += x_.data<float>()[i * kFeatures + j] * w[j];
      }
      loss += r * r / kBatch;
    }
    return loss;
  }

  // dL/dw and dL/db at the scope's current parameters, by hand.
  std::map<std::string, Values> Gradients() const {
    const Values w = Get("w");
    const double b = Get("b")[0];
    Values dw(kFeatures, 0.0);
    double db = 0;
    for (int i = 0; i < kBatch; ++i) {
      double pred = b;
      for (int j = 0; j < kFeatures; ++j) {
        pred += x_.data<float>()[i * kFeatures + j] * w[j];
      }
      const double r = 2.0 / kBatch * (pred - y_.data<float>()[i]);
      for (int j = 0; j < kFeatures; ++j) {
        dw[j] += x_.data<float>()[i * kFeatures + j] * r;
      }
      db += r;
    }
    return {{"w", dw}, {"b", {db}}};
  }

  std::map<std::string, Values> Params() const {
    return {{"w", Get("w")}, {"b", Get("b")}};
  }

  const std::string& lr_name() const { return lr_name_; }

 private:
  static Values AsDoubles(const Tensor& t) {
    Values v;
    for (int64_t i = 0; i < t.numel(); ++i) {
      switch (t.dtype()) {
        case DType::kFP32:
          v.push_back(t.data<float>()[i]);
          break;
        case DType::kFP64:
          v.push_back(t.data<double>()[i]);
          break;
        case DType::kInt64:
          v.push_back(static_cast<double>(t.data<int64_t>()[i]));
          break;
        default:
          PAREX_CHECK(false, "unexpected dtype");
      }
    }
    return v;
  }

  Program main_;
  Program startup_;
  ProgramBuilder b_{&main_, &startup_};
  VarDesc* loss_ = nullptr;
  Scope scope_;
  ReferenceExecutor executor_;
  Tensor x_, y_;
  std::string lr_name_;
};

void ExpectNear(const Values& actual, const Values& expected,
                const std::string& what, double tol = 2e-6) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tol * (1 + std::abs(expected[i])))
        << what << "[" << i << "]";
  }
}

double Norm(const std::map<std::string, Values>& g) {
  double sum = 0;
  for (const auto& [name, v] : g) {
    for (double e : v) sum += e * e;
  }
  return std::sqrt(sum);
}

// (p_before - p_after) / lr: the gradient sgd applied.
std::map<std::string, Values> Applied(
    const std::map<std::string, Values>& before,
    const std::map<std::string, Values>& after, double lr) {
  std::map<std::string, Values> applied;
  for (const auto& [name, v] : before) {
    for (size_t i = 0; i < v.size(); ++i) {
      applied[name].push_back((v[i] - after.at(name)[i]) / lr);
    }
  }
  return applied;
}

TEST(OptimizerTrainingTest, SgdFollowsTheUpdateRuleEveryStep) {
  Trainer t;
  SGDOptimizer sgd(LearningRate::Constant(0.1));
  ASSERT_NO_FATAL_FAILURE(t.Setup(sgd));
  for (int step = 0; step < 5; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const auto params = t.Params();
    const auto grads = t.Gradients();
    t.Step();
    EXPECT_FLOAT_EQ(t.StepLearningRate(), 0.1f);
    for (const auto& [name, p] : params) {
      Values expected = p;
      for (size_t i = 0; i < p.size(); ++i)
        expected[i] -= 0.1 * grads.at(name)[i];
      ExpectNear(t.Get(name), expected, name);
    }
  }
}

TEST(OptimizerTrainingTest, SgdReducesTheLoss) {
  Trainer t;
  SGDOptimizer sgd(LearningRate::Constant(0.05));
  ASSERT_NO_FATAL_FAILURE(t.Setup(sgd));
  double previous = t.Loss();
  for (int step = 0; step < 30; ++step) {
    t.Step();
    EXPECT_LT(t.Loss(), previous) << "step " << step;
    previous = t.Loss();
  }
}

TEST(OptimizerTrainingTest, MomentumWithAndWithoutNesterov) {
  for (bool nesterov : {false, true}) {
    SCOPED_TRACE(nesterov ? "nesterov" : "plain");
    Trainer t;
    const double lr = 0.05, mu = 0.9;
    MomentumOptimizer opt(LearningRate::Constant(lr), mu, nesterov);
    ASSERT_NO_FATAL_FAILURE(t.Setup(opt));
    for (const std::string name : {"w", "b"}) {
      for (double v : t.Get(name + "_velocity_0")) EXPECT_EQ(v, 0);
    }
    for (int step = 0; step < 5; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const auto params = t.Params();
      const auto grads = t.Gradients();
      std::map<std::string, Values> velocity = {{"w", t.Get("w_velocity_0")},
                                                {"b", t.Get("b_velocity_0")}};
      t.Step();
      for (const auto& [name, p] : params) {
        Values v = velocity.at(name);
        Values expected = p;
        for (size_t i = 0; i < p.size(); ++i) {
          const double g = grads.at(name)[i];
          v[i] = mu * v[i] + g;
          expected[i] -= nesterov ? (g + mu * v[i]) * lr : lr * v[i];
        }
        ExpectNear(t.Get(name + "_velocity_0"), v, name + " velocity");
        ExpectNear(t.Get(name), expected, name);
      }
    }
  }
}

TEST(OptimizerTrainingTest, AdamFollowsFluidsUpdateRule) {
  Trainer t;
  const double lr = 0.02, beta1 = 0.8, beta2 = 0.9, eps = 1e-6;
  AdamOptimizer adam(LearningRate::Constant(lr), beta1, beta2, eps);
  ASSERT_NO_FATAL_FAILURE(t.Setup(adam));
  EXPECT_FLOAT_EQ(t.Get("w_beta1_pow_acc_0")[0], static_cast<float>(beta1));
  EXPECT_FLOAT_EQ(t.Get("b_beta2_pow_acc_0")[0], static_cast<float>(beta2));
  for (int step = 0; step < 6; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const auto params = t.Params();
    const auto grads = t.Gradients();
    std::map<std::string, std::map<std::string, Values>> state;
    for (const std::string name : {"w", "b"}) {
      for (const std::string acc :
           {"moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"}) {
        state[name][acc] = t.Get(name + "_" + acc + "_0");
      }
    }
    t.Step();
    for (const auto& [name, p] : params) {
      auto s = state.at(name);
      const double b1p = s["beta1_pow_acc"][0];
      const double b2p = s["beta2_pow_acc"][0];
      EXPECT_NEAR(b1p, std::pow(beta1, step + 1), 1e-6);
      const double lr_t = lr * std::sqrt(1 - b2p) / (1 - b1p);
      Values expected = p;
      for (size_t i = 0; i < p.size(); ++i) {
        const double g = grads.at(name)[i];
        double& m1 = s["moment1"][i];
        double& m2 = s["moment2"][i];
        m1 = beta1 * m1 + (1 - beta1) * g;
        m2 = beta2 * m2 + (1 - beta2) * g * g;
        expected[i] -= lr_t * m1 / (std::sqrt(m2) + eps * std::sqrt(1 - b2p));
      }
      ExpectNear(t.Get(name + "_moment1_0"), s["moment1"], name + " moment1");
      ExpectNear(t.Get(name + "_moment2_0"), s["moment2"], name + " moment2");
      ExpectNear(t.Get(name + "_beta1_pow_acc_0"), {b1p * beta1},
                 name + " beta1_pow");
      ExpectNear(t.Get(name + "_beta2_pow_acc_0"), {b2p * beta2},
                 name + " beta2_pow");
      ExpectNear(t.Get(name), expected, name, 1e-5);
    }
  }
}

TEST(OptimizerTrainingTest, ExponentialDecayRatePerStep) {
  for (bool staircase : {false, true}) {
    SCOPED_TRACE(staircase ? "staircase" : "continuous");
    Trainer t;
    const double base = 0.2, rate = 0.5;
    const int64_t decay_steps = 3;
    SGDOptimizer sgd(
        LearningRate::ExponentialDecay(base, decay_steps, rate, staircase));
    ASSERT_NO_FATAL_FAILURE(t.Setup(sgd));
    for (int step = 0; step < 8; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const auto params = t.Params();
      const auto grads = t.Gradients();
      const auto fetched = t.Step({t.lr_name(), "@LR_DECAY_COUNTER@"});
      ASSERT_EQ(fetched.size(), 2u);
      EXPECT_EQ(fetched[1][0], step);  // the first run sees step 0
      double exponent = static_cast<double>(step) / decay_steps;
      if (staircase) exponent = std::floor(exponent);
      const double lr = base * std::pow(rate, exponent);
      EXPECT_NEAR(fetched[0][0], lr, 1e-6 * lr);
      // The update used this step's rate.
      for (const auto& [name, p] : params) {
        Values expected = p;
        for (size_t i = 0; i < p.size(); ++i)
          expected[i] -= lr * grads.at(name)[i];
        ExpectNear(t.Get(name), expected, name);
      }
    }
  }
}

TEST(OptimizerTrainingTest, PiecewiseDecayRatePerStep) {
  Trainer t;
  MomentumOptimizer opt(LearningRate::PiecewiseDecay({2, 5}, {1.0, 0.5, 0.1}),
                        0.0);
  ASSERT_NO_FATAL_FAILURE(t.Setup(opt));
  const std::vector<float> expected = {1.0f, 1.0f, 0.5f, 0.5f,
                                       0.5f, 0.1f, 0.1f, 0.1f};
  for (size_t step = 0; step < expected.size(); ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const auto params = t.Params();
    const auto grads = t.Gradients();
    const auto fetched = t.Step({t.lr_name()});
    ASSERT_EQ(fetched.size(), 1u);
    // Exactly the fp32 value of the interval.
    EXPECT_EQ(static_cast<float>(fetched[0][0]), expected[step]);
    // mu = 0: momentum is sgd with this rate.
    for (const auto& [name, p] : params) {
      Values want = p;
      for (size_t i = 0; i < p.size(); ++i)
        want[i] -= expected[step] * grads.at(name)[i];
      ExpectNear(t.Get(name), want, name, 1e-5);
    }
  }
}

TEST(OptimizerTrainingTest, L2DecayAddsExactlyL2TimesParamToTheGradient) {
  const double lr = 0.5, l2 = 0.1;
  OptimizerOptions options;
  options.l2_decay = l2;
  Trainer with;
  SGDOptimizer sgd_l2(LearningRate::Constant(lr), options);
  ASSERT_NO_FATAL_FAILURE(with.Setup(sgd_l2));
  Trainer without;
  SGDOptimizer sgd(LearningRate::Constant(lr));
  ASSERT_NO_FATAL_FAILURE(without.Setup(sgd));

  // Same start, same feed: the first updates differ by lr * l2 * param.
  const auto p0 = with.Params();
  ASSERT_EQ(p0, without.Params());
  with.Step();
  without.Step();
  for (const auto& [name, p] : p0) {
    Values diff;
    Values expected;
    for (size_t i = 0; i < p.size(); ++i) {
      diff.push_back(without.Get(name)[i] - with.Get(name)[i]);
      expected.push_back(lr * l2 * p[i]);
    }
    ExpectNear(diff, expected, name);
  }
  // And on every later step the applied gradient is grad + l2 * param.
  for (int step = 1; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const auto params = with.Params();
    const auto grads = with.Gradients();
    with.Step();
    const auto applied = Applied(params, with.Params(), lr);
    for (const auto& [name, p] : params) {
      Values expected;
      for (size_t i = 0; i < p.size(); ++i) {
        expected.push_back(grads.at(name)[i] + l2 * p[i]);
      }
      ExpectNear(applied.at(name), expected, name, 1e-5);
    }
  }
}

TEST(OptimizerTrainingTest, ClipByGlobalNormBoundsTheAppliedGradients) {
  const double lr = 0.01, clip = 0.5;
  OptimizerOptions options;
  options.clip_global_norm = clip;
  Trainer t(/*target_scale=*/40);
  SGDOptimizer sgd(LearningRate::Constant(lr), options);
  ASSERT_NO_FATAL_FAILURE(t.Setup(sgd));
  for (int step = 0; step < 4; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const auto params = t.Params();
    const auto grads = t.Gradients();
    const double norm = Norm(grads);
    ASSERT_GT(norm, 10 * clip);  // the labels make the gradients large
    // The clipped gradients are left in the gradient vars (in place).
    const auto fetched = t.Step({"w@GRAD", "b@GRAD"});
    ASSERT_EQ(fetched.size(), 2u);
    const auto applied = Applied(params, t.Params(), lr);
    EXPECT_NEAR(Norm(applied), clip, 1e-4);
    // Same direction: grad * clip / norm.
    for (const auto& [name, g] : grads) {
      Values expected;
      for (double e : g) expected.push_back(e * clip / norm);
      ExpectNear(applied.at(name), expected, name, 1e-4);
      ExpectNear(fetched[name == "w" ? 0 : 1], expected, name + "@GRAD");
    }
  }
}

TEST(OptimizerTrainingTest, ClipByGlobalNormLeavesSmallGradientsAlone) {
  const double lr = 0.1;
  OptimizerOptions options;
  options.clip_global_norm = 1e4;
  Trainer t;
  SGDOptimizer sgd(LearningRate::Constant(lr), options);
  ASSERT_NO_FATAL_FAILURE(t.Setup(sgd));
  for (int step = 0; step < 3; ++step) {
    const auto params = t.Params();
    const auto grads = t.Gradients();
    t.Step();
    for (const auto& [name, p] : params) {
      Values expected = p;
      for (size_t i = 0; i < p.size(); ++i)
        expected[i] -= lr * grads.at(name)[i];
      ExpectNear(t.Get(name), expected, name);
    }
  }
}

TEST(OptimizerTrainingTest, ClippingComesBeforeL2AsInFluid) {
  // Fluid's apply_gradients clips the raw gradients, then adds l2 * param:
  // the applied gradient is clip(grad) + l2 * param.
  const double lr = 0.01, clip = 0.5, l2 = 0.2;
  OptimizerOptions options;
  options.clip_global_norm = clip;
  options.l2_decay = l2;
  Trainer t(/*target_scale=*/40);
  SGDOptimizer sgd(LearningRate::Constant(lr), options);
  ASSERT_NO_FATAL_FAILURE(t.Setup(sgd));
  const auto params = t.Params();
  const auto grads = t.Gradients();
  const double norm = Norm(grads);
  t.Step();
  const auto applied = Applied(params, t.Params(), lr);
  for (const auto& [name, g] : grads) {
    Values expected;
    for (size_t i = 0; i < g.size(); ++i) {
      expected.push_back(g[i] * clip / norm + l2 * params.at(name)[i]);
    }
    ExpectNear(applied.at(name), expected, name, 1e-4);
  }
}

// The update ops (op_role Optimize) of a program: type, bound arguments by
// slot and the attributes that define the update, as text.
std::vector<std::string> UpdateOps(const Program& program) {
  std::vector<std::string> ops;
  for (const auto& op : program.global_block().ops()) {
    if (*op->GetAttr<int>("op_role") != kOpRoleOptimize) continue;
    std::string text = op->type();
    for (const std::string& slot : op->InputSlots()) {
      for (const std::string& arg : op->Input(slot)) {
        text += " " + slot + "=" + arg;
      }
    }
    for (const std::string& slot : op->OutputSlots()) {
      for (const std::string& arg : op->Output(slot)) {
        text += " " + slot + "->" + arg;
      }
    }
    text += " mu=" + std::to_string(*op->GetAttr<float>("mu"));
    text += " nesterov=" + std::to_string(*op->GetAttr<bool>("use_nesterov"));
    const std::vector<std::string> role_var =
        *op->GetAttr<std::vector<std::string>>("op_role_var");
    for (const std::string& v : role_var) text += " role_var=" + v;
    text += " scope=" + *op->GetAttr<std::string>("op_namescope");
    ops.push_back(text);
  }
  return ops;
}

// The vars the startup program fills with fill_constant, in order, with
// their values (the parameters' own initialisers included).
std::vector<std::string> StartupFills(const Program& startup) {
  std::vector<std::string> fills;
  for (const auto& op : startup.global_block().ops()) {
    if (op->type() != "fill_constant") continue;
    fills.push_back(op->FirstOutput("Out") + "=" +
                    std::to_string(*op->GetAttr<float>("value")));
  }
  return fills;
}

TEST(OptimizerTrainingTest, MomentumMatchesThePaddleProgram) {
  const std::string dir =
      std::string(PAREX_TEST_FIXTURES_DIR) + "/paddle_mlp_momentum";
  auto paddle_main = Program::Load(dir + "/main.pdmodel");
  ASSERT_TRUE(paddle_main.ok()) << paddle_main.status().ToString();
  auto paddle_startup = Program::Load(dir + "/startup.pdmodel");
  ASSERT_TRUE(paddle_startup.ok()) << paddle_startup.status().ToString();

  // The fixture's model: fc(16, relu), fc(4), softmax_with_cross_entropy,
  // mean; Momentum(learning_rate=0.1, momentum=0.9).
  Program main, startup;
  ProgramBuilder b(&main, &startup);
  auto x = layers::Data(b, "x", {8});
  auto label = layers::Data(b, "label", {1}, DType::kInt64);
  ASSERT_TRUE(x.ok() && label.ok());
  layers::FcOptions hidden;
  hidden.size = 16;
  hidden.act = "relu";
  auto h = layers::Fc(b, *x, hidden);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  layers::FcOptions out;
  out.size = 4;
  auto logits = layers::Fc(b, *h, out);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  auto cost = layers::SoftmaxWithCrossEntropy(b, *logits, *label);
  ASSERT_TRUE(cost.ok()) << cost.status().ToString();
  auto loss = layers::Mean(b, *cost);
  ASSERT_TRUE(loss.ok()) << loss.status().ToString();
  MomentumOptimizer opt(LearningRate::Constant(0.1), 0.9);
  auto pgs = opt.Minimize(b, *loss);
  ASSERT_TRUE(pgs.ok()) << pgs.status().ToString();

  const std::vector<std::string> want = UpdateOps(*paddle_main);
  ASSERT_EQ(want.size(), 4u);
  EXPECT_EQ(UpdateOps(main), want);
  // learning_rate_0 before the velocities, which follow the parameters'
  // order by name, all in the startup program.
  const std::vector<std::string> fills = StartupFills(*paddle_startup);
  EXPECT_EQ(StartupFills(startup), fills);
  EXPECT_EQ(fills.size(), 2u + 1u + 4u);  // 2 biases, lr, 4 velocities
}

}  // namespace
}  // namespace parex
