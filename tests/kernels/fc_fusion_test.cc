// Paddle's fc op (graph/ir/ops/matmul_ops.cc, kernels/cpu/matmul_kernels.cc)
// against its definition, and the inference fusion that makes it of a
// product by constant weights, a bias add and a relu (fuse_fc in
// graph/builder/inference_fusion.h): the fused program computes what the
// program as written computes, and products it cannot take stay.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "graph/builder/inference_fusion.h"
#include "kernels/reference_executor.h"
#include "tests/kernels/op_tester.h"

namespace parex {
namespace {

void DeclareFc(Block& block, const std::string& name, Dims dims, DType dtype,
               bool persistable = false) {
  VarDesc* v = block.Var(name);
  v->SetDType(dtype);
  v->SetDims(dims);
  v->SetPersistable(persistable);
}

// out[i, j] = act(sum_k x[i, k] w[k, j] + b[j]) over fp64 tensors, x
// flattened to [m, k].
std::vector<double> NaiveFc(const Tensor& x, const Tensor& w, const Tensor& b,
                            bool relu) {
  const int64_t k = w.dims()[0], n = w.dims()[1], m = x.numel() / k;
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = b.data<double>()[j];
      for (int64_t q = 0; q < k; ++q) {
        s += x.data<double>()[i * k + q] * w.data<double>()[q * n + j];
      }
      out[i * n + j] = relu ? std::max(s, 0.0) : s;
    }
  }
  return out;
}

TEST(FcOpTest, ComputesActOfFlattenedInputTimesWPlusBias) {
  struct Case {
    Dims x;
    int ncd;
    Dims bias;
    std::string act;
    Dims out;
  };
  const std::vector<Case> cases = {
      {{2, 3, 4}, 2, {5}, "relu", {2, 3, 5}},
      {{2, 3, 4}, 1, {1, 5}, "", {2, 5}},
  };
  for (const Case& c : cases) {
    const int64_t k = c.ncd == 2 ? 4 : 12;
    const Tensor x = testing::RandomTensor(c.x, -1, 1, 3);
    const Tensor w = testing::RandomTensor({k, 5}, -1, 1, 4);
    const Tensor b = testing::RandomTensor(c.bias, -1, 1, 5);
    testing::OpTester t("fc");
    t.Input("Input", x).Input("W", w).Input("Bias", b).Output("Out");
    t.Attr<int>("in_num_col_dims", c.ncd);
    t.Attr<std::string>("activation_type", c.act);
    ASSERT_TRUE(t.Run().ok()) << c.ncd;
    const Tensor& out = t.Out("Out");
    ASSERT_EQ(out.dims(), c.out);
    const std::vector<double> want = NaiveFc(x, w, b, c.act == "relu");
    int negatives = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(out.data<double>()[i], want[i], 1e-12) << i;
      negatives += want[i] < 0;
    }
    // The relu case clamps some; the plain one keeps negatives.
    EXPECT_EQ(negatives == 0, c.act == "relu");
  }
}

TEST(FcOpTest, RejectsWhatItCannotCompute) {
  struct Case {
    Dims w, bias;
    std::string act;
    bool padding;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{3, 5}, {5}, "", false, "cannot multiply"},
      {{4, 5}, {6}, "", false, "Bias [6] must be [5]"},
      {{4, 5}, {5}, "sigmoid", false, "activation_type 'sigmoid'"},
      {{4, 5}, {5}, "", true, "padding_weights"},
  };
  for (const Case& c : cases) {
    testing::OpTester t("fc");
    t.Input("Input", testing::RandomTensor({2, 4}, -1, 1, 1))
        .Input("W", testing::RandomTensor(c.w, -1, 1, 2))
        .Input("Bias", testing::RandomTensor(c.bias, -1, 1, 3))
        .Output("Out");
    t.Attr<std::string>("activation_type", c.act);
    t.Attr<bool>("padding_weights", c.padding);
    const Status s = t.Run();
    EXPECT_FALSE(s.ok()) << c.says;
    EXPECT_NE(s.message().find(c.says), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("fc"), std::string::npos) << s.ToString();
  }
}

// x -> `product` by constant w [k, n] -> elementwise_add of constant b [n]
// -> relu (when `relu`) -> "out".
struct FcProgram {
  Program program;
  Scope scope;
  Tensor x;
};

