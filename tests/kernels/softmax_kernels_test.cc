// Tests of kernels/cpu/softmax_kernels.cc and graph/ir/ops/softmax_ops.cc:
// softmax, cross_entropy and softmax_with_cross_entropy against naive loops
// written here, gradients against finite differences, and label errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/kernel_registry.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Element (o, k, i) of dims viewed as [outer, dims[axis], inner].
struct Split {
  int64_t outer = 1, n = 1, inner = 1;
  Split(const Dims& dims, int axis) {
    if (axis < 0) axis += static_cast<int>(dims.size());
    for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
      (d < axis ? outer : d == axis ? n : inner) *= dims[d];
    }
  }
  int64_t At(int64_t o, int64_t k, int64_t i) const {
    return (o * n + k) * inner + i;
  }
};

Tensor NaiveSoftmax(const Tensor& x, int axis) {
  Split s(x.dims(), axis);
  Tensor y(DType::kFP64, x.dims());
  const double* xd = x.data<double>();
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < s.n; ++k) sum += std::exp(xd[s.At(o, k, i)]);
      for (int64_t k = 0; k < s.n; ++k) {
        y.data<double>()[s.At(o, k, i)] = std::exp(xd[s.At(o, k, i)]) / sum;
      }
    }
  }
  return y;
}

// Soft labels: positive, each row along `axis` summing to 1.
Tensor SoftLabels(const Dims& dims, int axis, uint32_t seed) {
  Tensor t = RandomTensor(dims, 0.1, 1, seed);
  Split s(dims, axis);
  for (int64_t o = 0; o < s.outer; ++o) {
    for (int64_t i = 0; i < s.inner; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < s.n; ++k) sum += t.data<double>()[s.At(o, k, i)];
      for (int64_t k = 0; k < s.n; ++k) t.data<double>()[s.At(o, k, i)] /= sum;
    }
  }
  return t;
}

Dims Collapse(Dims dims, int axis) {
  if (axis < 0) axis += static_cast<int>(dims.size());
  dims[axis] = 1;
  return dims;
}

TEST(SoftmaxKernelTest, HandComputedFloat) {
  OpTester t("softmax");
  t.Input("X",
          MakeTensor<float>({2, 3}, {0, std::log(2.f), std::log(3.f), 5, 5, 5}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(CompareTensors(t.Out("Out"),
                           MakeTensor<double>({2, 3}, {1. / 6, 2. / 6, 3. / 6,
                                                       1. / 3, 1. / 3, 1. / 3}),
                           1e-6, 1e-6),
            "");
}

TEST(SoftmaxKernelTest, EveryAxisMatchesNaiveLoopAndGradChecks) {
  uint32_t seed = 5;
  for (int axis : {-1, 0, 1, 2}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    Tensor x = RandomTensor({2, 3, 4}, -3, 3, seed++);
    OpTester t("softmax");
    t.Input("X", x).Output("Out").Attr("axis", axis);
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(CompareTensors(t.Out("Out"), NaiveSoftmax(x, axis), 1e-14, 1e-12),
              "");
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
  }
}

TEST(SoftmaxKernelTest, LargeLogitsStayFinite) {
  OpTester t("softmax");
  t.Input("X", MakeTensor<float>({1, 2}, {1000, 0})).Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("Out")), (std::vector<float>{1, 0}));
}

TEST(SoftmaxKernelTest, AxisOutOfRangeIsAnError) {
  OpTester t("softmax");
  t.Input("X", RandomTensor({2, 3}, 0, 1, 1)).Output("Out").Attr("axis", 2);
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("softmax"));
  EXPECT_THAT(s.message(), HasSubstr("axis"));
}

TEST(CrossEntropyKernelTest, HardLabelHandComputed) {
  OpTester t("cross_entropy");
  t.Input("X", MakeTensor<float>({3, 3}, {0.2f, 0.5f, 0.3f,  //
                                          0.1f, 0.1f, 0.8f,  //
                                          0.3f, 0.3f, 0.4f}))
      .Input("Label", MakeTensor<int64_t>({3, 1}, {1, 2, -100}))
      .Output("Y");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Y").dims(), (Dims{3, 1}));
  EXPECT_EQ(CompareTensors(
                t.Out("Y"),
                MakeTensor<double>({3, 1}, {-std::log(0.5), -std::log(0.8), 0}),
                1e-6, 1e-6),
            "");
}

