// Tests of graph/builder/prune.h on a hand-built training program (no builder,
// no executor): which ops survive, the feed/fetch ops and holders, is_test.
#include "graph/builder/prune.h"

#include <gtest/gtest.h>

#include <map>

#include "graph/ir/op_role.h"

namespace parex {
namespace {

using Slots = std::map<std::string, std::vector<std::string>>;

VarDesc* Declare(Block& block, const std::string& name, DType dtype,
                 const Dims& dims, bool persistable = false) {
  VarDesc* var = block.Var(name);
  var->SetDType(dtype);
  var->SetDims(dims);
  var->SetPersistable(persistable);
  return var;
}

OpDesc* Add(Block& block, const std::string& type, const Slots& inputs,
            const Slots& outputs, int role = kOpRoleForward) {
  OpDesc* op = block.AppendOp(type);
  for (const auto& [slot, args] : inputs) op->SetInput(slot, args);
  for (const auto& [slot, args] : outputs) op->SetOutput(slot, args);
  op->SetAttr<int>("op_role", role);
  return op;
}

// image -> fc (mul + elementwise_add) -> batch_norm -> relu -> dropout ->
// softmax = prediction; cross_entropy(prediction, label) -> mean = loss;
// then a piece of backward and an sgd update of fc_0.w_0 (in place).
Program TrainingProgram() {
  Program p;
  Block& b = p.global_block();
  const DType f = DType::kFP32;
  Declare(b, "image", f, {-1, 4});
  Declare(b, "label", DType::kInt64, {-1, 1});
  VarDesc* w = Declare(b, "fc_0.w_0", f, {4, 3}, true);
  w->SetIsParameter(true);
  Declare(b, "fc_0.b_0", f, {3}, true)->SetIsParameter(true);
  Declare(b, "fc_0.tmp_0", f, {-1, 3});
  Declare(b, "fc_0.tmp_1", f, {-1, 3});
  for (const char* n : {"batch_norm_0.w_0", "batch_norm_0.b_0",
                        "batch_norm_0.w_1", "batch_norm_0.w_2"}) {
    Declare(b, n, f, {3}, true);
  }
  Declare(b, "batch_norm_0.tmp_0", f, {3});
  Declare(b, "batch_norm_0.tmp_1", f, {3});
  Declare(b, "batch_norm_0.tmp_2", f, {-1, 3});
  Declare(b, "relu_0.tmp_0", f, {-1, 3});
  Declare(b, "dropout_0.tmp_0", f, {-1, 3});
  Declare(b, "dropout_0.tmp_1", DType::kUInt8, {-1, 3});
  Declare(b, "softmax_0.tmp_0", f, {-1, 3});
  Declare(b, "cross_entropy_0.tmp_0", f, {-1, 1});
  Declare(b, "mean_0.tmp_0", f, {1});
  Declare(b, "mean_0.tmp_0@GRAD", f, {1});
  Declare(b, "cross_entropy_0.tmp_0@GRAD", f, {-1, 1});
  Declare(b, "fc_0.w_0@GRAD", f, {4, 3});
  Declare(b, "learning_rate_0", f, {1}, true);

  Add(b, "mul", {{"X", {"image"}}, {"Y", {"fc_0.w_0"}}},
      {{"Out", {"fc_0.tmp_0"}}});
  Add(b, "elementwise_add", {{"X", {"fc_0.tmp_0"}}, {"Y", {"fc_0.b_0"}}},
      {{"Out", {"fc_0.tmp_1"}}})
      ->SetAttr<int>("axis", 1);
  OpDesc* bn = Add(b, "batch_norm",
                   {{"X", {"fc_0.tmp_1"}},
                    {"Scale", {"batch_norm_0.w_0"}},
                    {"Bias", {"batch_norm_0.b_0"}},
                    {"Mean", {"batch_norm_0.w_1"}},
                    {"Variance", {"batch_norm_0.w_2"}}},
                   {{"Y", {"batch_norm_0.tmp_2"}},
                    {"MeanOut", {"batch_norm_0.w_1"}},
                    {"VarianceOut", {"batch_norm_0.w_2"}},
                    {"SavedMean", {"batch_norm_0.tmp_0"}},
                    {"SavedVariance", {"batch_norm_0.tmp_1"}}});
  bn->SetAttr<bool>("is_test", false);
  Add(b, "relu", {{"X", {"batch_norm_0.tmp_2"}}}, {{"Out", {"relu_0.tmp_0"}}});
  // Dropout stores is_test as INT, as some Paddle versions do.
  Add(b, "dropout", {{"X", {"relu_0.tmp_0"}}},
      {{"Out", {"dropout_0.tmp_0"}}, {"Mask", {"dropout_0.tmp_1"}}})
      ->SetAttr<int>("is_test", 0);
  Add(b, "softmax", {{"X", {"dropout_0.tmp_0"}}},
      {{"Out", {"softmax_0.tmp_0"}}});
  Add(b, "cross_entropy", {{"X", {"softmax_0.tmp_0"}}, {"Label", {"label"}}},
      {{"Y", {"cross_entropy_0.tmp_0"}}});
  Add(b, "mean", {{"X", {"cross_entropy_0.tmp_0"}}},
      {{"Out", {"mean_0.tmp_0"}}}, kOpRoleForward | kOpRoleLoss);
  OpDesc* fill = Add(b, "fill_constant", {}, {{"Out", {"mean_0.tmp_0@GRAD"}}},
                     kOpRoleBackward | kOpRoleLoss);
  fill->SetAttr<std::vector<int64_t>>("shape", {1});
  fill->SetAttr<float>("value", 1.0f);
  Add(b, "mean_grad",
      {{"X", {"cross_entropy_0.tmp_0"}}, {"Out@GRAD", {"mean_0.tmp_0@GRAD"}}},
      {{"X@GRAD", {"cross_entropy_0.tmp_0@GRAD"}}}, kOpRoleBackward);
  // The update writes the parameter in place: it must not be kept although
  // fc_0.w_0 is needed.
  Add(b, "sgd",
      {{"Param", {"fc_0.w_0"}},
       {"LearningRate", {"learning_rate_0"}},
       {"Grad", {"fc_0.w_0@GRAD"}}},
      {{"ParamOut", {"fc_0.w_0"}}}, kOpRoleOptimize);
  return p;
}

std::vector<std::string> OpTypes(const Program& p) {
  std::vector<std::string> types;
  for (const auto& op : p.global_block().ops()) types.push_back(op->type());
  return types;
}

TEST(PruneTest, KeepsOnlyTheForwardOpsOfTheFetchTargets) {
  Program train = TrainingProgram();
  auto pruned = Prune(train, {"image"}, {"softmax_0.tmp_0"});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(
      OpTypes(*pruned),
      (std::vector<std::string>{"feed", "mul", "elementwise_add", "batch_norm",
                                "relu", "dropout", "softmax", "fetch"}));
  // Only the vars those ops use (no label, loss or gradients), plus the
  // feed and fetch holders.
  const Block& b = pruned->global_block();
  EXPECT_EQ(b.FindLocalVar("label"), nullptr);
  EXPECT_EQ(b.FindLocalVar("mean_0.tmp_0"), nullptr);
  EXPECT_EQ(b.FindLocalVar("fc_0.w_0@GRAD"), nullptr);
  EXPECT_EQ(b.FindLocalVar("learning_rate_0"), nullptr);
  ASSERT_NE(b.FindLocalVar("fc_0.w_0"), nullptr);
  EXPECT_TRUE(b.FindLocalVar("fc_0.w_0")->persistable());
  EXPECT_EQ(b.FindLocalVar("fc_0.w_0")->dims(), (Dims{4, 3}));
  // The training program is untouched.
  EXPECT_EQ(train.global_block().num_ops(), 11);
}

TEST(PruneTest, FeedAndFetchOpsReadAndWriteTheHolders) {
  auto pruned = Prune(TrainingProgram(), {"image"}, {"softmax_0.tmp_0"});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  const Block& b = pruned->global_block();
  const OpDesc& feed = b.op(0);
  EXPECT_EQ(feed.Input("X"), (std::vector<std::string>{"feed"}));
  EXPECT_EQ(feed.Output("Out"), (std::vector<std::string>{"image"}));
  EXPECT_EQ(*feed.GetAttr<int>("col"), 0);
  const OpDesc& fetch = b.op(b.num_ops() - 1);
  EXPECT_EQ(fetch.Input("X"), (std::vector<std::string>{"softmax_0.tmp_0"}));
  EXPECT_EQ(fetch.Output("Out"), (std::vector<std::string>{"fetch"}));
  EXPECT_EQ(*fetch.GetAttr<int>("col"), 0);
  ASSERT_NE(b.FindLocalVar("feed"), nullptr);
  EXPECT_EQ(b.FindLocalVar("feed")->type(), proto::VarType::FEED_MINIBATCH);
  EXPECT_TRUE(b.FindLocalVar("feed")->persistable());
  ASSERT_NE(b.FindLocalVar("fetch"), nullptr);
  EXPECT_EQ(b.FindLocalVar("fetch")->type(), proto::VarType::FETCH_LIST);
}

TEST(PruneTest, SwitchesBatchNormAndDropoutToTest) {
  Program train = TrainingProgram();
  auto pruned = Prune(train, {"image"}, {"softmax_0.tmp_0"});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  int switched = 0;
  for (const auto& op : pruned->global_block().ops()) {
    if (op->type() == "batch_norm" || op->type() == "dropout") {
      EXPECT_TRUE(*op->GetAttr<bool>("is_test")) << op->Label();
      // Written as BOOLEAN even where the training program had INT.
      EXPECT_EQ(op->FindAttr("is_test")->type(), proto::BOOLEAN);
      ++switched;
    } else {
      EXPECT_FALSE(op->HasAttr("is_test")) << op->Label();
    }
  }
  EXPECT_EQ(switched, 2);
  for (const auto& op : train.global_block().ops()) {
    if (op->type() == "batch_norm") {
      EXPECT_FALSE(*op->GetAttr<bool>("is_test"));
    }
  }
}

TEST(PruneTest, SeveralFeedsAndFetchesByColumn) {
  auto pruned = Prune(TrainingProgram(), {"image", "label"},
                      {"mean_0.tmp_0", "softmax_0.tmp_0"});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  const Block& b = pruned->global_block();
  EXPECT_EQ(OpTypes(*pruned), (std::vector<std::string>{
                                  "feed", "feed", "mul", "elementwise_add",
                                  "batch_norm", "relu", "dropout", "softmax",
                                  "cross_entropy", "mean", "fetch", "fetch"}));
  // Feed ops are prepended one by one as Fluid does: the last column first.
  EXPECT_EQ(b.op(0).FirstOutput("Out"), "label");
  EXPECT_EQ(*b.op(0).GetAttr<int>("col"), 1);
  EXPECT_EQ(b.op(1).FirstOutput("Out"), "image");
  EXPECT_EQ(*b.op(1).GetAttr<int>("col"), 0);
  EXPECT_EQ(b.op(10).FirstInput("X"), "mean_0.tmp_0");
  EXPECT_EQ(*b.op(10).GetAttr<int>("col"), 0);
  EXPECT_EQ(b.op(11).FirstInput("X"), "softmax_0.tmp_0");
  EXPECT_EQ(*b.op(11).GetAttr<int>("col"), 1);
}

TEST(PruneTest, AFedVarReplacesItsProducers) {
  auto pruned = Prune(TrainingProgram(), {"relu_0.tmp_0"}, {"softmax_0.tmp_0"});
  ASSERT_TRUE(pruned.ok()) << pruned.status().ToString();
  EXPECT_EQ(OpTypes(*pruned),
            (std::vector<std::string>{"feed", "dropout", "softmax", "fetch"}));
  EXPECT_EQ(pruned->global_block().FindLocalVar("fc_0.w_0"), nullptr);
}

TEST(PruneTest, ErrorsNameWhatIsMissing) {
  Program train = TrainingProgram();
  auto no_label = Prune(train, {"image"}, {"mean_0.tmp_0"});
  ASSERT_FALSE(no_label.ok());
  EXPECT_NE(no_label.status().message().find("'label'"), std::string::npos)
      << no_label.status().ToString();
  auto unknown = Prune(train, {"image"}, {"nope"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("'nope'"), std::string::npos);
  EXPECT_FALSE(Prune(train, {"missing_feed"}, {"softmax_0.tmp_0"}).ok());
  EXPECT_FALSE(Prune(train, {"image"}, {}).ok());
  EXPECT_FALSE(Prune(train, {"image", "image"}, {"softmax_0.tmp_0"}).ok());
}

}  // namespace
}  // namespace parex