void BuildFc(FcProgram* p, const std::string& product, const Dims& x_dims,
             int64_t k, int64_t n, bool relu, DType dtype) {
  Block& block = p->program.global_block();
  Dims declared = x_dims;
  declared[0] = -1;
  DeclareFc(block, "x", declared, dtype);
  DeclareFc(block, "w", {k, n}, dtype, true);
  DeclareFc(block, "b", {n}, dtype, true);
  *p->scope.Var("w")->GetMutableTensor() =
      testing::RandomTensor({k, n}, -0.2, 0.2, 11, dtype);
  *p->scope.Var("b")->GetMutableTensor() =
      testing::RandomTensor({n}, -1, 1, 12, dtype);
  p->x = testing::RandomTensor(x_dims, -1, 1, 13, dtype);
  Dims out(declared.begin(), declared.end() - 1);
  if (product == "mul") out = {-1};
  out.push_back(n);
  DeclareFc(block, "p", out, dtype);
  DeclareFc(block, "s", out, dtype);
  OpDesc* mm = block.AppendOp(product);
  mm->SetInput("X", {"x"});
  mm->SetInput("Y", {"w"});
  mm->SetOutput("Out", {"p"});
  OpDesc* add = block.AppendOp("elementwise_add");
  add->SetInput("X", {"p"});
  add->SetInput("Y", {"b"});
  add->SetOutput("Out", {relu ? "s" : "out"});
  add->SetAttr("axis", -1);
  if (relu) {
    OpDesc* r = block.AppendOp("relu");
    r->SetInput("X", {"s"});
    r->SetOutput("Out", {"out"});
  }
  DeclareFc(block, "out", out, dtype);
}

// `fused` and `program` give the same "out" for p's x, twice over on one
// executor (a kept packed W reused).
void ExpectSameOut(const Program& program, const Program& fused, FcProgram* p) {
  ReferenceExecutor plain, fast;
  auto want = plain.Run(program, &p->scope, {{"x", p->x}}, {"out"});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const Tensor& w = (*want)[0];
  for (int run = 0; run < 2; ++run) {
    auto got = fast.Run(fused, &p->scope, {{"x", p->x}}, {"out"});
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const Tensor& g = (*got)[0];
    ASSERT_EQ(g.dims(), w.dims());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double a =
          w.dtype() == DType::kFP32 ? w.data<float>()[i] : w.data<double>()[i];
      const double b =
          g.dtype() == DType::kFP32 ? g.data<float>()[i] : g.data<double>()[i];
      ASSERT_NEAR(b, a, 1e-4) << "element " << i << " run " << run;
    }
  }
}

TEST(FcFusionTest, ProductBiasAndReluBecomeOneFcComputingTheSame) {
  struct Case {
    const char* product;
    Dims x;
    int64_t k, n;
    DType dtype;
  };
  // oneDNN's packed matmul (few columns), SkinnyGemm (few rows by a large
  // W, on AVX-512), and the plain GEMM (fp64).
  const std::vector<Case> cases = {
      {"matmul_v2", {2, 3, 96}, 96, 40, DType::kFP32},
      {"matmul", {2, 512}, 512, 600, DType::kFP32},
      {"mul", {5, 64}, 64, 24, DType::kFP32},
      {"matmul_v2", {4, 32}, 32, 16, DType::kFP64},
  };
  for (const Case& c : cases) {
    for (const bool relu : {false, true}) {
      FcProgram p;
      BuildFc(&p, c.product, c.x, c.k, c.n, relu, c.dtype);
      InferenceFusions only;
      only.channels_last = false;
      auto fused = FuseForInference(p.program, {"out"}, only);
      ASSERT_TRUE(fused.ok()) << fused.status().ToString();
      EXPECT_EQ(fused->fused_fcs, 1) << c.product;
      const Block& block = fused->main.global_block();
      ASSERT_EQ(block.num_ops(), 1) << c.product << " relu " << relu;
      const OpDesc& fc = block.op(0);
      EXPECT_EQ(fc.type(), "fc");
      EXPECT_EQ(fc.FirstInput("Input"), "x");
      EXPECT_EQ(fc.FirstInput("W"), "w");
      EXPECT_EQ(fc.FirstInput("Bias"), "b");
      EXPECT_EQ(fc.FirstOutput("Out"), "out");
      EXPECT_FALSE(fc.HasInput("X"));
      EXPECT_EQ(*fc.GetAttr<int>("in_num_col_dims"),
                static_cast<int>(c.x.size()) - 1);
      EXPECT_EQ(*fc.GetAttr<std::string>("activation_type"),
                relu ? "relu" : "");
      EXPECT_TRUE(*fc.GetAttr<bool>("constant_w"));
      ExpectSameOut(p.program, fused->main, &p);
    }
  }
}

