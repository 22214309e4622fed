// Tests of reshape2, transpose2, concat and split
// (kernels/cpu/shape_kernels.cc, schemas in graph/ir/ops/shape_ops.cc): values
// against index arithmetic written here, integer dtypes, gradients against
// finite differences, shape errors and compile-time shapes; shapes and slice
// bounds given as tensors (graph/ir/spec/value_inputs.h) against Paddle's
// goldens (shape_tensors.json), by hand, and from hostile programs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "graph/ir/op_schema.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// 0, 1, ..., numel-1 as T.
template <typename T>
Tensor Iota(const Dims& dims) {
  std::vector<T> v(Numel(dims));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<T>(i);
  return MakeTensor<T>(dims, v);
}

// Runs t expecting an error that names `op`; returns the message.
std::string ExpectError(OpTester& t, const std::string& op) {
  Status s = t.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'" + op + "'"));
  return s.message();
}

// ---- reshape2 ---------------------------------------------------------------

TEST(Reshape2KernelTest, CopiesAndInfers) {
  OpTester t("reshape2");
  t.Input("X", Iota<double>({2, 3, 4}))
      .Output("Out")
      .Output("XShape")
      .Attr("shape", std::vector<int>{0, -1, 2});
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Out").dims(), (Dims{2, 6, 2}));
  EXPECT_EQ(ToVector<double>(t.Out("Out")),
            ToVector<double>(Iota<double>({24})));
  EXPECT_EQ(t.Out("XShape").dims(), (Dims{0, 2, 3, 4}));
  EXPECT_EQ(t.Out("XShape").numel(), 0);
}

TEST(Reshape2KernelTest, IntegerAndBoolDtypes) {
  OpTester t("reshape2");
  t.Input("X", Iota<int64_t>({6}))
      .Output("Out")
      .Output("XShape")
      .Attr("shape", std::vector<int>{3, 2});
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(t.Out("Out")),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  Tensor flags(DType::kBool, {2, 2});
  const bool values[] = {true, false, false, true};
  for (int i = 0; i < 4; ++i) flags.data<bool>()[i] = values[i];
  OpTester b("reshape2");
  b.Input("X", flags).Output("Out").Attr("shape", std::vector<int>{4});
  ASSERT_TRUE(b.Run().ok());
  ASSERT_EQ(b.Out("Out").dims(), (Dims{4}));
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(b.Out("Out").data<bool>()[i], values[i]);
}

TEST(Reshape2KernelTest, Gradient) {
  OpTester t("reshape2");
  t.Input("X", RandomTensor({2, 3, 2}, -1, 1, 1))
      .Output("Out")
      .Output("XShape")
      .Attr("shape", std::vector<int>{-1, 3});
  EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
}

TEST(Reshape2KernelTest, TwoUnknownExtentsIsAnError) {
  OpTester t("reshape2");
  t.Input("X", Iota<double>({2, 3}))
      .Output("Out")
      .Output("XShape")
      .Attr("shape", std::vector<int>{-1, -1});
  EXPECT_THAT(ExpectError(t, "reshape2"), HasSubstr("more than one -1"));
}

TEST(Reshape2KernelTest, WrongElementCountIsAnError) {
  OpTester t("reshape2");
  t.Input("X", Iota<double>({2, 3}))
      .Output("Out")
      .Attr("shape", std::vector<int>{4, 2});
  ExpectError(t, "reshape2");
  OpTester u("reshape2");
  u.Input("X", Iota<double>({2, 3}))
      .Output("Out")
      .Attr("shape", std::vector<int>{4, -1});
  ExpectError(u, "reshape2");
}

// ---- shapes and bounds as tensors ------------------------------------------

TEST(ShapeTensorsTest, MatchPaddleGoldens) {
  EXPECT_EQ(CheckPaddleGoldens("reshape2", {}, "shape_tensors.json"), 2);
  EXPECT_EQ(CheckPaddleGoldens("expand_v2", {}, "shape_tensors.json"), 2);
  EXPECT_EQ(CheckPaddleGoldens("slice", {}, "shape_tensors.json"), 2);
  EXPECT_EQ(CheckPaddleGoldens("bilinear_interp_v2", {}, "shape_tensors.json"),
            2);
  EXPECT_EQ(CheckPaddleGoldens("nearest_interp_v2", {}, "shape_tensors.json"),
            1);
  EXPECT_EQ(CheckPaddleGoldens("pad3d", {}, "shape_tensors.json"), 1);
  EXPECT_EQ(CheckPaddleGoldens("top_k_v2", {}, "shape_tensors.json"), 1);
}

