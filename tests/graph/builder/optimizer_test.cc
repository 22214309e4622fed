// Tests of graph/builder/optimizer.cc: the structure Minimize appends to the
// main and startup programs (ops, op_role, op_role_var, attributes,
// accumulators and their startup initialisers), Fluid's names and order, and
// errors. The values these programs compute are checked by
// tests/apps/optimizer_training_test.cc.
#include "graph/builder/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "graph/builder/layers.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"

namespace parex {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// pred = fc(x[-1,3], size 1) with parameters "w" [3,1] and "b" [1];
// loss = mean(square_error_cost(pred, y)).
struct Model {
  Program main;
  Program startup;
  ProgramBuilder b{&main, &startup};
  VarDesc* loss = nullptr;
  int forward_and_backward_ops = 0;

  Model() {
    auto x = layers::Data(b, "x", {3});
    auto y = layers::Data(b, "y", {1});
    PAREX_CHECK(x.ok() && y.ok(), "data");
    layers::FcOptions o;
    o.size = 1;
    o.param_attr.name = "w";
    o.bias_attr.name = "b";
    auto pred = layers::Fc(b, *x, o);
    PAREX_CHECK(pred.ok(), pred.status().ToString());
    auto cost = layers::SquareErrorCost(b, *pred, *y);
    PAREX_CHECK(cost.ok(), cost.status().ToString());
    auto mean = layers::Mean(b, *cost);
    PAREX_CHECK(mean.ok(), mean.status().ToString());
    loss = *mean;
  }

