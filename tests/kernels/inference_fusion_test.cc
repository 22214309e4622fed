// graph/builder/inference_fusion.h: the fused program computes what the
// program as written computes (both run by the reference executor on the
// CPU kernels), and a rewrite is left out where it could change that.
#include "graph/builder/inference_fusion.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kernels/reference_executor.h"
#include "tests/kernels/op_tester.h"

namespace parex {
namespace {

void Declare(Block& block, const std::string& name, Dims dims,
             bool persistable = false) {
  VarDesc* v = block.Var(name);
  v->SetDType(DType::kFP32);
  v->SetDims(dims);
  v->SetPersistable(persistable);
}

Tensor Random(const Dims& dims, float lo, float hi, uint32_t seed) {
  return testing::RandomTensor(dims, lo, hi, seed, DType::kFP32);
}

// conv `type` of `in` by `w` (groups) -> `name`.c, batch_norm -> `name`.y
// (is_test), then `act` (none when empty) -> `name`.a. Returns the last
// var's name. Parameters are made in `scope`.
std::string ConvBnAct(Program* program, Scope* scope, const std::string& in,
                      const std::string& name, const std::string& type,
                      int64_t c, int64_t m, int groups, const std::string& act,
                      bool is_test = true) {
  Block& block = program->global_block();
  const std::string w = name + ".w";
  Declare(block, w, {m, c / groups, 3, 3}, true);
  *scope->Var(w)->GetMutableTensor() =
      Random({m, c / groups, 3, 3}, -0.5f, 0.5f, 1 + m);
  Declare(block, name + ".c", {-1, m, 6, 6});
  OpDesc* conv = block.AppendOp(type);
  conv->SetInput("Input", {in});
  conv->SetInput("Filter", {w});
  conv->SetOutput("Output", {name + ".c"});
  conv->SetAttr("strides", std::vector<int>{1, 1});
  conv->SetAttr("paddings", std::vector<int>{1, 1});
  conv->SetAttr("dilations", std::vector<int>{1, 1});
  conv->SetAttr("groups", groups);
  const char* params[] = {"scale", "bias", "mean", "var"};
  const float lows[] = {0.5f, -1.0f, -0.5f, 0.5f};
  for (int k = 0; k < 4; ++k) {
    const std::string p = name + "." + params[k];
    Declare(block, p, {m}, true);
    *scope->Var(p)->GetMutableTensor() =
        Random({m}, lows[k], lows[k] + 1.0f, 10 * k + m);
  }
  for (const char* t : {".y", ".saved_mean", ".saved_var"}) {
    Declare(block, name + t, {-1, m, 6, 6});
  }
  OpDesc* bn = block.AppendOp("batch_norm");
  bn->SetInput("X", {name + ".c"});
  bn->SetInput("Scale", {name + ".scale"});
  bn->SetInput("Bias", {name + ".bias"});
  bn->SetInput("Mean", {name + ".mean"});
  bn->SetInput("Variance", {name + ".var"});
  bn->SetOutput("Y", {name + ".y"});
  bn->SetOutput("MeanOut", {name + ".mean"});
  bn->SetOutput("VarianceOut", {name + ".var"});
  bn->SetOutput("SavedMean", {name + ".saved_mean"});
  bn->SetOutput("SavedVariance", {name + ".saved_var"});
  bn->SetAttr("epsilon", 1e-5f);
  bn->SetAttr("is_test", is_test);
  if (act.empty()) return name + ".y";
  Declare(block, name + ".a", {-1, m, 6, 6});
  OpDesc* a = block.AppendOp(act);
  a->SetInput("X", {name + ".y"});
  a->SetOutput("Out", {name + ".a"});
  if (act == "relu6") a->SetAttr("threshold", 0.75f);
  return name + ".a";
}

// x[2,4,6,6] -> conv+bn+relu -> depthwise+bn+relu6 -> conv+bn -> out
Program ThreeBlocks(Scope* scope, std::string* out) {
  Program program;
  Declare(program.global_block(), "x", {-1, 4, 6, 6});
  std::string h =
      ConvBnAct(&program, scope, "x", "b1", "conv2d", 4, 8, 1, "relu");
  h = ConvBnAct(&program, scope, h, "b2", "depthwise_conv2d", 8, 8, 8, "relu6");
  *out = ConvBnAct(&program, scope, h, "b3", "conv2d", 8, 4, 1, "");
  return program;
}

std::vector<float> RunProgram(const Program& program, Scope* scope,
                              const std::string& fetch) {
  ReferenceExecutor executor;
  auto out = executor.Run(program, scope,
                          {{"x", Random({2, 4, 6, 6}, -1, 1, 7)}}, {fetch});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const Tensor& t = (*out)[0];
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

int CountOps(const Program& program, const std::string& type) {
  int n = 0;
  for (const auto& op : program.global_block().ops()) n += op->type() == type;
  return n;
}

// A 3x3 conv2d (stride 1, padding 1) of `in` ([-1, c, 6, 6]) to `name`
// ([-1, m, 6, 6]), its filter `name`.w made in `scope`.
void AppendConv(Block* block, Scope* scope, const std::string& in,
                const std::string& name, int64_t c, int64_t m) {
  Declare(*block, name + ".w", {m, c, 3, 3}, true);
  *scope->Var(name + ".w")->GetMutableTensor() =
      Random({m, c, 3, 3}, -0.3f, 0.3f, static_cast<uint32_t>(c + m));
  Declare(*block, name, {-1, m, 6, 6});
  OpDesc* op = block->AppendOp("conv2d");
  op->SetInput("Input", {in});
  op->SetInput("Filter", {name + ".w"});
  op->SetOutput("Output", {name});
  op->SetAttr("strides", std::vector<int>{1, 1});
  op->SetAttr("paddings", std::vector<int>{1, 1});
  op->SetAttr("dilations", std::vector<int>{1, 1});
  op->SetAttr("groups", 1);
}

// x [-1, 16, 6, 6] and conv a (16 -> 16) of it, which the channels-last
// tests start from.
void StartWithConvA(Block* block, Scope* scope) {
  Declare(*block, "x", {-1, 16, 6, 6});
  AppendConv(block, scope, "x", "a", 16, 16);
}

// `program` run on x gives `want` as "out" (within 1e-4).
void ExpectOut(const Program& program, Scope* scope, const Tensor& x,
               const Tensor& want) {
  ReferenceExecutor executor;
  auto got = executor.Run(program, scope, {{"x", x}}, {"out"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ((*got)[0].dims(), want.dims());
  for (int64_t i = 0; i < want.numel(); ++i) {
    EXPECT_NEAR((*got)[0].data<float>()[i], want.data<float>()[i], 1e-4f)
        << "element " << i;
  }
}

TEST(InferenceFusionTest, FoldsBatchNormsAndFusesActivationsKeepingOutputs) {
  Scope scope;
  std::string out;
  const Program program = ThreeBlocks(&scope, &out);
  const std::vector<float> expected = RunProgram(program, &scope, out);
  ASSERT_EQ(expected.size(), 2u * 4 * 6 * 6);

  auto fused = FuseForInference(program, {out});
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(fused->folded_batch_norms, 3);
  EXPECT_EQ(fused->fused_activations, 2);
  EXPECT_EQ(CountOps(fused->main, "batch_norm"), 0);
  EXPECT_EQ(CountOps(fused->main, "relu"), 0);
  EXPECT_EQ(CountOps(fused->main, "relu6"), 0);
  EXPECT_EQ(CountOps(fused->main, "conv2d"), 3);
  // relu6's threshold travels with the fused conv.
  const OpDesc& dw = fused->main.global_block().op(2);  // after a transpose
  EXPECT_EQ(*dw.GetAttr<std::string>("fuse_activation"), "relu6");
  EXPECT_FLOAT_EQ(*dw.GetAttr<float>("fuse_alpha"), 0.75f);
  for (const auto& op : fused->main.global_block().ops()) {
    if (op->type() != "conv2d") continue;
    EXPECT_TRUE(*op->GetAttr<bool>("constant_filter")) << op->Label();
  }
  // channels_last: the first two convs run NHWC (the third writes the
  // fetched var), x transposed in, the depthwise's output back out.
  EXPECT_EQ(fused->channels_last_ops, 2);
  EXPECT_EQ(fused->transposes, 2);
  EXPECT_EQ(CountOps(fused->main, "transpose2"), 2);
  EXPECT_EQ(*dw.GetAttr<std::string>("data_format"), "NHWC");

  ReferenceExecutor fold;
  auto folded = fold.Run(fused->fold, &scope, {}, {});
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  const std::vector<float> got = RunProgram(fused->main, &scope, out);
  ASSERT_EQ(got.size(), expected.size());
  float largest = 0;
  for (float v : expected) largest = std::max(largest, std::abs(v));
  ASSERT_GT(largest, 0.1f);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-5f * largest) << "element " << i;
  }
  // The parameters the program as written reads are untouched.
  EXPECT_EQ(RunProgram(program, &scope, out), expected);
}

// x[2,16,6,6] -> conv a (16->16) -> add x (a residual) -> concat with a
// along the channels -> conv b (32->8) -> out (fetched).
TEST(InferenceFusionTest, ChannelsLastKeepsResidualsAndConcatsInside) {
  Scope scope;
  Program program;
  Block& block = program.global_block();
  StartWithConvA(&block, &scope);
  Declare(block, "sum", {-1, 16, 6, 6});
  OpDesc* add = block.AppendOp("elementwise_add");
  add->SetInput("X", {"a"});
  add->SetInput("Y", {"x"});
  add->SetOutput("Out", {"sum"});
  add->SetAttr("axis", -1);
  Declare(block, "cat", {-1, 32, 6, 6});
  OpDesc* cat = block.AppendOp("concat");
  cat->SetInput("X", {"sum", "a"});
  cat->SetOutput("Out", {"cat"});
  cat->SetAttr("axis", 1);
  AppendConv(&block, &scope, "cat", "out", 32, 8);
  ReferenceExecutor executor;
  const Tensor x = Random({2, 16, 6, 6}, -1, 1, 3);
  auto want = executor.Run(program, &scope, {{"x", x}}, {"out"});
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  auto fused = FuseForInference(program, {"out"});
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  // conv a, the add (reading x's copy conv a made), the concat (axis 3);
  // x in, cat out (conv b writes the fetched var: channels-first).
  EXPECT_EQ(fused->channels_last_ops, 3);
  EXPECT_EQ(fused->transposes, 2);
  for (const auto& op : fused->main.global_block().ops()) {
    if (op->type() == "concat") {
      EXPECT_EQ(*op->GetAttr<int>("axis"), 3);
    }
    if (op->type() == "elementwise_add") {
      EXPECT_EQ(op->FirstInput("Y"), "x@nhwc");
    }
  }
  ExpectOut(fused->main, &scope, x, (*want)[0]);
}

// ShuffleNet's channel shuffle between two channels-last convs: reshape2 /
// transpose2 / reshape2 shuffle the last dim of the NHWC tensor, with no
// transpose between the layouts around them.
TEST(InferenceFusionTest, ChannelsLastShufflesChannelsInPlace) {
  Scope scope;
  Program program;
  Block& block = program.global_block();
  StartWithConvA(&block, &scope);
  auto reshape = [&](const std::string& in, const std::string& out,
                     std::vector<int> shape, Dims declared) {
    Declare(block, out, declared);
    Declare(block, out + ".xshape", {0});
    OpDesc* op = block.AppendOp("reshape2");
    op->SetInput("X", {in});
    op->SetOutput("Out", {out});
    op->SetOutput("XShape", {out + ".xshape"});
    op->SetAttr("shape", shape);
  };
  reshape("a", "grouped", {-1, 2, 8, 6, 6}, {-1, 2, 8, 6, 6});
  Declare(block, "swapped", {-1, 8, 2, 6, 6});
  Declare(block, "swapped.xshape", {0});
  OpDesc* t = block.AppendOp("transpose2");
  t->SetInput("X", {"grouped"});
  t->SetOutput("Out", {"swapped"});
  t->SetOutput("XShape", {"swapped.xshape"});
  t->SetAttr("axis", std::vector<int>{0, 2, 1, 3, 4});
  reshape("swapped", "shuffled", {-1, 16, 6, 6}, {-1, 16, 6, 6});
  AppendConv(&block, &scope, "shuffled", "b", 16, 16);
  Declare(block, "out", {-1, 16, 6, 6});
  OpDesc* relu = block.AppendOp("relu");
  relu->SetInput("X", {"b"});
  relu->SetOutput("Out", {"out"});
  ReferenceExecutor executor;
  const Tensor x = Random({2, 16, 6, 6}, -1, 1, 5);
  auto want = executor.Run(program, &scope, {{"x", x}}, {"out"});
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  InferenceFusions fusions;
  fusions.fuse_activation = false;  // the relu stays: its output is fetched
  auto fused = FuseForInference(program, {"out"}, fusions);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  // conv a, the shuffle's three ops, conv b; x in and b out.
  EXPECT_EQ(fused->channels_last_ops, 5);
  EXPECT_EQ(fused->transposes, 2);
  for (const auto& op : fused->main.global_block().ops()) {
    if (op->type() == "transpose2" && op->FirstInput("X") == "grouped") {
      EXPECT_EQ(*op->GetAttr<std::vector<int>>("axis"),
                (std::vector<int>{0, 1, 2, 4, 3}));
    }
  }
  ExpectOut(fused->main, &scope, x, (*want)[0]);
}

// A residual block as Paddle's ResNets write it: conv+bn+relu, conv+bn,
// then the shortcut's conv+bn (after the second conv, as the downsampling
// branch), the add, a relu, and a conv reading the block (out, fetched).
// The second conv takes the add in (ResidualData) and the relu, and runs
// where the add was, after the shortcut; NHWC and NCHW.
TEST(InferenceFusionTest, ResidualAddsFuseIntoTheConvBeforeThem) {
  Scope scope;
  Program program;
  Block& block = program.global_block();
  Declare(block, "x", {-1, 16, 6, 6});
  std::string h =
      ConvBnAct(&program, &scope, "x", "b1", "conv2d", 16, 16, 1, "relu");
  const std::string main_path =
      ConvBnAct(&program, &scope, h, "b2", "conv2d", 16, 16, 1, "");
  const std::string shortcut =
      ConvBnAct(&program, &scope, "x", "s", "conv2d", 16, 16, 1, "");
  Declare(block, "sum", {-1, 16, 6, 6});
  OpDesc* add = block.AppendOp("elementwise_add");
  add->SetInput("X", {main_path});
  add->SetInput("Y", {shortcut});
  add->SetOutput("Out", {"sum"});
  add->SetAttr("axis", -1);
  Declare(block, "r", {-1, 16, 6, 6});
  OpDesc* relu = block.AppendOp("relu");
  relu->SetInput("X", {"sum"});
  relu->SetOutput("Out", {"r"});
  AppendConv(&block, &scope, "r", "out", 16, 8);
  ReferenceExecutor executor;
  const Tensor x = Random({2, 16, 6, 6}, -1, 1, 9);
  auto want = executor.Run(program, &scope, {{"x", x}}, {"out"});
  ASSERT_TRUE(want.ok()) << want.status().ToString();

  for (const bool channels_last : {true, false}) {
    InferenceFusions fusions;
    fusions.channels_last = channels_last;
    auto fused = FuseForInference(program, {"out"}, fusions);
    ASSERT_TRUE(fused.ok()) << fused.status().ToString();
    EXPECT_EQ(fused->fused_residuals, 1);
    EXPECT_EQ(fused->fused_activations, 2);  // b1's relu, the block's
    EXPECT_EQ(CountOps(fused->main, "elementwise_add"), 0);
    EXPECT_EQ(CountOps(fused->main, "relu"), 0);
    int shortcut_at = -1, residual_at = -1;
    const Block& b = fused->main.global_block();
    for (int i = 0; i < b.num_ops(); ++i) {
      const OpDesc& op = b.op(i);
      if (op.type() != "conv2d") continue;
      if (op.FirstOutput("Output") == shortcut) shortcut_at = i;
      if (op.HasInput("ResidualData")) {
        residual_at = i;
        EXPECT_EQ(*op.GetAttr<std::string>("fuse_activation"), "relu");
        EXPECT_EQ(op.FirstOutput("Output"), "r");
        EXPECT_EQ(op.FirstInput("ResidualData"), shortcut);
        const auto layout = op.GetAttr<std::string>("data_format");
        EXPECT_EQ(layout.ok() ? *layout : "NCHW",
                  channels_last ? "NHWC" : "NCHW");
      }
    }
    ASSERT_GE(shortcut_at, 0);
    EXPECT_GT(residual_at, shortcut_at);
    ReferenceExecutor fold;
    ASSERT_TRUE(fold.Run(fused->fold, &scope, {}, {}).ok());
    ExpectOut(fused->main, &scope, x, (*want)[0]);
  }
  // Switched off, the add stays.
  InferenceFusions off;
  off.fuse_residual = false;
  auto kept = FuseForInference(program, {"out"}, off);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->fused_residuals, 0);
  EXPECT_EQ(CountOps(kept->main, "elementwise_add"), 1);
}

// An fc's matmul_v2 by a parameter: marked constant_y, and its kernel's
// packed oneDNN product (cpu::DnnlConstantMatmul) gives the plain GEMM's
// values, Y stored [K, N] or transposed, X with rows folded from a batch.
// A network's head: conv -> global average pool -> flatten -> fc. The pool
// runs channels-last and the flatten reads its [N, 1, 1, C] output as it
// lies (no transpose back): the same [N, C] as flattening [N, C, 1, 1].
TEST(InferenceFusionTest, ChannelsLastFlattensAOneByOnePoolWithoutATranspose) {
  for (const bool adaptive : {false, true}) {
    Scope scope;
    Program program;
    Block& block = program.global_block();
    StartWithConvA(&block, &scope);
    Declare(block, "p", {-1, 16, 1, 1});
    OpDesc* pool = block.AppendOp("pool2d");
    pool->SetInput("X", {"a"});
    pool->SetOutput("Out", {"p"});
    pool->SetAttr("pooling_type", std::string("avg"));
    pool->SetAttr("ksize", std::vector<int>{1, 1});
    pool->SetAttr("adaptive", adaptive);
    pool->SetAttr("global_pooling", !adaptive);
    pool->SetAttr("strides", std::vector<int>{1, 1});
    pool->SetAttr("paddings", std::vector<int>{0, 0});
    Declare(block, "f", {-1, 16});
    OpDesc* flat = block.AppendOp("flatten_contiguous_range");
    flat->SetInput("X", {"p"});
    flat->SetOutput("Out", {"f"});
    flat->SetAttr("start_axis", 1);
    flat->SetAttr("stop_axis", 3);
    Declare(block, "w", {16, 5}, true);
    *scope.Var("w")->GetMutableTensor() = Random({16, 5}, -0.5f, 0.5f, 21);
    Declare(block, "out", {-1, 5});
    OpDesc* mm = block.AppendOp("matmul_v2");
    mm->SetInput("X", {"f"});
    mm->SetInput("Y", {"w"});
    mm->SetOutput("Out", {"out"});
    const Tensor x = Random({3, 16, 6, 6}, -1, 1, 22);
    ReferenceExecutor executor;
    auto want = executor.Run(program, &scope, {{"x", x}}, {"out"});
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    auto fused = FuseForInference(program, {"out"});
    ASSERT_TRUE(fused.ok()) << fused.status().ToString();
    EXPECT_EQ(CountOps(fused->main, "transpose2"), 1);  // x's, in
    EXPECT_EQ(fused->transposes, 1);
    ExpectOut(fused->main, &scope, x, (*want)[0]);
  }
}

// Ops that pass X through at inference go, their producer writing their
// output: test-time dropout (upscale_in_train, or probability 0) and scale by
// 1 plus 0. A dropout that scales (downgrade_in_infer), a scale by 2, and an
// identity whose X is fetched stay.
TEST(InferenceFusionTest, IdentitiesGoTheirProducersWritingTheirOutputs) {
  struct Step {
    const char* type;
    const char* impl;  // dropout's implementation
    float value;       // dropout_prob or scale
    bool goes;
  };
  const std::vector<std::vector<Step>> cases = {
      {{"dropout", "upscale_in_train", 0.5f, true}, {"scale", "", 1.0f, true}},
      {{"dropout", "downgrade_in_infer", 0.0f, true},
       {"dropout", "downgrade_in_infer", 0.5f, false},
       {"scale", "", 2.0f, false}},
  };
  for (const std::vector<Step>& steps : cases) {
    for (const bool fetch_inner : {false, true}) {
      Scope scope;
      Program program;
      Block& block = program.global_block();
      StartWithConvA(&block, &scope);
      std::string in = "a";
      int goes = 0;
      for (size_t k = 0; k < steps.size(); ++k) {
        const std::string y =
            k + 1 == steps.size() ? "out" : "s" + std::to_string(k);
        Declare(block, y, {-1, 16, 6, 6});
        OpDesc* op = block.AppendOp(steps[k].type);
        op->SetInput("X", {in});
        op->SetOutput("Out", {y});
        if (std::string(steps[k].type) == "dropout") {
          Declare(block, y + ".mask", {-1, 16, 6, 6});
          op->SetOutput("Mask", {y + ".mask"});
          op->SetAttr("is_test", true);
          op->SetAttr("dropout_prob", steps[k].value);
          op->SetAttr("dropout_implementation", std::string(steps[k].impl));
        } else {
          op->SetAttr("scale", steps[k].value);
          op->SetAttr("bias", 0.0f);
        }
        // With fetch_inner, "a" is fetched: the first step keeps its op.
        goes += steps[k].goes && !(fetch_inner && k == 0);
        in = y;
      }
      const std::vector<std::string> fetches =
          fetch_inner ? std::vector<std::string>{"out", "a"}
                      : std::vector<std::string>{"out"};
      const Tensor x = Random({2, 16, 6, 6}, -1, 1, 31);
      ReferenceExecutor executor;
      auto want = executor.Run(program, &scope, {{"x", x}}, {"out"});
      ASSERT_TRUE(want.ok()) << want.status().ToString();
      InferenceFusions only;
      only.channels_last = false;
      auto fused = FuseForInference(program, fetches, only);
      ASSERT_TRUE(fused.ok()) << fused.status().ToString();
      EXPECT_EQ(fused->dropped_identities, goes) << fetch_inner;
      EXPECT_EQ(fused->main.global_block().num_ops(),
                program.global_block().num_ops() - goes);
      ExpectOut(fused->main, &scope, x, (*want)[0]);
    }
  }
}

TEST(InferenceFusionTest, ConstantMatmulsRunPacked) {
  for (const bool trans_y : {false, true}) {
    Scope scope;
    Program program;
    Block& block = program.global_block();
    Declare(block, "x", {-1, 3, 96});
    const Dims y_dims = trans_y ? Dims{40, 96} : Dims{96, 40};
    Declare(block, "w", y_dims, true);
    *scope.Var("w")->GetMutableTensor() = Random(y_dims, -0.5f, 0.5f, 17);
    Declare(block, "out", {-1, 3, 40});
    OpDesc* mm = block.AppendOp("matmul_v2");
    mm->SetInput("X", {"x"});
    mm->SetInput("Y", {"w"});
    mm->SetOutput("Out", {"out"});
    mm->SetAttr("trans_y", trans_y);
    ReferenceExecutor executor;
    const Tensor x = Random({2, 3, 96}, -1, 1, 18);
    auto want = executor.Run(program, &scope, {{"x", x}}, {"out"});
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    auto fused = FuseForInference(program, {"out"});
    ASSERT_TRUE(fused.ok()) << fused.status().ToString();
    const OpDesc& op = fused->main.global_block().op(0);
    ASSERT_EQ(op.type(), "matmul_v2");
    EXPECT_TRUE(*op.GetAttr<bool>("constant_y"));
    ExpectOut(fused->main, &scope, x, (*want)[0]);
    // Run twice more on one executor (the packed copy reused).
    ReferenceExecutor again;
    for (int run = 0; run < 2; ++run) {
      auto got = again.Run(fused->main, &scope, {{"x", x}}, {"out"});
      ASSERT_TRUE(got.ok());
      for (int64_t i = 0; i < (*want)[0].numel(); ++i) {
        ASSERT_NEAR((*got)[0].data<float>()[i], (*want)[0].data<float>()[i],
                    1e-4f);
      }
    }
  }
}

TEST(InferenceFusionTest, LeavesOutWhatCouldChangeTheOutputs) {
  Scope scope;
  std::string out;
  const Program program = ThreeBlocks(&scope, &out);
  // The first conv's output fetched: its batch norm stays (and so its
  // relu, which reads the batch norm). The depthwise's batch norm output
  // fetched: the batch norm folds (the conv now writes that var), its
  // relu6 stays.
  auto fused = FuseForInference(program, {out, "b1.c", "b2.y"});
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(fused->folded_batch_norms, 2);  // b2, b3
  EXPECT_EQ(fused->fused_activations, 0);
  EXPECT_EQ(CountOps(fused->main, "batch_norm"), 1);

  // A batch norm normalising with the batch's statistics is not folded.
  Scope training_scope;
  Program training;
  Declare(training.global_block(), "x", {-1, 4, 6, 6});
  ConvBnAct(&training, &training_scope, "x", "t", "conv2d", 4, 8, 1, "relu",
            /*is_test=*/false);
  auto kept = FuseForInference(training, {"t.a"});
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->folded_batch_norms, 0);
  EXPECT_EQ(CountOps(kept->main, "batch_norm"), 1);
  EXPECT_EQ(kept->fold.global_block().num_ops(), 0);

  // Switched off, nothing changes.
  auto off = FuseForInference(
      program, {out}, {false, false, false, false, false, false, false});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->main.proto().SerializeAsString(),
            program.proto().SerializeAsString());
}

}  // namespace
}  // namespace parex