Tensor OneInt(int64_t v) { return MakeTensor<int64_t>({1}, {v}); }

Tensor OneBool() {
  Tensor t(DType::kBool, {1});
  t.data<bool>()[0] = true;
  return t;
}

// The tensors win over the attribute, in Paddle's priority order.
TEST(ShapeTensorsTest, TensorsOverrideTheAttribute) {
  OpTester r("reshape2");
  r.Input("X", Iota<double>({2, 3, 4}))
      .Inputs("ShapeTensor", {OneInt(0), OneInt(-1), OneInt(2)})
      .Input("Shape", MakeTensor<int32_t>({2}, {4, 6}))
      .Output("Out")
      .Output("XShape")
      .Attr("shape", std::vector<int>{24});
  ASSERT_TRUE(r.Run().ok());
  EXPECT_EQ(r.Out("Out").dims(), (Dims{2, 6, 2}));  // ShapeTensor first
  OpTester e("expand_v2");
  e.Input("X", Iota<double>({3, 1}))
      .Input("Shape", MakeTensor<int64_t>({3}, {2, 3, 4}))
      .Inputs("expand_shapes_tensor", {OneInt(3), OneInt(5)})
      .Output("Out")
      .Attr("shape", std::vector<int>{3, 1});
  ASSERT_TRUE(e.Run().ok());
  EXPECT_EQ(e.Out("Out").dims(), (Dims{2, 3, 4}));  // Shape first
  OpTester sl("slice");
  sl.Input("Input", Iota<double>({4, 5}))
      .Inputs("StartsTensorList", {OneInt(1)})
      .Input("EndsTensor", OneInt(-1))
      .Output("Out")
      .Attr("axes", std::vector<int>{1})
      .Attr("starts", std::vector<int>{0})
      .Attr("ends", std::vector<int>{1});
  ASSERT_TRUE(sl.Run().ok());
  EXPECT_EQ(sl.Out("Out").dims(), (Dims{4, 3}));
  EXPECT_EQ(ToVector<double>(sl.Out("Out"))[0], 1.0);  // starts at 1
  OpTester g("slice");
  g.Input("Input", DistinctRandomTensor({3, 4}, -1, 1, 3))
      .Inputs("StartsTensorList", {OneInt(1), OneInt(-3)})
      .Inputs("EndsTensorList", {OneInt(3), OneInt(3)})
      .Output("Out")
      .Attr("axes", std::vector<int>{0, 1});
  EXPECT_THAT(g.CheckGrad({"Input"}, {"Out"}), IsEmpty());
}

// A shape tensor from a hostile program: negative, huge, fractional or
// misshapen values end with an error naming the op, before anything is
// allocated.
TEST(ShapeTensorsTest, HostileValuesAreNamed) {
  struct Case {
    std::vector<Tensor> shape;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{OneInt(-7), OneInt(4)}, "has a negative extent"},
      {{OneInt(int64_t{1} << 40), OneInt(int64_t{1} << 20)},
       "holds more than 2^48 elements"},
      {{MakeTensor<int64_t>({2}, {2, 3})}, "tensor 0 holds 2 values, not one"},
      {{MakeTensor<float>({1}, {2.5f}), OneInt(4)},
       "not an integer a shape takes"},
      {{MakeTensor<float>({1}, {1e30f}), OneInt(4)},
       "not an integer a shape takes"},
      {{OneBool()}, "not a number type"},
  };
  for (const Case& c : cases) {
    OpTester t("reshape2");
    t.Input("X", Iota<double>({2, 3, 4}))
        .Inputs("ShapeTensor", c.shape)
        .Output("Out")
        .Output("XShape");
    EXPECT_THAT(ExpectError(t, "reshape2"), HasSubstr(c.message));
  }
  OpTester e("expand_v2");
  e.Input("X", Iota<double>({3, 1}))
      .Input("Shape", MakeTensor<int64_t>({2}, {3, -4}))
      .Output("Out");
  EXPECT_THAT(ExpectError(e, "expand_v2"), HasSubstr("is -4"));
  OpTester pad("pad3d");
  pad.Input("X", Iota<double>({1, 1, 2, 2, 2}))
      .Input("Paddings", MakeTensor<int32_t>({6}, {1, 1, -2, 0, 0, 0}))
      .Output("Out");
  EXPECT_THAT(ExpectError(pad, "pad3d"), HasSubstr("padding -2 is negative"));
  OpTester k("top_k_v2");
  k.Input("X", Iota<double>({2, 3}))
      .Input("K", MakeTensor<int32_t>({1}, {4}))
      .Output("Out")
      .Output("Indices");
  EXPECT_THAT(ExpectError(k, "top_k_v2"), HasSubstr("k = 4 exceeds"));
  OpTester big("expand_v2");
  big.Input("X", Iota<double>({3, 1}))
      .Input("Shape", MakeTensor<int64_t>({2}, {3, int64_t{1} << 50}))
      .Output("Out");
  EXPECT_THAT(ExpectError(big, "expand_v2"), HasSubstr("expand_v2"));
}