TEST(CrossEntropyKernelTest, SoftLabelMatchesNaiveLoop) {
  Tensor x = RandomTensor({2, 2, 4}, 0.1, 1, 3);
  Tensor label = SoftLabels({2, 2, 4}, -1, 4);
  OpTester t("cross_entropy");
  t.Input("X", x).Input("Label", label).Output("Y").Attr("soft_label", true);
  ASSERT_TRUE(t.Run().ok());
  Tensor expected(DType::kFP64, {2, 2, 1});
  for (int64_t r = 0; r < 4; ++r) {
    double loss = 0;
    for (int64_t k = 0; k < 4; ++k) {
      loss -= label.data<double>()[r * 4 + k] *
              std::log(x.data<double>()[r * 4 + k]);
    }
    expected.data<double>()[r] = loss;
  }
  EXPECT_EQ(CompareTensors(t.Out("Y"), expected, 1e-14, 1e-12), "");
}

TEST(CrossEntropyKernelTest, GradMatchesFiniteDifferences) {
  {
    SCOPED_TRACE("hard");
    OpTester t("cross_entropy");
    t.Input("X", RandomTensor({4, 5}, 0.2, 1, 8))
        .Input("Label", MakeTensor<int64_t>({4, 1}, {0, 4, 2, 3}))
        .Output("Y")
        .Attr("ignore_index", 3);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Y"}), IsEmpty());
  }
  {
    SCOPED_TRACE("soft");
    OpTester t("cross_entropy");
    t.Input("X", RandomTensor({2, 3, 4}, 0.2, 1, 9))
        .Input("Label", SoftLabels({2, 3, 4}, -1, 10))
        .Output("Y")
        .Attr("soft_label", true);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Y"}), IsEmpty());
  }
}

TEST(CrossEntropyKernelTest, LabelErrorsNameTheOp) {
  struct Bad {
    Dims label;
    std::vector<int64_t> values;
    const char* message;
  };
  for (const Bad& b : std::vector<Bad>{{{2}, {0, 1}, "rank"},
                                       {{2, 2}, {0, 1, 0, 1}, "extent 1"},
                                       {{2, 1}, {0, 3}, "outside [0, 3)"},
                                       {{3, 1}, {0, 1, 2}, "dim 0"}}) {
    SCOPED_TRACE(b.message);
    OpTester t("cross_entropy");
    t.Input("X", RandomTensor({2, 3}, 0.1, 1, 1))
        .Input("Label", MakeTensor<int64_t>(b.label, b.values))
        .Output("Y");
    Status s = t.Run();
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.message(), HasSubstr("cross_entropy"));
    EXPECT_THAT(s.message(), HasSubstr(b.message));
  }
}

TEST(SoftmaxWithCrossEntropyKernelTest, HardLabelMatchesNaiveLoopOnEveryAxis) {
  uint32_t seed = 20;
  const Dims dims = {2, 3, 4};
  for (int axis : {-1, 0, 1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    Split s(dims, axis);
    Tensor logits = RandomTensor(dims, -4, 4, seed++);
    Tensor label = RandomIntTensor(Collapse(dims, axis), 0, s.n - 1, seed++);
    label.data<int64_t>()[1] = -100;  // one ignored row
    OpTester t("softmax_with_cross_entropy");
    t.Input("Logits", logits)
        .Input("Label", label)
        .Output("Softmax")
        .Output("Loss")
        .Attr("axis", axis);
    ASSERT_TRUE(t.Run().ok());
    Tensor softmax = NaiveSoftmax(logits, axis);
    EXPECT_EQ(CompareTensors(t.Out("Softmax"), softmax, 1e-14, 1e-12), "");
    Tensor loss(DType::kFP64, Collapse(dims, axis));
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t r = o * s.inner + i;
        const int64_t l = label.data<int64_t>()[r];
        loss.data<double>()[r] =
            l == -100 ? 0 : -std::log(softmax.data<double>()[s.At(o, l, i)]);
      }
    }
    EXPECT_EQ(CompareTensors(t.Out("Loss"), loss, 1e-12, 1e-10), "");
    EXPECT_THAT(t.CheckGrad({"Logits"}, {"Loss"}), IsEmpty());
  }
}

