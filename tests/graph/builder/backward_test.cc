#include "graph/builder/backward.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "graph/builder/layers.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"

namespace parex {
namespace {

using Names = std::vector<std::string>;

class BackwardTest : public ::testing::Test {
 protected:
  BackwardTest() : b_(&main_, &startup_) {}

  Block& block() { return main_.global_block(); }

  VarDesc* Data(const std::string& name, const Dims& shape,
                DType dtype = DType::kFP32) {
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
  VarDesc* Op(const std::string& type, const Names& x, const Names& y = {}) {
    std::map<std::string, Names> in{{"X", x}};
    if (!y.empty()) in["Y"] = y;
    VarDesc* out = b_.CreateTemporary(type, DType::kFP32);
    auto op = b_.AppendOp(type, in, {{"Out", {out->name()}}});
    EXPECT_TRUE(op.ok()) << op.status().ToString();
    return out;
  }
  VarDesc* Mean(VarDesc* x) {
    auto v = layers::Mean(b_, x);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return *v;
  }
  // fit_a_line: fc(13 -> 1) -> square_error_cost -> mean.
  VarDesc* FitALine() {
    VarDesc* x = Data("x", {13});
    VarDesc* y = Data("y", {1});
    VarDesc* pred = Fc(x, 1);
    auto cost = layers::SquareErrorCost(b_, pred, y);
    EXPECT_TRUE(cost.ok());
    return Mean(*cost);
  }

  // The ops appended by AppendBackward: those after the first `forward`.
  std::vector<const OpDesc*> BackwardOps(int forward) {
    std::vector<const OpDesc*> ops;
    for (int i = forward; i < block().num_ops(); ++i)
      ops.push_back(&block().op(i));
    return ops;
  }
  static Names Types(const std::vector<const OpDesc*>& ops) {
    Names t;
    for (const OpDesc* op : ops) t.push_back(op->type());
    return t;
  }
  static int Role(const OpDesc& op) { return *op.GetAttr<int>("op_role"); }
  static Names RoleVar(const OpDesc& op) {
    if (!op.HasAttr("op_role_var")) return {};
    return *op.GetAttr<Names>("op_role_var");
  }
  // Index (in `ops`) of the op writing `var`, or -1.
  static int Writer(const std::vector<const OpDesc*>& ops,
                    const std::string& var) {
    for (size_t i = 0; i < ops.size(); ++i) {
      auto outs = ops[i]->OutputArgumentNames();
      if (std::find(outs.begin(), outs.end(), var) != outs.end()) return i;
    }
    return -1;
  }

  Program main_;
  Program startup_;
  ProgramBuilder b_;
};

TEST_F(BackwardTest, FitALineStructure) {
  VarDesc* loss = FitALine();
  const int forward = block().num_ops();
  auto pairs = AppendBackward(&main_, loss->name());
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  ASSERT_EQ(pairs->size(), 2u);
  EXPECT_EQ((*pairs)[0].param, "fc_0.w_0");
  EXPECT_EQ((*pairs)[0].grad, "fc_0.w_0@GRAD");
  EXPECT_EQ((*pairs)[1].param, "fc_0.b_0");
  EXPECT_EQ((*pairs)[1].grad, "fc_0.b_0@GRAD");

  auto ops = BackwardOps(forward);
  ASSERT_EQ(Types(ops), (Names{"fill_constant", "mean_grad", "square_grad",
                               "elementwise_sub_grad", "elementwise_add_grad",
                               "mul_grad"}));
  // The loss gradient: 1.0 into loss@GRAD, Backward|Loss.
  const OpDesc& fill = *ops[0];
  EXPECT_EQ(fill.FirstOutput("Out"), "mean_0.tmp_0@GRAD");
  EXPECT_EQ(Role(fill), 0x101);
  EXPECT_FLOAT_EQ(*fill.GetAttr<float>("value"), 1.0f);
  EXPECT_EQ(*fill.GetAttr<std::vector<int64_t>>("shape"),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(*fill.GetAttr<int>("dtype"), static_cast<int>(DType::kFP32));
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_EQ(Role(*ops[i]), 0x1);
  // The loss op is marked Forward|Loss.
  EXPECT_EQ(Role(block().op(forward - 1)), 0x100);
  EXPECT_EQ(Role(block().op(0)), 0x0);

  // Slots follow the Grad specs; the label needs no gradient.
  const OpDesc& sub = *ops[3];
  EXPECT_EQ(sub.Output("X@GRAD"), (Names{"fc_0.tmp_1@GRAD"}));
  EXPECT_EQ(sub.Output("Y@GRAD"), Names{});
  const OpDesc& add = *ops[4];
  EXPECT_EQ(add.Input("Out@GRAD"), (Names{"fc_0.tmp_1@GRAD"}));
  EXPECT_EQ(add.Output("X@GRAD"), (Names{"fc_0.tmp_0@GRAD"}));
  EXPECT_EQ(add.Output("Y@GRAD"), (Names{"fc_0.b_0@GRAD"}));
  EXPECT_EQ(*add.GetAttr<int>("axis"), 1);
  const OpDesc& mul = *ops[5];
  EXPECT_EQ(mul.Input("X"), (Names{"x"}));
  EXPECT_EQ(mul.Input("Y"), (Names{"fc_0.w_0"}));
  EXPECT_EQ(mul.Output("X@GRAD"), Names{});  // x is stop_gradient data
  EXPECT_EQ(mul.Output("Y@GRAD"), (Names{"fc_0.w_0@GRAD"}));
  EXPECT_EQ(*mul.GetAttr<int>("x_num_col_dims"), 1);
  // op_role_var pairs on the ops producing each parameter's gradient.
  EXPECT_EQ(RoleVar(add), (Names{"fc_0.b_0", "fc_0.b_0@GRAD"}));
  EXPECT_EQ(RoleVar(mul), (Names{"fc_0.w_0", "fc_0.w_0@GRAD"}));
  EXPECT_EQ(RoleVar(sub), Names{});

  // Gradient vars carry the forward var's dtype and dims.
  const VarDesc* gw = block().FindLocalVar("fc_0.w_0@GRAD");
  ASSERT_NE(gw, nullptr);
  EXPECT_EQ(gw->dims(), (Dims{13, 1}));
  EXPECT_EQ(gw->dtype(), DType::kFP32);
  EXPECT_EQ(block().FindLocalVar("fc_0.tmp_0@GRAD")->dims(), (Dims{-1, 1}));
  EXPECT_EQ(block().FindLocalVar("x@GRAD"), nullptr);
  EXPECT_EQ(block().FindLocalVar("y@GRAD"), nullptr);
  Status valid = ValidateProgram(main_);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
}

TEST_F(BackwardTest, TwoConsumersGetRenamedContributionsAndASum) {
  VarDesc* x = Data("x", {4});
  VarDesc* h = Fc(x, 4, "relu");  // fc_0.tmp_2, read by two layers
  VarDesc* a = Fc(h, 3);          // fc_1
  VarDesc* c = Fc(h, 3);          // fc_2
  VarDesc* s = Op("elementwise_add", {a->name()}, {c->name()});
  VarDesc* loss = Mean(s);
  const int forward = block().num_ops();
  auto pairs = AppendBackward(&main_, loss->name());
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  EXPECT_EQ(pairs->size(), 6u);
  auto ops = BackwardOps(forward);

  const std::string g = "fc_0.tmp_2@GRAD";
  const int first = Writer(ops, g + "@RENAME@0");
  const int second = Writer(ops, g + "@RENAME@1");
  const int sum = Writer(ops, g);
  ASSERT_GE(first, 0);
  ASSERT_GE(second, 0);
  ASSERT_GE(sum, 0);
  // Reverse order: fc_2's mul_grad contributes first, then fc_1's.
  EXPECT_EQ(ops[first]->type(), "mul_grad");
  EXPECT_EQ(ops[first]->FirstInput("Y"), "fc_2.w_0");
  EXPECT_EQ(ops[second]->FirstInput("Y"), "fc_1.w_0");
  EXPECT_LT(first, second);
  // The sum comes right after the last contribution, before the reader.
  EXPECT_EQ(sum, second + 1);
  EXPECT_EQ(ops[sum]->type(), "sum");
  EXPECT_EQ(ops[sum]->Input("X"), (Names{g + "@RENAME@0", g + "@RENAME@1"}));
  EXPECT_EQ(Role(*ops[sum]), 0x1);
  EXPECT_EQ(ops[sum + 1]->type(), "relu_grad");
  EXPECT_EQ(ops[sum + 1]->Input("Out@GRAD"), (Names{g}));
  const VarDesc* part = block().FindLocalVar(g + "@RENAME@1");
  ASSERT_NE(part, nullptr);
  EXPECT_EQ(part->dims(), (Dims{-1, 4}));
  Status valid = ValidateProgram(main_);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
}

TEST_F(BackwardTest, SharedParameterGradientIsSummedWithRoleVarOnTheSum) {
  VarDesc* x = Data("x", {4});
  VarDesc* a = Fc(x, 4, "tanh", "shared_w", /*has_bias=*/false);
  VarDesc* c = Fc(a, 4, "", "shared_w", /*has_bias=*/false);
  VarDesc* loss = Mean(c);
  const int forward = block().num_ops();
  auto pairs = AppendBackward(&main_, loss->name());
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  ASSERT_EQ(pairs->size(), 1u);
  EXPECT_EQ((*pairs)[0].grad, "shared_w@GRAD");
  auto ops = BackwardOps(forward);
  const int sum = Writer(ops, "shared_w@GRAD");
  ASSERT_GE(sum, 0);
  EXPECT_EQ(ops[sum]->type(), "sum");
  EXPECT_EQ(sum, static_cast<int>(ops.size()) - 1);
  EXPECT_EQ(RoleVar(*ops[sum]), (Names{"shared_w", "shared_w@GRAD"}));
  for (int i = 0; i < sum; ++i) EXPECT_EQ(RoleVar(*ops[i]), Names{});
}

TEST_F(BackwardTest, NoGradSetAndStopGradientAreRespected) {
  VarDesc* x = Data("x", {3});
  layers::FcOptions o;
  o.size = 2;
  o.param_attr.trainable = false;  // fc_0.w_0 is stop_gradient
  auto h = layers::Fc(b_, x, o);
  ASSERT_TRUE(h.ok());
  VarDesc* y = Fc(*h, 2);  // fc_1
  VarDesc* loss = Mean(y);
  const int forward = block().num_ops();
  auto pairs = AppendBackward(&main_, loss->name(), {"fc_1.b_0"});
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  Names params;
  for (const auto& pg : *pairs) params.push_back(pg.param);
  // fc_0.w_0 frozen, fc_1.b_0 in no_grad_set.
  EXPECT_EQ(params, (Names{"fc_0.b_0", "fc_1.w_0"}));
  auto ops = BackwardOps(forward);
  EXPECT_EQ(Writer(ops, "fc_0.w_0@GRAD"), -1);
  EXPECT_EQ(Writer(ops, "fc_1.b_0@GRAD"), -1);
  EXPECT_EQ(block().FindLocalVar("fc_1.b_0@GRAD"), nullptr);
  // fc_0's mul_grad would only produce x@GRAD and fc_0.w_0@GRAD: skipped.
  EXPECT_EQ(Types(ops),
            (Names{"fill_constant", "mean_grad", "elementwise_add_grad",
                   "mul_grad", "elementwise_add_grad"}));
  EXPECT_EQ(ops[2]->Output("Y@GRAD"), Names{});
  Status valid = ValidateProgram(main_);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
}

TEST_F(BackwardTest, CrossEntropyLabelNeverGetsAGradient) {
  VarDesc* x = Data("x", {3});
  VarDesc* prob = Fc(x, 3, "softmax");
  // A soft label that is not stop_gradient and depends on a parameter.
  VarDesc* label = Fc(x, 3, "softmax");
  auto ce = layers::CrossEntropy(b_, prob, label, /*soft_label=*/true);
  ASSERT_TRUE(ce.ok()) << ce.status().ToString();
  VarDesc* loss = Mean(*ce);
  auto pairs = AppendBackward(&main_, loss->name());
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  Names params;
  for (const auto& pg : *pairs) params.push_back(pg.param);
  EXPECT_EQ(params, (Names{"fc_0.w_0", "fc_0.b_0"}));
  EXPECT_EQ(block().FindLocalVar(label->name() + "@GRAD"), nullptr);
  auto fc1 = AppendBackward(&main_, loss->name(), {}, {"fc_1.w_0"});
  EXPECT_FALSE(fc1.ok());
}

TEST_F(BackwardTest, GradOpsComeInReverseOrder) {
  VarDesc* x = Data("x", {4});
  VarDesc* h = Fc(x, 5, "relu");
  VarDesc* logits = Fc(h, 3);
  VarDesc* label = Data("label", {1}, DType::kInt64);
  auto loss = layers::SoftmaxWithCrossEntropy(b_, logits, label);
  ASSERT_TRUE(loss.ok());
  VarDesc* avg = Mean(*loss);
  const int forward = block().num_ops();
  ASSERT_TRUE(AppendBackward(&main_, avg->name()).ok());
  auto ops = BackwardOps(forward);
  EXPECT_EQ(Types(ops), (Names{"fill_constant", "mean_grad",
                               "softmax_with_cross_entropy_grad",
                               "elementwise_add_grad", "mul_grad", "relu_grad",
                               "elementwise_add_grad", "mul_grad"}));
  const OpDesc& swce = *ops[2];
  EXPECT_EQ(swce.Input("Label"), (Names{"label"}));
  EXPECT_EQ(swce.Input("Softmax"),
            (Names{"softmax_with_cross_entropy_0.tmp_0"}));
  EXPECT_EQ(swce.Output("Logits@GRAD"), (Names{logits->name() + "@GRAD"}));
  EXPECT_TRUE(*swce.GetAttr<bool>("numeric_stable_mode"));
  EXPECT_EQ(ops[5]->Input("Out"), (Names{h->name()}));
  Status valid = ValidateProgram(main_);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
}

TEST_F(BackwardTest, SpecialGradientMakers) {
  VarDesc* x = Data("x", {4});
  VarDesc* h = Fc(x, 4);  // [-1, 4]
  auto scaled = b_.AppendOp("scale", {{"X", {h->name()}}},
                            {{"Out", {"scaled"}}}, [](OpDesc& op) {
                              op.SetAttr<float>("scale", 3.0f);
                              op.SetAttr<float>("bias", 1.0f);
                            });
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  ASSERT_TRUE(
      b_.AppendOp("assign", {{"X", {"scaled"}}}, {{"Out", {"copy"}}}).ok());
  ASSERT_TRUE(b_.AppendOp("split", {{"X", {"copy"}}},
                          {{"Out", {"part0", "part1"}}},
                          [](OpDesc& op) {
                            op.SetAttr<int>("num", 2);
                            op.SetAttr<int>("axis", 1);
                          })
                  .ok());
  // Only part0 reaches the loss; part1 gets a zero gradient.
  ASSERT_TRUE(
      b_.AppendOp("sum", {{"X", {"part0", "part0"}}}, {{"Out", {"twice"}}})
          .ok());
  VarDesc* loss = Mean(block().FindLocalVar("twice"));
  const int forward = block().num_ops();
  auto pairs = AppendBackward(&main_, loss->name());
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  auto ops = BackwardOps(forward);
  EXPECT_EQ(Types(ops), (Names{"fill_constant", "mean_grad", "scale", "scale",
                               "sum", "scale", "concat", "assign", "scale",
                               "elementwise_add_grad", "mul_grad"}));
  // sum -> one scale(1) per input; both write part0@GRAD, so they are summed.
  EXPECT_EQ(ops[2]->Output("Out"), (Names{"part0@GRAD@RENAME@0"}));
  EXPECT_EQ(ops[3]->Output("Out"), (Names{"part0@GRAD@RENAME@1"}));
  EXPECT_EQ(ops[2]->Input("X"), (Names{"twice@GRAD"}));
  EXPECT_FLOAT_EQ(*ops[2]->GetAttr<float>("scale"), 1.0f);
  // split -> concat of the output gradients; part1's is zero: its dims are
  // not static, so scale(part1, 0).
  EXPECT_EQ(ops[5]->Input("X"), (Names{"part1"}));
  EXPECT_FLOAT_EQ(*ops[5]->GetAttr<float>("scale"), 0.0f);
  EXPECT_EQ(ops[5]->Output("Out"), (Names{"part1@GRAD"}));
  EXPECT_EQ(ops[6]->Input("X"), (Names{"part0@GRAD", "part1@GRAD"}));
  EXPECT_EQ(ops[6]->Output("Out"), (Names{"copy@GRAD"}));
  EXPECT_EQ(*ops[6]->GetAttr<int>("axis"), 1);
  // assign -> assign; scale -> scale with the same factor and no bias.
  EXPECT_EQ(ops[7]->Input("X"), (Names{"copy@GRAD"}));
  EXPECT_EQ(ops[7]->Output("Out"), (Names{"scaled@GRAD"}));
  EXPECT_EQ(ops[8]->Input("X"), (Names{"scaled@GRAD"}));
  EXPECT_EQ(ops[8]->Output("Out"), (Names{h->name() + "@GRAD"}));
  EXPECT_FLOAT_EQ(*ops[8]->GetAttr<float>("scale"), 3.0f);
  EXPECT_FLOAT_EQ(*ops[8]->GetAttr<float>("bias"), 0.0f);
  Status valid = ValidateProgram(main_);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
}

TEST_F(BackwardTest, CastGradientSwapsDTypes) {
  VarDesc* x = Data("x", {4});
  VarDesc* h = Fc(x, 2);
  ASSERT_TRUE(b_.AppendOp("cast", {{"X", {h->name()}}}, {{"Out", {"h64"}}},
                          [](OpDesc& op) {
                            op.SetAttr<int>("in_dtype", 5);
                            op.SetAttr<int>("out_dtype", 6);
                          })
                  .ok());
  VarDesc* loss = Mean(block().FindLocalVar("h64"));
  EXPECT_EQ(loss->dtype(), DType::kFP64);
  const int forward = block().num_ops();
  ASSERT_TRUE(AppendBackward(&main_, loss->name()).ok());
  auto ops = BackwardOps(forward);
  EXPECT_EQ(*ops[0]->GetAttr<int>("dtype"), static_cast<int>(DType::kFP64));
  ASSERT_EQ(ops[2]->type(), "cast");
  EXPECT_EQ(*ops[2]->GetAttr<int>("in_dtype"), 6);
  EXPECT_EQ(*ops[2]->GetAttr<int>("out_dtype"), 5);
  EXPECT_EQ(ops[2]->Output("Out"), (Names{h->name() + "@GRAD"}));
  EXPECT_EQ(block().FindLocalVar("h64@GRAD")->dtype(), DType::kFP64);
}

TEST_F(BackwardTest, ParameterListSelectsPairsAndRoleVars) {
  VarDesc* loss = FitALine();
  auto pairs = AppendBackward(&main_, loss->name(), {}, {"fc_0.w_0"});
  ASSERT_TRUE(pairs.ok()) << pairs.status().ToString();
  ASSERT_EQ(pairs->size(), 1u);
  EXPECT_EQ((*pairs)[0].param, "fc_0.w_0");
  // The bias gradient is computed but carries no op_role_var.
  for (const auto& op : block().ops()) {
    if (op->type() == "elementwise_add_grad") {
      EXPECT_EQ(op->Output("Y@GRAD"), (Names{"fc_0.b_0@GRAD"}));
      EXPECT_EQ(RoleVar(*op), Names{});
    }
  }
}

TEST_F(BackwardTest, Errors) {
  VarDesc* loss = FitALine();
  const int ops = block().num_ops();
  auto missing = AppendBackward(&main_, "no_such_loss");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no_such_loss"), std::string::npos);
  // fc_0.tmp_1 is [-1, 1]: no scalar.
  auto vector_loss = AppendBackward(&main_, "fc_0.tmp_1");
  EXPECT_EQ(vector_loss.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(vector_loss.status().message().find("fc_0.tmp_1"),
            std::string::npos);
  auto unknown_param = AppendBackward(&main_, loss->name(), {}, {"nope"});
  EXPECT_EQ(unknown_param.status().code(), StatusCode::kNotFound);
  auto no_path =
      AppendBackward(&main_, loss->name(), {"fc_0.b_0"}, {"fc_0.b_0"});
  EXPECT_EQ(no_path.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(no_path.status().message().find("fc_0.b_0"), std::string::npos);
  EXPECT_EQ(block().num_ops(), ops);  // errors change nothing
  EXPECT_EQ(Role(block().op(ops - 1)), 0);

  ASSERT_TRUE(AppendBackward(&main_, loss->name()).ok());
  auto again = AppendBackward(&main_, loss->name());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(BackwardTest, OpWithoutGradientOnThePathIsAnError) {
  ASSERT_TRUE(b_.CreatePersistable("lr", {1}, DType::kFP32, 0.1).ok());
  for (const char* name : {"w", "v"}) {
    ASSERT_TRUE(b_.CreateParameter(name, {4, 4}, DType::kFP32,
                                   Initializer::Constant(1), {})
                    .ok());
  }
  // sgd has no gradient op; its output feeds the loss.
  ASSERT_TRUE(
      b_.AppendOp("sgd",
                  {{"Param", {"w"}}, {"Grad", {"v"}}, {"LearningRate", {"lr"}}},
                  {{"ParamOut", {"w_out"}}})
          .ok());
  VarDesc* loss = Mean(block().FindLocalVar("w_out"));
  auto r = AppendBackward(&main_, loss->name());
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'sgd'"), std::string::npos);
}

TEST_F(BackwardTest, OpsOffThePathAreSkipped) {
  VarDesc* x = Data("x", {4});
  VarDesc* logits = Fc(x, 3);
  VarDesc* label = Data("label", {1}, DType::kInt64);
  auto acc = layers::Accuracy(b_, logits, label);
  ASSERT_TRUE(acc.ok());
  auto loss = layers::SoftmaxWithCrossEntropy(b_, logits, label);
  ASSERT_TRUE(loss.ok());
  VarDesc* avg = Mean(*loss);
  const int forward = block().num_ops();
  ASSERT_TRUE(AppendBackward(&main_, avg->name()).ok());
  auto ops = BackwardOps(forward);
  for (const OpDesc* op : ops) {
    EXPECT_NE(op->type(), "top_k_grad");
    EXPECT_NE(op->type(), "accuracy");
  }
  EXPECT_EQ(ops.size(), 5u);
}

// Paddle 2.6 gives fill_constant_batch_size_like no gradient op: a loss
// that reads it differentiates past it, and the input it takes its batch
// from gets a gradient only through its other readers. stack_grad keeps
// the positions of its inputs, "" for one that needs no gradient.
TEST_F(BackwardTest,
       FillConstantBatchSizeLikePassesNoGradientAndStackKeepsPositions) {
  VarDesc* x = Data("x", {3});
  VarDesc* h = Fc(x, 3);
  VarDesc* fill = b_.CreateTemporary("fill", DType::kFP32);
  ASSERT_TRUE(b_.AppendOp("fill_constant_batch_size_like",
                          {{"Input", {h->name()}}}, {{"Out", {fill->name()}}},
                          [](OpDesc& op) {
                            op.SetAttr("shape", std::vector<int>{-1, 3});
                          })
                  .ok());
  VarDesc* stacked = b_.CreateTemporary("stack", DType::kFP32);
  ASSERT_TRUE(b_.AppendOp("stack",
                          {{"X", {x->name(), h->name(), fill->name()}}},
                          {{"Y", {stacked->name()}}})
                  .ok());
  VarDesc* loss = Mean(stacked);
  const int forward = block().num_ops();
  ASSERT_TRUE(AppendBackward(&main_, loss->name()).ok());
  const auto ops = BackwardOps(forward);
  const int stack_grad = Writer(ops, GradVarName(h->name()));
  ASSERT_GE(stack_grad, 0);
  EXPECT_EQ(ops[stack_grad]->type(), "stack_grad");
  EXPECT_EQ(ops[stack_grad]->Input("X"),
            (Names{x->name(), h->name(), fill->name()}));
  EXPECT_EQ(ops[stack_grad]->Output("X@GRAD"),
            (Names{"", GradVarName(h->name()), ""}));
  for (const OpDesc* op : ops)
    EXPECT_NE(op->type(), "fill_constant_batch_size_like");
  Status valid = ValidateProgram(main_);
  EXPECT_TRUE(valid.ok()) << valid.ToString();
}

}  // namespace
}  // namespace parex