TEST(Reshape2SchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 784});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("out");
  block.Var("xshape");
  OpDesc* op = block.AppendOp("reshape2");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  op->SetOutput("XShape", {"xshape"});
  op->SetAttr("shape", std::vector<int>{-1, 1, 28, 28});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 1, 28, 28}));
  EXPECT_EQ(block.FindVar("xshape")->dims(), (Dims{0, -1, 784}));
  op->SetAttr("shape", std::vector<int>{0, 28, 28});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 28, 28}));
}

// ---- transpose2 -------------------------------------------------------------

TEST(Transpose2KernelTest, PermutesByIndex) {
  // out[a][b][c] = x[b][c][a] for axis {2, 0, 1}, x [2,3,4].
  OpTester t("transpose2");
  t.Input("X", Iota<double>({2, 3, 4}))
      .Output("Out")
      .Output("XShape")
      .Attr("axis", std::vector<int>{2, 0, 1});
  ASSERT_TRUE(t.Run().ok());
  ASSERT_EQ(t.Out("Out").dims(), (Dims{4, 2, 3}));
  const double* out = t.Out("Out").data<double>();
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(out[(a * 2 + b) * 3 + c], (b * 3 + c) * 4 + a);
  EXPECT_EQ(t.Out("XShape").dims(), (Dims{0, 2, 3, 4}));
}

TEST(Transpose2KernelTest, Int32MatrixAndFourDims) {
  OpTester t("transpose2");
  t.Input("X", Iota<int32_t>({2, 3}))
      .Output("Out")
      .Attr("axis", std::vector<int>{1, 0});
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<int32_t>(t.Out("Out")),
            (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  // NCHW -> NHWC.
  OpTester u("transpose2");
  u.Input("X", Iota<float>({2, 3, 2, 2}))
      .Output("Out")
      .Attr("axis", std::vector<int>{0, 2, 3, 1});
  ASSERT_TRUE(u.Run().ok());
  const float* out = u.Out("Out").data<float>();
  for (int n = 0; n < 2; ++n)
    for (int h = 0; h < 2; ++h)
      for (int w = 0; w < 2; ++w)
        for (int c = 0; c < 3; ++c)
          EXPECT_EQ(out[((n * 2 + h) * 2 + w) * 3 + c],
                    ((n * 3 + c) * 2 + h) * 2 + w);
}

TEST(Transpose2KernelTest, Gradient) {
  OpTester t("transpose2");
  t.Input("X", RandomTensor({2, 3, 4}, -1, 1, 2))
      .Output("Out")
      .Output("XShape")
      .Attr("axis", std::vector<int>{1, 2, 0});
  EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
}

TEST(Transpose2KernelTest, BadAxisIsAnError) {
  OpTester t("transpose2");
  t.Input("X", Iota<double>({2, 3}))
      .Output("Out")
      .Attr("axis", std::vector<int>{0, 0});
  EXPECT_THAT(ExpectError(t, "transpose2"), HasSubstr("permutation"));
}

// ---- concat -----------------------------------------------------------------

TEST(ConcatKernelTest, JoinsAlongAxis) {
  OpTester t("concat");
  t.Inputs("X", {MakeTensor<double>({2, 1}, {1, 2}),
                 MakeTensor<double>({2, 2}, {3, 4, 5, 6}),
                 MakeTensor<double>({2, 0}, {})})
      .Output("Out")
      .Attr("axis", -1);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(
      CompareTensors(t.Out("Out"),
                     MakeTensor<double>({2, 3}, {1, 3, 4, 2, 5, 6}), 0, 0),
      "");
}

TEST(ConcatKernelTest, Int64AlongFirstAxis) {
  OpTester t("concat");
  t.Inputs("X", {Iota<int64_t>({1, 3}), Iota<int64_t>({2, 3})}).Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(t.Out("Out")),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 3, 4, 5}));
}