// An fc reading a conv's 4-D output, flattened from dim 1 (Paddle's fc
// layer after convs: mul of x_num_col_dims 1): with the convs run
// channels-last, the fc still flattens the NCHW tensor the program means.
TEST(FcFusionTest, FlattensAConvsOutputInTheProgramsLayout) {
  FcProgram p;
  Block& block = p.program.global_block();
  DeclareFc(block, "img", {-1, 4, 6, 6}, DType::kFP32);
  DeclareFc(block, "cw", {16, 4, 3, 3}, DType::kFP32, true);
  *p.scope.Var("cw")->GetMutableTensor() =
      testing::RandomTensor({16, 4, 3, 3}, -0.3, 0.3, 21, DType::kFP32);
  DeclareFc(block, "cw2", {16, 16, 3, 3}, DType::kFP32, true);
  *p.scope.Var("cw2")->GetMutableTensor() =
      testing::RandomTensor({16, 16, 3, 3}, -0.3, 0.3, 23, DType::kFP32);
  DeclareFc(block, "h", {-1, 16, 6, 6}, DType::kFP32);
  DeclareFc(block, "x", {-1, 16, 6, 6}, DType::kFP32);
  const char* convs[][3] = {{"img", "cw", "h"}, {"h", "cw2", "x"}};
  for (const auto& c : convs) {
    OpDesc* conv = block.AppendOp("conv2d");
    conv->SetInput("Input", {c[0]});
    conv->SetInput("Filter", {c[1]});
    conv->SetOutput("Output", {c[2]});
    conv->SetAttr("strides", std::vector<int>{1, 1});
    conv->SetAttr("paddings", std::vector<int>{1, 1});
    conv->SetAttr("dilations", std::vector<int>{1, 1});
    conv->SetAttr("groups", 1);
  }
  FcProgram fc;  // its ops appended after the conv's, into p
  BuildFc(&fc, "mul", {2, 16, 6, 6}, 576, 10, /*relu=*/true, DType::kFP32);
  for (int i = 0; i < fc.program.global_block().num_ops(); ++i) {
    *block.AppendOp("")->mutable_proto() =
        fc.program.global_block().op(i).proto();
  }
  for (const std::string name : {"w", "b", "p", "s", "out"}) {
    const VarDesc* v = fc.program.global_block().FindVar(name);
    DeclareFc(block, name, v->dims(), DType::kFP32, v->persistable());
  }
  for (const char* name : {"w", "b"}) {
    *p.scope.Var(name)->GetMutableTensor() =
        *fc.scope.Var(name)->GetMutableTensor();
  }
  ReferenceExecutor plain, fast;
  const Tensor img =
      testing::RandomTensor({2, 4, 6, 6}, -1, 1, 22, DType::kFP32);
  auto want = plain.Run(p.program, &p.scope, {{"img", img}}, {"out"});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  auto fused = FuseForInference(p.program, {"out"});
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  EXPECT_EQ(fused->fused_fcs, 1);
  // The two convs run NHWC; a transpose in, and one back before the fc.
  EXPECT_EQ(fused->channels_last_ops, 2);
  EXPECT_EQ(fused->transposes, 2);
  auto got = fast.Run(fused->main, &p.scope, {{"img", img}}, {"out"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ((*got)[0].dims(), (*want)[0].dims());
  for (int64_t i = 0; i < (*want)[0].numel(); ++i) {
    ASSERT_NEAR((*got)[0].data<float>()[i], (*want)[0].data<float>()[i], 1e-4)
        << i;
  }
}

TEST(FcFusionTest, LeavesProductsItCannotTake) {
  enum Change { kFetched, kFedBias, kAxis0, kTransposed, kFedW, kRowBias };
  for (const Change change :
       {kFetched, kFedBias, kAxis0, kTransposed, kFedW, kRowBias}) {
    FcProgram p;
    BuildFc(&p, "matmul_v2", {3, 8}, 8, 8, /*relu=*/false, DType::kFP32);
    Block& block = p.program.global_block();
    std::vector<std::string> fetches = {"out"};
    OpDesc* mm = &block.op(0);
    OpDesc* add = &block.op(1);
    switch (change) {
      case kFetched:  // the product is fetched too
        fetches.push_back("p");
        break;
      case kFedBias:  // the bias is no parameter
        block.Var("b")->SetPersistable(false);
        break;
      case kAxis0:  // the bias runs along rows (8 x 8: it would fit)
        add->SetAttr("axis", 0);
        break;
      case kTransposed:
        mm->SetAttr("trans_y", true);
        break;
      case kFedW:
        block.Var("w")->SetPersistable(false);
        break;
      case kRowBias:
        block.Var("b")->SetDims({1, 8});
        break;
    }
    auto fused = FuseForInference(p.program, fetches);
    ASSERT_TRUE(fused.ok()) << fused.status().ToString();
    EXPECT_EQ(fused->fused_fcs, 0) << change;
    EXPECT_EQ(fused->main.global_block().num_ops(), 2) << change;
    EXPECT_EQ(fused->main.global_block().op(0).type(), "matmul_v2") << change;
  }
}

}  // namespace
}  // namespace parex