TEST(SoftmaxWithCrossEntropyKernelTest,
     SoftLabelMatchesNaiveLoopAndGradChecks) {
  uint32_t seed = 40;
  const Dims dims = {3, 2, 3};
  for (int axis : {-1, 1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    Split s(dims, axis);
    Tensor logits = RandomTensor(dims, -4, 4, seed++);
    Tensor label = SoftLabels(dims, axis, seed++);
    OpTester t("softmax_with_cross_entropy");
    t.Input("Logits", logits)
        .Input("Label", label)
        .Output("Softmax")
        .Output("Loss")
        .Attr("soft_label", true)
        .Attr("axis", axis);
    ASSERT_TRUE(t.Run().ok());
    Tensor softmax = NaiveSoftmax(logits, axis);
    Tensor loss(DType::kFP64, Collapse(dims, axis));
    for (int64_t o = 0; o < s.outer; ++o) {
      for (int64_t i = 0; i < s.inner; ++i) {
        double l = 0;
        for (int64_t k = 0; k < s.n; ++k) {
          l -= label.data<double>()[s.At(o, k, i)] *
               std::log(softmax.data<double>()[s.At(o, k, i)]);
        }
        loss.data<double>()[o * s.inner + i] = l;
      }
    }
    EXPECT_EQ(CompareTensors(t.Out("Loss"), loss, 1e-12, 1e-10), "");
    EXPECT_THAT(t.CheckGrad({"Logits"}, {"Loss"}), IsEmpty());
  }
}

TEST(SoftmaxWithCrossEntropyKernelTest, LargeLogitsGiveFiniteLossFloat) {
  OpTester t("softmax_with_cross_entropy");
  t.Input("Logits", MakeTensor<float>({1, 2}, {1000, 0}))
      .Input("Label", MakeTensor<int64_t>({1, 1}, {1}))
      .Output("Softmax")
      .Output("Loss");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_FLOAT_EQ(ToVector<float>(t.Out("Loss"))[0], 1000.f);
}

TEST(SoftmaxWithCrossEntropyKernelTest, LabelErrorsNameTheOp) {
  OpTester rank("softmax_with_cross_entropy");
  rank.Input("Logits", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Label", MakeTensor<int64_t>({2}, {0, 1}))
      .Output("Softmax")
      .Output("Loss");
  Status s = rank.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("softmax_with_cross_entropy"));
  EXPECT_THAT(s.message(), HasSubstr("rank"));

  OpTester range("softmax_with_cross_entropy");
  range.Input("Logits", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Label", MakeTensor<int64_t>({2, 1}, {0, -1}))
      .Output("Softmax")
      .Output("Loss");
  s = range.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("outside [0, 3)"));

  OpTester dtype("softmax_with_cross_entropy");
  dtype.Input("Logits", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Label", MakeTensor<double>({2, 1}, {0, 1}))
      .Output("Softmax")
      .Output("Loss");
  s = dtype.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("int64"));
}

TEST(SoftmaxWithCrossEntropyKernelTest, CompileTimeShapesAcceptUnknownBatch) {
  Program program;
  Block& block = program.global_block();
  block.Var("logits")->SetDims({-1, 10});
  block.Var("logits")->SetDType(DType::kFP32);
  block.Var("label")->SetDims({-1, 1});
  block.Var("label")->SetDType(DType::kInt64);
  block.Var("softmax");
  block.Var("loss");
  OpDesc* op = block.AppendOp("softmax_with_cross_entropy");
  op->SetInput("Logits", {"logits"});
  op->SetInput("Label", {"label"});
  op->SetOutput("Softmax", {"softmax"});
  op->SetOutput("Loss", {"loss"});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("softmax")->dims(), (Dims{-1, 10}));
  EXPECT_EQ(block.FindVar("loss")->dims(), (Dims{-1, 1}));
  EXPECT_EQ(block.FindVar("loss")->dtype(), DType::kFP32);

  block.Var("label")->SetDims({-1, 2});
  Status s = InferShapeAtCompileTime(*op, block, false);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("softmax_with_cross_entropy"));
}