TEST(ConcatKernelTest, Gradient) {
  OpTester t("concat");
  t.Inputs("X", {RandomTensor({2, 1, 3}, -1, 1, 3),
                 RandomTensor({2, 2, 3}, -1, 1, 4),
                 RandomTensor({2, 3, 3}, -1, 1, 5)})
      .Output("Out")
      .Attr("axis", 1);
  EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
}

TEST(ConcatKernelTest, MismatchedDimsIsAnError) {
  OpTester t("concat");
  t.Inputs("X", {Iota<double>({2, 3}), Iota<double>({3, 3})})
      .Output("Out")
      .Attr("axis", 1);
  EXPECT_THAT(ExpectError(t, "concat"), HasSubstr("does not match"));
}

TEST(ConcatKernelTest, AxisOutOfRangeIsAnError) {
  OpTester t("concat");
  t.Inputs("X", {Iota<double>({2, 3}), Iota<double>({2, 3})})
      .Output("Out")
      .Attr("axis", 2);
  ExpectError(t, "concat");
}

// ---- split ------------------------------------------------------------------

TEST(SplitKernelTest, EqualParts) {
  OpTester t("split");
  t.Input("X", Iota<double>({2, 6}))
      .Output("Out", 3)
      .Attr("num", 3)
      .Attr("axis", 1);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<double>(t.Out("Out", 0)),
            (std::vector<double>{0, 1, 6, 7}));
  EXPECT_EQ(ToVector<double>(t.Out("Out", 1)),
            (std::vector<double>{2, 3, 8, 9}));
  EXPECT_EQ(ToVector<double>(t.Out("Out", 2)),
            (std::vector<double>{4, 5, 10, 11}));
}

TEST(SplitKernelTest, SectionsWithInferredPartAndNegativeAxis) {
  OpTester t("split");
  t.Input("X", Iota<int32_t>({2, 5}))
      .Output("Out", 3)
      .Attr("sections", std::vector<int>{1, -1, 2})
      .Attr("axis", -1);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Out", 1).dims(), (Dims{2, 2}));
  EXPECT_EQ(ToVector<int32_t>(t.Out("Out", 0)), (std::vector<int32_t>{0, 5}));
  EXPECT_EQ(ToVector<int32_t>(t.Out("Out", 1)),
            (std::vector<int32_t>{1, 2, 6, 7}));
  EXPECT_EQ(ToVector<int32_t>(t.Out("Out", 2)),
            (std::vector<int32_t>{3, 4, 8, 9}));
}

TEST(SplitKernelTest, UnevenNumIsAnError) {
  OpTester t("split");
  t.Input("X", Iota<double>({2, 5}))
      .Output("Out", 2)
      .Attr("num", 2)
      .Attr("axis", 1);
  EXPECT_THAT(ExpectError(t, "split"), HasSubstr("equal parts"));
}

TEST(SplitKernelTest, SectionsNotSummingIsAnError) {
  OpTester t("split");
  t.Input("X", Iota<double>({2, 5}))
      .Output("Out", 2)
      .Attr("sections", std::vector<int>{2, 2})
      .Attr("axis", 1);
  EXPECT_THAT(ExpectError(t, "split"), HasSubstr("sum to"));
}

TEST(SplitSchemaTest, GradientIsConcatByFluidConvention) {
  // Fluid's split grad maker emits concat; split declares no gradient op.
  const OpSchema* split = OpSchemaRegistry::Global().Find("split");
  ASSERT_NE(split, nullptr);
  EXPECT_FALSE(split->has_grad());
  ASSERT_NE(OpSchemaRegistry::Global().Find("concat"), nullptr);
}

}  // namespace
}  // namespace parex::testing