  StatusOr<std::vector<ParamGrad>> Minimize(Optimizer& opt) {
    return opt.Minimize(b, loss);
  }
};

int Role(const OpDesc& op) {
  auto role = op.GetAttr<int>("op_role");
  return role.ok() ? *role : -1;
}

std::vector<std::string> RoleVar(const OpDesc& op) {
  if (!op.HasAttr("op_role_var")) return {};
  return *op.GetAttr<std::vector<std::string>>("op_role_var");
}

// The ops of block 0 whose op_role is exactly `role`, in program order.
std::vector<const OpDesc*> OpsWithRole(const Program& p, int role) {
  std::vector<const OpDesc*> ops;
  for (const auto& op : p.global_block().ops()) {
    if (Role(*op) == role) ops.push_back(op.get());
  }
  return ops;
}

std::vector<std::string> Types(const std::vector<const OpDesc*>& ops) {
  std::vector<std::string> types;
  for (const OpDesc* op : ops) types.push_back(op->type());
  return types;
}

// The startup op writing `var` (nullptr when none).
const OpDesc* StartupInit(const Program& startup, const std::string& var) {
  for (const auto& op : startup.global_block().ops()) {
    for (const std::string& out : op->OutputArgumentNames()) {
      if (out == var) return op.get();
    }
  }
  return nullptr;
}

// `var` is persistable in both programs with these dims and dtype, and the
// startup program fills it with `value`.
void ExpectState(const Model& m, const std::string& var, const Dims& dims,
                 DType dtype, double value) {
  SCOPED_TRACE(var);
  for (const Program* p : {&m.main, &m.startup}) {
    const VarDesc* v = p->global_block().FindVar(var);
    ASSERT_NE(v, nullptr);
    EXPECT_TRUE(v->persistable());
    EXPECT_EQ(v->dims(), dims);
    EXPECT_EQ(v->dtype(), dtype);
  }
  const OpDesc* init = StartupInit(m.startup, var);
  ASSERT_NE(init, nullptr);
  EXPECT_EQ(init->type(), "fill_constant");
  EXPECT_FLOAT_EQ(*init->GetAttr<float>("value"), static_cast<float>(value));
  EXPECT_EQ(*init->GetAttr<int>("dtype"), static_cast<int>(dtype));
}

void ExpectValid(const Model& m) {
  Status s = ValidateProgram(m.main);
  EXPECT_TRUE(s.ok()) << s.ToString();
  s = ValidateProgram(m.startup);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(OptimizerTest, SgdAppendsOneUpdatePerParameterSortedByName) {
  Model m;
  SGDOptimizer sgd(LearningRate::Constant(0.1));
  auto pgs = m.Minimize(sgd);
  ASSERT_TRUE(pgs.ok()) << pgs.status().ToString();
  // Backward's pairs come back as they were (declaration order).
  ASSERT_EQ(pgs->size(), 2u);
  EXPECT_EQ((*pgs)[0].param, "w");
  EXPECT_EQ((*pgs)[0].grad, "w@GRAD");
  EXPECT_EQ((*pgs)[1].param, "b");
  EXPECT_EQ((*pgs)[1].grad, "b@GRAD");

  EXPECT_EQ(sgd.learning_rate_name(), "learning_rate_0");
  ExpectState(m, "learning_rate_0", {1}, DType::kFP32, 0.1);

  // The update ops are the last ops, sorted by parameter name as Fluid's
  // apply_gradients does.
  const auto updates = OpsWithRole(m.main, kOpRoleOptimize);
  ASSERT_EQ(Types(updates), (std::vector<std::string>{"sgd", "sgd"}));
  const Block& block = m.main.global_block();
  EXPECT_EQ(updates[1], block.ops().back().get());
  EXPECT_EQ(updates[0]->FirstInput("Param"), "b");
  EXPECT_EQ(updates[1]->FirstInput("Param"), "w");
  for (const OpDesc* op : updates) {
    const std::string p = op->FirstInput("Param");
    EXPECT_EQ(op->FirstInput("Grad"), p + "@GRAD");
    EXPECT_EQ(op->FirstInput("LearningRate"), "learning_rate_0");
    EXPECT_EQ(op->FirstOutput("ParamOut"), p);
    EXPECT_EQ(RoleVar(*op), (std::vector<std::string>{p, p + "@GRAD"}));
  }
  // No schedule: nothing of role LRSched, no counter.
  EXPECT_TRUE(OpsWithRole(m.main, kOpRoleLRSched).empty());
  EXPECT_EQ(block.FindVar("@LR_DECAY_COUNTER@"), nullptr);
  ExpectValid(m);
}

TEST(OptimizerTest, MomentumHasAZeroVelocityPerParameter) {
  Model m;
  MomentumOptimizer opt(LearningRate::Constant(0.05), 0.9, true);
  ASSERT_TRUE(m.Minimize(opt).ok());
  ExpectState(m, "w_velocity_0", {3, 1}, DType::kFP32, 0);
  ExpectState(m, "b_velocity_0", {1}, DType::kFP32, 0);
  const auto updates = OpsWithRole(m.main, kOpRoleOptimize);
  ASSERT_EQ(Types(updates), (std::vector<std::string>{"momentum", "momentum"}));
  for (const OpDesc* op : updates) {
    const std::string p = op->FirstInput("Param");
    EXPECT_EQ(op->FirstInput("Velocity"), p + "_velocity_0");
    EXPECT_EQ(op->FirstOutput("VelocityOut"), p + "_velocity_0");
    EXPECT_EQ(op->FirstOutput("ParamOut"), p);
    EXPECT_FLOAT_EQ(*op->GetAttr<float>("mu"), 0.9f);
    EXPECT_TRUE(*op->GetAttr<bool>("use_nesterov"));
    EXPECT_EQ(RoleVar(*op), (std::vector<std::string>{p, p + "@GRAD"}));
  }
  ExpectValid(m);
}

TEST(OptimizerTest, AdamHasMomentsAndBetaPowersUpdatedInPlace) {
  Model m;
  AdamOptimizer opt(LearningRate::Constant(0.01), 0.8, 0.95, 1e-6);
  ASSERT_TRUE(m.Minimize(opt).ok());
  for (const std::string p : {"w", "b"}) {
    const Dims dims = p == "w" ? Dims{3, 1} : Dims{1};
    ExpectState(m, p + "_moment1_0", dims, DType::kFP32, 0);
    ExpectState(m, p + "_moment2_0", dims, DType::kFP32, 0);
    ExpectState(m, p + "_beta1_pow_acc_0", {1}, DType::kFP32, 0.8);
    ExpectState(m, p + "_beta2_pow_acc_0", {1}, DType::kFP32, 0.95);
  }
  const auto updates = OpsWithRole(m.main, kOpRoleOptimize);
  ASSERT_EQ(Types(updates), (std::vector<std::string>{"adam", "adam"}));
  for (const OpDesc* op : updates) {
    const std::string p = op->FirstInput("Param");
    const std::vector<std::pair<std::string, std::string>> state = {
        {"Moment1", "moment1"},
        {"Moment2", "moment2"},
        {"Beta1Pow", "beta1_pow_acc"},
        {"Beta2Pow", "beta2_pow_acc"}};
    for (const auto& [slot, acc] : state) {
      EXPECT_EQ(op->FirstInput(slot), p + "_" + acc + "_0");
      EXPECT_EQ(op->FirstOutput(slot + "Out"), p + "_" + acc + "_0");
    }
    EXPECT_EQ(op->FirstOutput("ParamOut"), p);
    EXPECT_FLOAT_EQ(*op->GetAttr<float>("beta1"), 0.8f);
    EXPECT_FLOAT_EQ(*op->GetAttr<float>("beta2"), 0.95f);
    EXPECT_FLOAT_EQ(*op->GetAttr<float>("epsilon"), 1e-6f);
    EXPECT_EQ(RoleVar(*op), (std::vector<std::string>{p, p + "@GRAD"}));
  }
  ExpectValid(m);
}

TEST(OptimizerTest, ExponentialDecayComputesTheRateFromTheStepCounter) {
  Model m;
  SGDOptimizer sgd(LearningRate::ExponentialDecay(0.5, 10, 0.9, true));
  ASSERT_TRUE(m.Minimize(sgd).ok());
  EXPECT_EQ(sgd.learning_rate_name(), "learning_rate_0");
  ExpectState(m, "learning_rate_0", {1}, DType::kFP32, 0.5);
  // The counter starts at -1: the first run sees step 0.
  ExpectState(m, "@LR_DECAY_COUNTER@", {1}, DType::kInt64, -1);

  const auto sched = OpsWithRole(m.main, kOpRoleLRSched);
  ASSERT_EQ(Types(sched), (std::vector<std::string>{
                              "increment", "cast", "scale", "floor",
                              "fill_constant", "elementwise_pow", "scale"}));
  EXPECT_EQ(sched[0]->FirstInput("X"), "@LR_DECAY_COUNTER@");
  EXPECT_EQ(sched[0]->FirstOutput("Out"), "@LR_DECAY_COUNTER@");
  EXPECT_FLOAT_EQ(*sched[0]->GetAttr<float>("step"), 1.0f);
  EXPECT_EQ(sched[1]->FirstInput("X"), "@LR_DECAY_COUNTER@");
  EXPECT_FLOAT_EQ(*sched[2]->GetAttr<float>("scale"), 0.1f);
  EXPECT_FLOAT_EQ(*sched[4]->GetAttr<float>("value"), 0.9f);
  EXPECT_EQ(sched[5]->FirstInput("X"), sched[4]->FirstOutput("Out"));
  EXPECT_EQ(sched[5]->FirstInput("Y"), sched[3]->FirstOutput("Out"));
  EXPECT_FLOAT_EQ(*sched[6]->GetAttr<float>("scale"), 0.5f);
  EXPECT_EQ(sched[6]->FirstOutput("Out"), "learning_rate_0");
  for (const OpDesc* op : sched) EXPECT_TRUE(RoleVar(*op).empty());
  // The schedule runs before the updates that read it.
  const auto updates = OpsWithRole(m.main, kOpRoleOptimize);
  ASSERT_FALSE(updates.empty());
  EXPECT_LT(sched.back()->index(), updates.front()->index());
  ExpectValid(m);
}

TEST(OptimizerTest, ExponentialDecayWithoutStaircaseHasNoFloor) {
  Model m;
  SGDOptimizer sgd(LearningRate::ExponentialDecay(0.5, 10, 0.9, false));
  ASSERT_TRUE(m.Minimize(sgd).ok());
  EXPECT_EQ(
      Types(OpsWithRole(m.main, kOpRoleLRSched)),
      (std::vector<std::string>{"increment", "cast", "scale", "fill_constant",
                                "elementwise_pow", "scale"}));
}

TEST(OptimizerTest, PiecewiseDecayWritesFluidsLearningRateVar) {
  Model m;
  MomentumOptimizer opt(LearningRate::PiecewiseDecay({100, 200}, {1, 0.5, 0.1}),
                        0.9);
  ASSERT_TRUE(m.Minimize(opt).ok());
  EXPECT_EQ(opt.learning_rate_name(), "learning_rate");
  ExpectState(m, "learning_rate", {1}, DType::kFP32, 0);
  ExpectState(m, "@LR_DECAY_COUNTER@", {1}, DType::kInt64, -1);
  const auto sched = OpsWithRole(m.main, kOpRoleLRSched);
  ASSERT_GE(sched.size(), 2u);
  EXPECT_EQ(sched[0]->type(), "increment");
  EXPECT_EQ(sched[1]->type(), "cast");
  int less_than = 0;
  for (const OpDesc* op : sched) less_than += op->type() == "less_than";
  EXPECT_EQ(less_than, 2);
  EXPECT_EQ(sched.back()->FirstOutput("Out"), "learning_rate");
  for (const OpDesc* op : OpsWithRole(m.main, kOpRoleOptimize)) {
    EXPECT_EQ(op->FirstInput("LearningRate"), "learning_rate");
  }
  ExpectValid(m);
}

TEST(OptimizerTest, PiecewiseDecayNeedsOneMoreValueThanBoundaries) {
  Model m;
  SGDOptimizer sgd(LearningRate::PiecewiseDecay({100, 200}, {1, 0.5}));
  auto pgs = m.Minimize(sgd);
  ASSERT_FALSE(pgs.ok());
  EXPECT_THAT(pgs.status().message(), HasSubstr("piecewise_decay"));
}

TEST(OptimizerTest, ExponentialDecayNeedsPositiveDecaySteps) {
  Model m;
  SGDOptimizer sgd(LearningRate::ExponentialDecay(0.1, 0, 0.5, false));
  auto pgs = m.Minimize(sgd);
  ASSERT_FALSE(pgs.ok());
  EXPECT_THAT(pgs.status().message(), HasSubstr("decay_steps"));
}

TEST(OptimizerTest, ClipByGlobalNormFollowsFluidsOpSequence) {
  Model m;
  OptimizerOptions options;
  options.clip_global_norm = 1.5;
  SGDOptimizer sgd(LearningRate::Constant(0.1), options);
  ASSERT_TRUE(m.Minimize(sgd).ok());
  const auto opt = OpsWithRole(m.main, kOpRoleOptimize);
  ASSERT_EQ(Types(opt),
            (std::vector<std::string>{
                "squared_l2_norm", "squared_l2_norm", "sum", "sqrt",
                "fill_constant", "elementwise_max", "elementwise_div",
                "elementwise_mul", "elementwise_mul", "sgd", "sgd"}));
  // Per-gradient ops in parameter-name order with their own pair; the
  // shared ones carry the last pair, as Fluid's _optimized_guard leaves it.
  EXPECT_EQ(opt[0]->FirstInput("X"), "b@GRAD");
  EXPECT_EQ(RoleVar(*opt[0]), (std::vector<std::string>{"b", "b@GRAD"}));
  EXPECT_EQ(opt[1]->FirstInput("X"), "w@GRAD");
  EXPECT_EQ(RoleVar(*opt[1]), (std::vector<std::string>{"w", "w@GRAD"}));
  EXPECT_EQ(opt[2]->Input("X"),
            (std::vector<std::string>{opt[0]->FirstOutput("Out"),
                                      opt[1]->FirstOutput("Out")}));
  for (int i = 2; i <= 6; ++i) {
    EXPECT_EQ(RoleVar(*opt[i]), (std::vector<std::string>{"w", "w@GRAD"}));
  }
  EXPECT_FLOAT_EQ(*opt[4]->GetAttr<float>("value"), 1.5f);
  // factor = clip_norm / max(clip_norm, norm).
  EXPECT_EQ(opt[5]->FirstInput("X"), opt[4]->FirstOutput("Out"));
  EXPECT_EQ(opt[5]->FirstInput("Y"), opt[3]->FirstOutput("Out"));
  EXPECT_EQ(opt[6]->FirstInput("X"), opt[4]->FirstOutput("Out"));
  EXPECT_EQ(opt[6]->FirstInput("Y"), opt[5]->FirstOutput("Out"));
  // Gradients scaled in place.
  for (int i : {7, 8}) {
    const std::string g = i == 7 ? "b@GRAD" : "w@GRAD";
    EXPECT_EQ(opt[i]->FirstInput("X"), g);
    EXPECT_EQ(opt[i]->FirstInput("Y"), opt[6]->FirstOutput("Out"));
    EXPECT_EQ(opt[i]->FirstOutput("Out"), g);
  }
  for (const OpDesc* op : opt) {
    if (op->type() != "sgd") {
      EXPECT_EQ(*op->GetAttr<std::string>("op_namescope"), "/gradient_clip/");
    }
  }
  ExpectValid(m);
}

TEST(OptimizerTest, L2DecayFollowsClippingAndAddsScaledParamsToGrads) {
  Model m;
  OptimizerOptions options;
  options.l2_decay = 0.01;
  options.clip_global_norm = 2;
  AdamOptimizer adam(LearningRate::Constant(0.1), 0.9, 0.999, 1e-8, options);
  ASSERT_TRUE(m.Minimize(adam).ok());
  const auto opt = OpsWithRole(m.main, kOpRoleOptimize);
  ASSERT_EQ(opt.size(), 9u + 4u + 2u);
  // Fluid's apply_gradients: clip, then regularisation, then updates.
  EXPECT_EQ(Types({opt.begin() + 9, opt.end()}),
            (std::vector<std::string>{"scale", "sum", "scale", "sum", "adam",
                                      "adam"}));
  for (int i : {9, 11}) {
    const std::string p = i == 9 ? "b" : "w";
    const OpDesc& scale = *opt[i];
    const OpDesc& sum = *opt[i + 1];
    EXPECT_EQ(scale.FirstInput("X"), p);
    EXPECT_FLOAT_EQ(*scale.GetAttr<float>("scale"), 0.01f);
    EXPECT_EQ(sum.Input("X"), (std::vector<std::string>{
                                  p + "@GRAD", scale.FirstOutput("Out")}));
    EXPECT_EQ(sum.FirstOutput("Out"), p + "@GRAD");
    EXPECT_EQ(RoleVar(scale), (std::vector<std::string>{p, p + "@GRAD"}));
    EXPECT_EQ(RoleVar(sum), (std::vector<std::string>{p, p + "@GRAD"}));
    EXPECT_EQ(*sum.GetAttr<std::string>("op_namescope"), "/regularization/");
    // The regularisation term has the parameter's shape.
    const VarDesc* term =
        m.main.global_block().FindVar(scale.FirstOutput("Out"));
    ASSERT_NE(term, nullptr);
    EXPECT_EQ(term->dims(), p == "w" ? Dims({3, 1}) : Dims({1}));
    EXPECT_FALSE(term->persistable());
  }
  ExpectValid(m);
}

TEST(OptimizerTest, NoGradSetAndNullLoss) {
  Model m;
  SGDOptimizer sgd(LearningRate::Constant(0.1));
  auto pgs = sgd.Minimize(m.b, m.loss, {"b"});
  ASSERT_TRUE(pgs.ok()) << pgs.status().ToString();
  ASSERT_EQ(pgs->size(), 1u);
  EXPECT_EQ((*pgs)[0].param, "w");
  EXPECT_THAT(Types(OpsWithRole(m.main, kOpRoleOptimize)), ElementsAre("sgd"));

  Model n;
  SGDOptimizer other(LearningRate::Constant(0.1));
  auto bad = other.Minimize(n.b, nullptr);
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace parex