TEST(SoftmaxKernelTest, SchemasDeclareFluidGradSlots) {
  const OpSchemaRegistry& r = OpSchemaRegistry::Global();
  EXPECT_EQ(r.Find("softmax")->grad_inputs(),
            (std::vector<std::string>{"Out", "Out@GRAD"}));
  EXPECT_EQ(r.Find("cross_entropy")->grad_inputs(),
            (std::vector<std::string>{"X", "Label", "Y@GRAD"}));
  EXPECT_EQ(r.Find("softmax_with_cross_entropy")->grad_inputs(),
            (std::vector<std::string>{"Label", "Softmax", "Loss@GRAD"}));
  EXPECT_EQ(r.Find("softmax_with_cross_entropy")->grad_outputs(),
            (std::vector<std::string>{"Logits@GRAD"}));
}

TEST(SoftmaxKernelTest, RegistersCpuKernelsForItsDTypes) {
  ExpectCpuKernelTable({{"softmax", kFloats},
                        {"softmax_grad", kFloats},
                        {"cross_entropy", kFloats},
                        {"cross_entropy_grad", kFloats},
                        {"softmax_with_cross_entropy", kFloats},
                        {"softmax_with_cross_entropy_grad", kFloats}});
}

}  // namespace
}  // namespace parex::testing

// ---- sigmoid_cross_entropy_with_logits
// ------------------------------------------

namespace parex::testing {
namespace {

// Against PaddlePaddle 2.6.2 (tests/kernels/paddle_goldens/tensor_ops.json):
// soft labels with ignored ones, normalize, another ignore_index, fp32,
// every label ignored with normalize (NaN, as Paddle).
TEST(SigmoidCrossEntropyWithLogitsKernelTest, MatchesPaddle) {
  EXPECT_EQ(CheckPaddleGoldens("sigmoid_cross_entropy_with_logits"), 5);
  ExpectCpuKernels("sigmoid_cross_entropy_with_logits",
                   {DType::kFP32, DType::kFP64});
  ExpectCpuKernels("sigmoid_cross_entropy_with_logits_grad",
                   {DType::kFP32, DType::kFP64});
}

TEST(SigmoidCrossEntropyWithLogitsKernelTest, GradMatchesFiniteDifferences) {
  const Tensor label = MakeTensor<double>(
      {2, 4}, {0.0, 1.0, -100.0, 0.25, 1.0, 0.5, 0.0, -100.0});
  uint32_t seed = 90;
  for (bool normalize : {false, true}) {
    for (int ignore_index : {-100, 0}) {
      SCOPED_TRACE("normalize " + std::to_string(normalize) + " ignore_index " +
                   std::to_string(ignore_index));
      OpTester t("sigmoid_cross_entropy_with_logits");
      t.Input("X", RandomTensor({2, 4}, -3, 3, seed++))
          .Input("Label", label)
          .Output("Out")
          .Attr<bool>("normalize", normalize)
          .Attr<int>("ignore_index", ignore_index);
      EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(SigmoidCrossEntropyWithLogitsKernelTest, BadInputsNameTheOp) {
  OpTester dims("sigmoid_cross_entropy_with_logits");
  dims.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Label", RandomTensor({3, 2}, 0, 1, 2))
      .Output("Out");
  Status s = dims.Run();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'sigmoid_cross_entropy_with_logits'"));
  EXPECT_THAT(s.message(), HasSubstr("Label [3,2] differs from X [2,3]"));
  OpTester weight("sigmoid_cross_entropy_with_logits");
  weight.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Input("Label", RandomTensor({2, 3}, 0, 1, 2))
      .Input("pos_weight", RandomTensor({2, 3}, 0, 1, 3))
      .Output("Out");
  s = weight.Run();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), HasSubstr("input 'pos_weight' is not supported"));
}

}  // namespace
}  // namespace parex::testing