namespace parex::testing {
namespace {

// unsqueeze2, squeeze2 and flatten_contiguous_range give the dims PaddlePaddle
// 2.6.2 gives (tests/kernels/paddle_goldens/views.json), copy the data in
// order, write XShape, and their gradients restore X's dims (finite
// differences).
TEST(ViewKernelsTest, DimsMatchPaddleAndGradientsRestoreX) {
  std::ifstream file(std::string(PAREX_SOURCE_DIR) +
                     "/tests/kernels/paddle_goldens/views.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json doc = nlohmann::json::parse(file);
  uint32_t seed = 40;
  int checked = 0;
  for (const auto& c : doc["cases"]) {
    const std::string op = c["op"];
    const Dims x = c["x"].get<std::vector<int64_t>>();
    SCOPED_TRACE(op + " " + DimsToString(x) + " " + c["attrs"].dump());
    auto set_attrs = [&](OpTester& t) {
      for (const auto& [name, value] : c["attrs"].items()) {
        if (value.is_array()) {
          t.Attr<std::vector<int>>(name, value.get<std::vector<int>>());
        } else {
          t.Attr<int>(name, value.get<int>());
        }
      }
    };
    const Tensor input = RandomTensor(x, -1, 1, seed++);
    OpTester t(op);
    t.Input("X", input).Output("Out").Output("XShape");
    set_attrs(t);
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(t.Out("Out").dims(), Dims(c["out"].get<std::vector<int64_t>>()));
    EXPECT_EQ(ToVector<double>(t.Out("Out")), ToVector<double>(input));
    Dims xshape = {0};
    xshape.insert(xshape.end(), x.begin(), x.end());
    EXPECT_EQ(t.Out("XShape").dims(), xshape);
    EXPECT_THAT(t.CheckGrad({"X"}, {"Out"}), IsEmpty());
    ++checked;
  }
  EXPECT_EQ(checked, 15);
}

TEST(ViewKernelsTest, BadAxesNameTheOp) {
  OpTester unsqueeze("unsqueeze2");
  unsqueeze.Input("X", RandomTensor({2, 3}, 0, 1, 1))
      .Output("Out")
      .Attr<std::vector<int>>("axes", {4});
  Status s = unsqueeze.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("unsqueeze2"));
  EXPECT_THAT(s.message(), HasSubstr("axes entry 4"));
  OpTester flatten("flatten_contiguous_range");
  flatten.Input("X", RandomTensor({2, 3, 4}, 0, 1, 1))
      .Output("Out")
      .Attr<int>("start_axis", 2)
      .Attr<int>("stop_axis", 1);
  s = flatten.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("start_axis 2 is after stop_axis 1"));
  OpTester squeeze("squeeze2");
  squeeze.Input("X", RandomTensor({2, 1}, 0, 1, 1))
      .Output("Out")
      .Attr<std::vector<int>>("axes", {5});
  s = squeeze.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("axis 5 is out of range"));
}

}  // namespace
}  // namespace parex::testing

