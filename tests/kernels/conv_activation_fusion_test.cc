// The activations a convolution's epilogue computes (fuse_activation in
// graph/builder/inference_fusion.h): relu, relu6, leaky_relu and hard_swish
// fused into the conv before them give what the activation op gives, on
// every path a fused conv can take (im2col's epilogue, oneDNN's post-ops on
// NCHW and on NHWC, SkinnyGemm's epilogue, with and without a residual);
// an activation the epilogue cannot compute as its op does stays an op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/builder/inference_fusion.h"
#include "kernels/cpu/skinny_gemm.h"
#include "kernels/cpu/spatial/dnnl_conv.h"
#include "kernels/reference_executor.h"
#include "tests/kernels/op_tester.h"

namespace parex {
namespace {

void DeclareVar(Block& block, const std::string& name, Dims dims,
                bool persistable = false) {
  VarDesc* v = block.Var(name);
  v->SetDType(DType::kFP32);
  v->SetDims(dims);
  v->SetPersistable(persistable);
}

struct Activation {
  const char* type;
  const char* attr;  // its parameter's attribute ("" for none)
  float value;
};

// How the conv runs: its channels, kernel, plane and batch pick the path;
// `dnnl`: the fused program runs oneDNN's convolutions (none otherwise).
struct Path {
  const char* name;
  int64_t c, m, k, plane, batch;
  bool channels_last, residual, dnnl;
};

// x [batch, c, plane, plane] -> conv (k x k, padding k / 2) -> [+ x when
// `residual`] -> activation -> scale by 2 -> "out". (The fetched var keeps
// its layout: with the channels-last pass on, the conv runs NHWC and a
// transpose brings its output back before the scale.)
Program ConvThenActivation(const Path& p, const Activation& a, Scope* scope) {
  Program program;
  Block& block = program.global_block();
  const Dims image = {-1, p.c, p.plane, p.plane};
  const Dims out = {-1, p.m, p.plane, p.plane};
  DeclareVar(block, "x", image);
  DeclareVar(block, "w", {p.m, p.c, p.k, p.k}, true);
  *scope->Var("w")->GetMutableTensor() =
      testing::RandomTensor({p.m, p.c, p.k, p.k}, -0.3, 0.3, 5, DType::kFP32);
  DeclareVar(block, "y", out);
  OpDesc* conv = block.AppendOp("conv2d");
  conv->SetInput("Input", {"x"});
  conv->SetInput("Filter", {"w"});
  conv->SetOutput("Output", {"y"});
  conv->SetAttr("strides", std::vector<int>{1, 1});
  const int pad = static_cast<int>(p.k / 2);
  conv->SetAttr("paddings", std::vector<int>{pad, pad});
  conv->SetAttr("dilations", std::vector<int>{1, 1});
  conv->SetAttr("groups", 1);
  std::string into = "y";
  if (p.residual) {
    DeclareVar(block, "r", out);
    OpDesc* add = block.AppendOp("elementwise_add");
    add->SetInput("X", {"y"});
    add->SetInput("Y", {"x"});
    add->SetOutput("Out", {"r"});
    into = "r";
  }
  DeclareVar(block, "a", out);
  OpDesc* act = block.AppendOp(a.type);
  act->SetInput("X", {into});
  act->SetOutput("Out", {"a"});
  if (*a.attr != '\0') act->SetAttr(a.attr, a.value);
  DeclareVar(block, "out", out);
  OpDesc* last = block.AppendOp("scale");
  last->SetInput("X", {"a"});
  last->SetOutput("Out", {"out"});
  last->SetAttr("scale", 2.0f);
  return program;
}

// `fetch` (the activation's output, or the scale's) of `program` on x.
std::vector<float> RunOut(const Program& program, Scope* scope, const Tensor& x,
                          const std::string& fetch) {
  ReferenceExecutor executor;
  auto out = executor.Run(program, scope, {{"x", x}}, {fetch});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const Tensor& t = (*out)[0];
  return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

// The fused program of `program` (a conv on path p, then activation a):
// the activation in the conv, which runs in p's layout.
void ExpectActivationFused(const Path& p, const Activation& a,
                           const FusedProgram& fused) {
  EXPECT_EQ(fused.fused_activations, 1);
  EXPECT_EQ(fused.fused_residuals, p.residual ? 1 : 0);
  int fused_convs = 0;
  for (const auto& op : fused.main.global_block().ops()) {
    EXPECT_NE(op->type(), a.type);
    if (op->type() != "conv2d" ||
        op->GetAttr<std::string>("fuse_activation")->empty()) {
      continue;
    }
    ++fused_convs;
    EXPECT_EQ(*op->GetAttr<std::string>("fuse_activation"), a.type);
    EXPECT_EQ(*op->GetAttr<std::string>("data_format"),
              p.channels_last ? "NHWC" : "NCHW");
  }
  EXPECT_EQ(fused_convs, 1);
}

// The activation's outputs `act` reach its other side: below 0 for the
// leaky ones, relu6's cap.
void ExpectBothSides(const Activation& a, const std::vector<float>& act) {
  int negative = 0, clipped = 0;
  for (const float v : act) {
    negative += v < 0;
    clipped += v == 0.75f;
  }
  const std::string type = a.type;
  if (type == "leaky_relu" || type == "hard_swish") EXPECT_GT(negative, 0);
  if (type == "relu" || type == "relu6") EXPECT_EQ(negative, 0);
  if (type == "relu6") EXPECT_GT(clipped, 0);
}

void CheckPath(const Path& p, const Activation& a) {
  Scope scope;
  const Program program = ConvThenActivation(p, a, &scope);
  // Values around each activation's kinks (0, -3, 3, the threshold); sums
  // of up to 512 products in other orders: 1e-4 apart.
  const Tensor x = testing::RandomTensor({p.batch, p.c, p.plane, p.plane}, -1.5,
                                         1.5, 9, DType::kFP32);
  const std::vector<float> want = RunOut(program, &scope, x, "out");
  ExpectBothSides(a, RunOut(program, &scope, x, "a"));
  InferenceFusions fusions;
  fusions.channels_last = p.channels_last;
  auto fused = FuseForInference(program, {"out"}, fusions);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  ExpectActivationFused(p, a, *fused);
  const int64_t dnnl_before = cpu::DnnlConvExecutions();
  const std::vector<float> got = RunOut(fused->main, &scope, x, "out");
  if (cpu::DnnlAvailable()) {
    EXPECT_EQ(cpu::DnnlConvExecutions() > dnnl_before, p.dnnl);
  }
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4f * std::max(1.0f, std::abs(want[i])))
        << "element " << i;
  }
}

TEST(ConvActivationFusionTest, EveryPathComputesTheActivationAsItsOp) {
  const std::vector<Activation> activations = {
      {"relu", "", 0.0f},
      {"relu6", "threshold", 0.75f},
      {"leaky_relu", "alpha", 0.1f},
      {"hard_swish", "", 0.0f},
  };
  const std::vector<Path> paths = {
      // 8 output channels: im2col and its epilogue.
      {"im2col", 4, 8, 3, 6, 2, false, false, false},
      {"im2col + residual", 8, 8, 3, 6, 2, false, true, false},
      // 16 channels: oneDNN's NCHW convolution and its post-ops.
      {"oneDNN NCHW", 16, 16, 3, 6, 2, false, false, true},
      {"oneDNN NCHW + residual", 16, 16, 3, 6, 2, false, true, true},
      // channels-last: oneDNN on the NHWC tensors.
      {"oneDNN NHWC", 16, 16, 3, 6, 2, true, false, true},
      {"oneDNN NHWC + residual", 16, 16, 3, 6, 2, true, true, true},
      // A 1x1 of 512 channels on four pixels: SkinnyGemm (on AVX-512; on
      // other CPUs, oneDNN).
      {"pointwise on few pixels", 512, 512, 1, 2, 1, true, false,
       !cpu::SkinnyGemmAvailable()},
      {"pointwise on few pixels + residual", 512, 512, 1, 2, 1, true, true,
       !cpu::SkinnyGemmAvailable()},
  };
  for (const Path& p : paths) {
    for (const Activation& a : activations) {
      SCOPED_TRACE(std::string(p.name) + ", " + a.type);
      CheckPath(p, a);
    }
  }
}

TEST(ConvActivationFusionTest, ActivationsItCannotComputeStayOps) {
  const std::vector<std::vector<Activation>> kept = {
      // hard_swish off Paddle's defaults: oneDNN's has no parameters.
      {{"hard_swish", "offset", 2.0f}},
      {{"hard_swish", "threshold", 5.0f}},
      {{"relu6", "threshold", 0.0f}},  // 0 would read as 6
      {{"sigmoid", "", 0.0f}},
  };
  const Path p = {"oneDNN NCHW", 16, 16, 3, 6, 2, false, false, true};
  for (const std::vector<Activation>& one : kept) {
    SCOPED_TRACE(std::string(one[0].type) + " " + one[0].attr);
    Scope scope;
    const Program program = ConvThenActivation(p, one[0], &scope);
    auto fused = FuseForInference(program, {"out"});
    ASSERT_TRUE(fused.ok()) << fused.status().ToString();
    EXPECT_EQ(fused->fused_activations, 0);
    int acts = 0;
    for (const auto& op : fused->main.global_block().ops()) {
      acts += op->type() == one[0].type;
    }
    EXPECT_EQ(acts, 1);
  }
}

TEST(ConvActivationFusionTest, AnUnknownFusedActivationIsAClearError) {
  testing::OpTester t("conv2d");
  t.Input("Input", testing::RandomTensor({1, 2, 4, 4}, -1, 1, 1))
      .Input("Filter", testing::RandomTensor({2, 2, 3, 3}, -1, 1, 2))
      .Output("Output");
  t.Attr<std::vector<int>>("strides", {1, 1});
  t.Attr<std::vector<int>>("paddings", {1, 1});
  t.Attr<std::vector<int>>("dilations", {1, 1});
  t.Attr<int>("groups", 1);
  t.Attr<std::string>("fuse_activation", "mish");
  const Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fuse_activation 'mish'"), std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("hard_swish"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace parex
