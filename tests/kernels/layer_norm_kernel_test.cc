// Tests of kernels/cpu/layer_norm_kernel.cc and layer_norm's schema
// (graph/ir/ops/norm_ops.cc): gradients by finite differences, values and
// gradients against PaddlePaddle 2.6.2's (tests/kernels/paddle_goldens),
// shape errors naming the op and slot.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(LayerNormKernelTest, GradMatchesFiniteDifferences) {
  struct Case {
    Dims dims;
    int axis;
    bool affine;
  };
  uint32_t seed = 5;
  for (const Case& c : {Case{{4, 6}, 1, true}, Case{{2, 3, 4}, 2, true},
                        Case{{2, 3, 4}, 1, false}, Case{{3, 5}, 1, false}}) {
    SCOPED_TRACE(DimsToString(c.dims) + " axis " + std::to_string(c.axis));
    int64_t right = 1;
    for (size_t i = c.axis; i < c.dims.size(); ++i) right *= c.dims[i];
    OpTester t("layer_norm");
    t.Input("X", RandomTensor(c.dims, -2, 2, seed++));
    if (c.affine) {
      const uint32_t scale_seed = seed++, bias_seed = seed++;
      t.Input("Scale", RandomTensor({right}, 0.5, 1.5, scale_seed))
          .Input("Bias", RandomTensor({right}, -0.5, 0.5, bias_seed));
    }
    t.Output("Y")
        .Output("Mean")
        .Output("Variance")
        .Attr<int>("begin_norm_axis", c.axis);
    std::vector<std::string> wrt = {"X"};
    if (c.affine) wrt = {"X", "Scale", "Bias"};
    EXPECT_THAT(t.CheckGrad(wrt, {"Y"}), IsEmpty());
  }
}

TEST(LayerNormKernelTest, MatchesPaddleGoldens) {
  std::ifstream file(std::string(PAREX_SOURCE_DIR) +
                     "/tests/kernels/paddle_goldens/layer_norm.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json doc = nlohmann::json::parse(file);
  int checked = 0;
  for (const auto& c : doc["cases"]) {
    const Dims dims = c["shape"].get<std::vector<int64_t>>();
    const int axis = c["begin_norm_axis"];
    const bool affine = c["affine"];
    SCOPED_TRACE(DimsToString(dims) + " axis " + std::to_string(axis));
    int64_t right = 1;
    for (size_t i = axis; i < dims.size(); ++i) right *= dims[i];
    OpTester fwd("layer_norm");
    fwd.Input("X", MakeTensor<double>(dims, c["x"].get<std::vector<double>>()));
    if (affine) {
      fwd.Input("Scale", MakeTensor<double>(
                             {right}, c["scale"].get<std::vector<double>>()))
          .Input("Bias", MakeTensor<double>(
                             {right}, c["bias"].get<std::vector<double>>()));
    }
    fwd.Output("Y")
        .Output("Mean")
        .Output("Variance")
        .Attr<int>("begin_norm_axis", axis);
    ASSERT_TRUE(fwd.Run().ok());
    EXPECT_EQ(CompareTensors(
                  fwd.Out("Y"),
                  MakeTensor<double>(dims, c["y"].get<std::vector<double>>()),
                  1e-12, 1e-12),
              "");
    OpTester bwd("layer_norm_grad");
    bwd.Input("X", MakeTensor<double>(dims, c["x"].get<std::vector<double>>()))
        .Input("Mean", fwd.Out("Mean"))
        .Input("Variance", fwd.Out("Variance"))
        .Input("Y@GRAD",
               MakeTensor<double>(dims, c["w"].get<std::vector<double>>()))
        .Output("X@GRAD")
        .Attr<int>("begin_norm_axis", axis);
    if (affine) {
      bwd.Input("Scale", MakeTensor<double>(
                             {right}, c["scale"].get<std::vector<double>>()))
          .Input("Bias", MakeTensor<double>(
                             {right}, c["bias"].get<std::vector<double>>()))
          .Output("Scale@GRAD")
          .Output("Bias@GRAD");
    }
    ASSERT_TRUE(bwd.Run().ok());
    EXPECT_EQ(CompareTensors(bwd.Out("X@GRAD"),
                             MakeTensor<double>(
                                 dims, c["x_grad"].get<std::vector<double>>()),
                             1e-11, 1e-11),
              "");
    if (affine) {
      for (const char* slot : {"scale", "bias"}) {
        const std::string out =
            slot == std::string("scale") ? "Scale@GRAD" : "Bias@GRAD";
        EXPECT_EQ(
            CompareTensors(
                bwd.Out(out),
                MakeTensor<double>(
                    {right},
                    c[std::string(slot) + "_grad"].get<std::vector<double>>()),
                1e-11, 1e-11),
            "")
            << slot;
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 3);
}

TEST(LayerNormKernelTest, ShapeErrorsNameTheOpAndSlot) {
  OpTester axis("layer_norm");
  axis.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Output("Y")
      .Output("Mean")
      .Output("Variance")
      .Attr<int>("begin_norm_axis", 3);
  Status s = axis.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("layer_norm"));
  EXPECT_THAT(s.message(), HasSubstr("begin_norm_axis 3"));
  OpTester scale("layer_norm");
  scale.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Scale", RandomTensor({4}, 0, 1, 2))
      .Output("Y")
      .Output("Mean")
      .Output("Variance");
  s = scale.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("Scale"));
  EXPECT_THAT(s.message(), HasSubstr("must hold 3 values"));
}

TEST(LayerNormKernelTest, CompileTimeShapesKeepAnUnknownBatch) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 4, 8});
  block.Var("x")->SetDType(DType::kFP32);
  for (const char* v : {"y", "mean", "var"}) block.Var(v);
  OpDesc* op = block.AppendOp("layer_norm");
  op->SetInput("X", {"x"});
  op->SetOutput("Y", {"y"});
  op->SetOutput("Mean", {"mean"});
  op->SetOutput("Variance", {"var"});
  op->SetAttr<int>("begin_norm_axis", 2);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 4, 8}));
  EXPECT_EQ(block.FindVar("mean")->dims(), (Dims{-1}));
}

}  // namespace
}  // namespace parex::testing