namespace parex::testing {
namespace {

// slice against PaddlePaddle 2.6.2 (tests/kernels/paddle_goldens/slice.json):
// negative and clamped bounds, decrease_axis; values, dims and the gradient
// of sum(w * out); gradients by finite differences too.
TEST(SliceKernelTest, MatchesPaddleAndFiniteDifferences) {
  std::ifstream file(std::string(PAREX_SOURCE_DIR) +
                     "/tests/kernels/paddle_goldens/slice.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json doc = nlohmann::json::parse(file);
  int checked = 0;
  for (const auto& c : doc["cases"]) {
    SCOPED_TRACE(c["x"].dump() + " axes " + c["axes"].dump());
    const Dims x = c["x"].get<std::vector<int64_t>>();
    std::vector<double> values(Numel(x));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<double>(i);
    auto build = [&](OpTester& t, Tensor input) {
      t.Input("Input", std::move(input))
          .Output("Out")
          .Attr<std::vector<int>>("axes", c["axes"].get<std::vector<int>>())
          .Attr<std::vector<int64_t>>("starts",
                                      c["starts"].get<std::vector<int64_t>>())
          .Attr<std::vector<int64_t>>("ends",
                                      c["ends"].get<std::vector<int64_t>>())
          .Attr<std::vector<int>>("decrease_axis",
                                  c["decrease_axis"].get<std::vector<int>>());
    };
    OpTester t("slice");
    build(t, MakeTensor<double>(x, values));
    ASSERT_TRUE(t.Run().ok());
    const Dims out_dims = c["out_dims"].get<std::vector<int64_t>>();
    EXPECT_EQ(t.Out("Out").dims(), out_dims);
    EXPECT_EQ(ToVector<double>(t.Out("Out")),
              c["out"].get<std::vector<double>>());
    OpTester g("slice_grad");
    g.Input("Input", MakeTensor<double>(x, values))
        .Input("Out@GRAD",
               MakeTensor<double>(out_dims, c["w"].get<std::vector<double>>()))
        .Output("Input@GRAD")
        .Attr<std::vector<int>>("axes", c["axes"].get<std::vector<int>>())
        .Attr<std::vector<int64_t>>("starts",
                                    c["starts"].get<std::vector<int64_t>>())
        .Attr<std::vector<int64_t>>("ends",
                                    c["ends"].get<std::vector<int64_t>>())
        .Attr<std::vector<int>>("decrease_axis",
                                c["decrease_axis"].get<std::vector<int>>());
    ASSERT_TRUE(g.Run().ok());
    EXPECT_EQ(ToVector<double>(g.Out("Input@GRAD")),
              c["x_grad"].get<std::vector<double>>());
    OpTester fd("slice");
    build(fd, RandomTensor(x, -1, 1, 70 + checked));
    EXPECT_THAT(fd.CheckGrad({"Input"}, {"Out"}), IsEmpty());
    ++checked;
  }
  EXPECT_EQ(checked, 6);
}

TEST(SliceKernelTest, BadAttributesNameTheOp) {
  struct Case {
    std::vector<int> axes;
    std::vector<int64_t> starts, ends;
    std::vector<int> decrease;
    std::string message;
  };
  for (const Case& c :
       {Case{{1}, {0, 1}, {2}, {}, "axes, starts and ends have 1, 2 and 1"},
        Case{{3}, {0}, {1}, {}, "axis 3 is out of range"},
        Case{{1, -1}, {0, 0}, {1, 1}, {}, "is sliced twice"},
        Case{{1}, {3}, {1}, {}, "end 1 comes before start 3"},
        Case{{1}, {0}, {2}, {1}, "decrease_axis 1 has extent 2"}}) {
    OpTester t("slice");
    t.Input("Input", RandomTensor({2, 4}, 0, 1, 1))
        .Output("Out")
        .Attr<std::vector<int>>("axes", c.axes)
        .Attr<std::vector<int64_t>>("starts", c.starts)
        .Attr<std::vector<int64_t>>("ends", c.ends)
        .Attr<std::vector<int>>("decrease_axis", c.decrease);
    Status s = t.Run();
    EXPECT_FALSE(s.ok()) << c.message;
    EXPECT_THAT(s.message(), HasSubstr("slice")) << c.message;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
  // Every axis dropped: one element remains, as a [1] (parex's choice).
  OpTester one("slice");
  one.Input("Input", MakeTensor<double>({2, 3}, {0, 1, 2, 3, 4, 5}))
      .Output("Out")
      .Attr<std::vector<int>>("axes", {0, 1})
      .Attr<std::vector<int64_t>>("starts", {1, 2})
      .Attr<std::vector<int64_t>>("ends", {2, 3})
      .Attr<std::vector<int>>("decrease_axis", {0, 1});
  ASSERT_TRUE(one.Run().ok());
  EXPECT_EQ(one.Out("Out").dims(), Dims{1});
  EXPECT_EQ(ToVector<double>(one.Out("Out")), std::vector<double>{5});
}

// shape: the dims of Input, of any dtype, as int32.
TEST(ShapeOpTest, DimsOfAnyDTypeAsInt32) {
  for (DType dtype : {DType::kFP32, DType::kInt64, DType::kBool}) {
    OpTester t("shape");
    t.Input("Input", Tensor(dtype, {2, 3, 4})).Output("Out");
    ASSERT_TRUE(t.Run().ok());
    EXPECT_EQ(
        CompareTensors(t.Out("Out"), MakeTensor<int32_t>({3}, {2, 3, 4}), 0, 0),
        "");
  }
  OpTester empty("shape");
  empty.Input("Input", Tensor(DType::kFP32, {0, 5})).Output("Out");
  ASSERT_TRUE(empty.Run().ok());
  EXPECT_EQ(
      CompareTensors(empty.Out("Out"), MakeTensor<int32_t>({2}, {0, 5}), 0, 0),
      "");
}

}  // namespace
}  // namespace parex::testing
