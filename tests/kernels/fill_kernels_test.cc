// Tests of kernels/cpu/fill_kernels.cc and graph/ir/ops/fill_ops.cc:
// fill_constant, uniform_random, gaussian_random, assign, scale and cast.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"
#include "kernels/kernel_registry.h"
#include "kernels/prepared_op.h"
#include "tests/kernels/op_tester.h"
#include "tests/kernels/paddle_golden.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kFP32 = static_cast<int>(DType::kFP32);
constexpr int kFP64 = static_cast<int>(DType::kFP64);
constexpr int kInt32 = static_cast<int>(DType::kInt32);
constexpr int kInt64 = static_cast<int>(DType::kInt64);
constexpr int kBool = static_cast<int>(DType::kBool);

// The documented transform of the random kernels: 53 top bits of a
// mt19937_64 draw scaled to [0, 1).
double Unit(std::mt19937_64& gen) {
  return static_cast<double>(gen() >> 11) / 9007199254740992.0;
}

TEST(FillConstantKernelTest, FloatValue) {
  OpTester t("fill_constant");
  t.Output("Out")
      .Attr("shape", std::vector<int64_t>{2, 3})
      .Attr("value", 1.5f)
      .Attr("dtype", kFP32);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Out").dims(), (Dims{2, 3}));
  EXPECT_EQ(ToVector<float>(t.Out("Out")), std::vector<float>(6, 1.5f));
}

TEST(FillConstantKernelTest, IntShapeAttrAndIntDTypes) {
  OpTester t("fill_constant");
  t.Output("Out")
      .Attr("shape", std::vector<int>{4})  // INTS, as older Paddle writes
      .Attr("value", -3.0f)
      .Attr("dtype", kInt32);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<int32_t>(t.Out("Out")), std::vector<int32_t>(4, -3));

  OpTester b("fill_constant");
  b.Output("Out")
      .Attr("shape", std::vector<int64_t>{2})
      .Attr("value", 1.0f)
      .Attr("dtype", kBool);
  ASSERT_TRUE(b.Run().ok());
  EXPECT_EQ(t.Out("Out").dtype(), DType::kInt32);
  EXPECT_EQ(ToVector<bool>(b.Out("Out")), (std::vector<bool>{true, true}));
}

TEST(FillConstantKernelTest, StrValueIsExactForInt64AndParsesInf) {
  OpTester t("fill_constant");
  t.Output("Out")
      .Attr("shape", std::vector<int64_t>{1})
      .Attr("str_value", std::string("9007199254740993"))  // 2^53 + 1
      .Attr("dtype", kInt64);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(t.Out("Out")),
            (std::vector<int64_t>{9007199254740993LL}));

  OpTester inf("fill_constant");
  inf.Output("Out")
      .Attr("shape", std::vector<int64_t>{1})
      .Attr("str_value", std::string("-inf"))
      .Attr("dtype", kFP64);
  ASSERT_TRUE(inf.Run().ok());
  EXPECT_EQ(ToVector<double>(inf.Out("Out"))[0],
            -std::numeric_limits<double>::infinity());

  OpTester f("fill_constant");
  f.Output("Out")
      .Attr("shape", std::vector<int64_t>{1})
      .Attr("str_value", std::string("2.0"))
      .Attr("dtype", kInt64);
  ASSERT_TRUE(f.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(f.Out("Out"))[0], 2);
}

TEST(FillConstantKernelTest, BadAttributesAreErrorsNamingTheOp) {
  OpTester str("fill_constant");
  str.Output("Out")
      .Attr("shape", std::vector<int64_t>{1})
      .Attr("str_value", std::string("abc"))
      .Attr("dtype", kFP32);
  Status s = str.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("fill_constant"));
  EXPECT_THAT(s.message(), HasSubstr("abc"));

  OpTester dtype("fill_constant");
  dtype.Output("Out").Attr("shape", std::vector<int64_t>{1}).Attr("dtype", 99);
  s = dtype.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("fill_constant"));

  OpTester shape("fill_constant");
  shape.Output("Out").Attr("shape", std::vector<int64_t>{-1, 2});
  s = shape.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("negative extent"));
}

TEST(FillConstantKernelTest, CompileTimeShapeAcceptsUnknownBatch) {
  Program program;
  Block& block = program.global_block();
  block.Var("out");
  OpDesc* op = block.AppendOp("fill_constant");
  op->SetOutput("Out", {"out"});
  op->SetAttr("shape", std::vector<int64_t>{-1, 5});
  op->SetAttr("dtype", kInt64);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 5}));
  EXPECT_EQ(block.FindVar("out")->dtype(), DType::kInt64);
}

TEST(UniformRandomKernelTest, MatchesDocumentedTransformForASeed) {
  for (int dtype : {kFP32, kFP64}) {
    SCOPED_TRACE(dtype);
    OpTester t("uniform_random");
    t.Output("Out")
        .Attr("shape", std::vector<int64_t>{50})
        .Attr("min", -2.0f)
        .Attr("max", 3.0f)
        .Attr("seed", 17)
        .Attr("dtype", dtype);
    ASSERT_TRUE(t.Run().ok());
    std::mt19937_64 gen(17);
    Tensor expected(DType::kFP64, {50});
    for (int i = 0; i < 50; ++i) {
      expected.data<double>()[i] = -2.0 + 5.0 * Unit(gen);
    }
    EXPECT_EQ(CompareTensors(t.Out("Out"), expected, 1e-6, 1e-6), "");
    const Tensor first = t.Out("Out").Clone();
    ASSERT_TRUE(t.Run().ok());  // same seed, same values
    EXPECT_EQ(CompareTensors(t.Out("Out"), first, 0, 0), "");
  }
}

TEST(UniformRandomKernelTest, SeedZeroDrawsFromTheDeviceGenerator) {
  OpTester t("uniform_random");
  t.Output("Out").Attr("shape", std::vector<int64_t>{8}).Attr("dtype", kFP64);
  ASSERT_TRUE(t.Run().ok());
  const Tensor first = t.Out("Out").Clone();
  ASSERT_TRUE(t.Run().ok());
  EXPECT_NE(CompareTensors(t.Out("Out"), first, 0, 0), "");
  for (double v : ToVector<double>(t.Out("Out"))) {
    EXPECT_GE(v, -1.0);
    EXPECT_LT(v, 1.0);
  }
}

TEST(UniformRandomKernelTest, DiagonalInitialisation) {
  OpTester t("uniform_random");
  t.Output("Out")
      .Attr("shape", std::vector<int64_t>{3, 3})
      .Attr("min", 5.0f)
      .Attr("max", 6.0f)
      .Attr("seed", 1)
      .Attr("diag_num", 3)
      .Attr("diag_step", 3)
      .Attr("diag_val", 1.0f);
  ASSERT_TRUE(t.Run().ok());
  const std::vector<float> v = ToVector<float>(t.Out("Out"));
  for (int i = 0; i < 9; ++i) {
    if (i % 4 == 0) {
      EXPECT_EQ(v[i], 1.0f) << i;
    } else {
      EXPECT_GE(v[i], 5.0f) << i;
    }
  }
}

TEST(GaussianRandomKernelTest, MatchesBoxMullerForASeed) {
  OpTester t("gaussian_random");
  t.Output("Out")
      .Attr("shape", std::vector<int64_t>{5})
      .Attr("mean", 1.0f)
      .Attr("std", 2.0f)
      .Attr("seed", 23)
      .Attr("dtype", kFP64);
  ASSERT_TRUE(t.Run().ok());
  std::mt19937_64 gen(23);
  Tensor expected(DType::kFP64, {5});
  for (int i = 0; i < 5; i += 2) {
    const double u1 = 1.0 - Unit(gen);
    const double u2 = Unit(gen);
    const double r = std::sqrt(-2 * std::log(u1));
    const double a = 6.283185307179586 * u2;
    expected.data<double>()[i] = 1 + 2 * r * std::cos(a);
    if (i + 1 < 5) expected.data<double>()[i + 1] = 1 + 2 * r * std::sin(a);
  }
  EXPECT_EQ(CompareTensors(t.Out("Out"), expected, 1e-12, 1e-12), "");
}

TEST(GaussianRandomKernelTest, MomentsOfManyDraws) {
  OpTester t("gaussian_random");
  t.Output("Out")
      .Attr("shape", std::vector<int64_t>{4000})
      .Attr("mean", -1.0f)
      .Attr("std", 0.5f)
      .Attr("seed", 5);
  ASSERT_TRUE(t.Run().ok());
  double sum = 0;
  double sq = 0;
  for (float v : ToVector<float>(t.Out("Out"))) {
    sum += v;
    sq += v * v;
  }
  const double mean = sum / 4000;
  EXPECT_NEAR(mean, -1.0, 0.05);
  EXPECT_NEAR(std::sqrt(sq / 4000 - mean * mean), 0.5, 0.05);
}

TEST(AssignKernelTest, CopiesEveryDType) {
  OpTester f("assign");
  f.Input("X", MakeTensor<float>({2, 2}, {1, 2, 3, 4})).Output("Out");
  ASSERT_TRUE(f.Run().ok());
  EXPECT_EQ(ToVector<float>(f.Out("Out")), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_FALSE(
      f.Out("Out").SharesBufferWith(*f.scope().FindVar("X_0")->GetTensor()));

  OpTester i("assign");
  i.Input("X", MakeTensor<int64_t>({3}, {-5, 0, 7})).Output("Out");
  ASSERT_TRUE(i.Run().ok());
  EXPECT_EQ(i.Out("Out").dims(), (Dims{3}));
  EXPECT_EQ(ToVector<int64_t>(i.Out("Out")), (std::vector<int64_t>{-5, 0, 7}));
}

TEST(ScaleKernelTest, BiasBeforeAndAfterScale) {
  OpTester after("scale");
  after.Input("X", MakeTensor<float>({3}, {1, 2, 3}))
      .Output("Out")
      .Attr("scale", 2.0f)
      .Attr("bias", 0.5f);
  ASSERT_TRUE(after.Run().ok());
  EXPECT_EQ(ToVector<float>(after.Out("Out")),
            (std::vector<float>{2.5f, 4.5f, 6.5f}));

  OpTester before("scale");
  before.Input("X", MakeTensor<double>({3}, {1, 2, 3}))
      .Output("Out")
      .Attr("scale", 2.0f)
      .Attr("bias", 0.5f)
      .Attr("bias_after_scale", false);
  ASSERT_TRUE(before.Run().ok());
  EXPECT_EQ(ToVector<double>(before.Out("Out")),
            (std::vector<double>{3, 5, 7}));
}

TEST(ScaleKernelTest, IntegerAndScaleTensor) {
  OpTester i("scale");
  i.Input("X", MakeTensor<int64_t>({3}, {1, -2, 3}))
      .Output("Out")
      .Attr("scale", 3.0f)
      .Attr("bias", 1.0f);
  ASSERT_TRUE(i.Run().ok());
  EXPECT_EQ(ToVector<int64_t>(i.Out("Out")), (std::vector<int64_t>{4, -5, 10}));

  OpTester t("scale");
  t.Input("X", MakeTensor<float>({2}, {1, 2}))
      .Input("ScaleTensor", MakeTensor<float>({1}, {-4}))
      .Output("Out")
      .Attr("scale", 100.0f);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(ToVector<float>(t.Out("Out")), (std::vector<float>{-4, -8}));
}

TEST(CastKernelTest, ConvertsBetweenDTypes) {
  OpTester f2i("cast");
  f2i.Input("X", MakeTensor<float>({4}, {-1.7f, 0.2f, 2.9f, 100.f}))
      .Output("Out")
      .Attr("in_dtype", kFP32)
      .Attr("out_dtype", kInt32);
  ASSERT_TRUE(f2i.Run().ok());
  EXPECT_EQ(f2i.Out("Out").dtype(), DType::kInt32);
  EXPECT_EQ(ToVector<int32_t>(f2i.Out("Out")),
            (std::vector<int32_t>{-1, 0, 2, 100}));

  OpTester i2d("cast");
  i2d.Input("X", MakeTensor<int64_t>({2, 1}, {3, -9}))
      .Output("Out")
      .Attr("in_dtype", kInt64)
      .Attr("out_dtype", kFP64);
  ASSERT_TRUE(i2d.Run().ok());
  EXPECT_EQ(i2d.Out("Out").dims(), (Dims{2, 1}));
  EXPECT_EQ(ToVector<double>(i2d.Out("Out")), (std::vector<double>{3, -9}));

  OpTester f2b("cast");
  f2b.Input("X", MakeTensor<double>({3}, {0, 0.5, -2}))
      .Output("Out")
      .Attr("in_dtype", kFP64)
      .Attr("out_dtype", kBool);
  ASSERT_TRUE(f2b.Run().ok());
  EXPECT_EQ(ToVector<bool>(f2b.Out("Out")),
            (std::vector<bool>{false, true, true}));
}

TEST(CastKernelTest, UnsupportedOutDTypesAreErrorsNamingTheOp) {
  OpTester bad("cast");
  bad.Input("X", MakeTensor<float>({1}, {1}))
      .Output("Out")
      .Attr("in_dtype", kFP32)
      .Attr("out_dtype", 42);
  Status s = bad.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("cast"));
  EXPECT_THAT(s.message(), HasSubstr("out_dtype"));

  OpTester fp16("cast");
  fp16.Input("X", MakeTensor<float>({1}, {1}))
      .Output("Out")
      .Attr("in_dtype", kFP32)
      .Attr("out_dtype", static_cast<int>(DType::kFP16));
  s = fp16.Run();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("cast"));
}

TEST(FillKernelsTest, CopyOpsDeclareNoGradSpec) {
  // Fluid's gradients of assign, scale and cast are those ops again with
  // renamed slots, which OpSchema::Grad cannot express.
  for (const char* type : {"fill_constant", "uniform_random", "gaussian_random",
                           "assign", "scale", "cast"}) {
    const OpSchema* s = OpSchemaRegistry::Global().Find(type);
    ASSERT_NE(s, nullptr) << type;
    EXPECT_FALSE(s->has_grad()) << type;
  }
}

TEST(FillKernelsTest, RegistersCpuKernelsForItsDTypes) {
  ExpectCpuKernelTable({{"fill_constant", kNumbers},
                        {"uniform_random", kFloats},
                        {"gaussian_random", kFloats},
                        {"assign", kNumbers},
                        {"scale", kNumbers},
                        {"cast", kNumbers}});
}

}  // namespace
}  // namespace parex::testing

// ---- fill_constant_batch_size_like
// --------------------------------------------

namespace parex::testing {
namespace {

// Against PaddlePaddle 2.6.2 (tests/kernels/paddle_goldens/tensor_ops.json):
// the batch extent at other indices, str_value for an int64, int32 and bool.
TEST(FillConstantBatchSizeLikeKernelTest, MatchesPaddle) {
  EXPECT_EQ(CheckPaddleGoldens("fill_constant_batch_size_like"), 5);
  ExpectCpuKernels(
      "fill_constant_batch_size_like",
      {DType::kFP32, DType::kFP64, DType::kInt32, DType::kInt64, DType::kBool});
}

TEST(FillConstantBatchSizeLikeKernelTest, BadAttributesNameTheOp) {
  struct Case {
    std::vector<int> shape;
    int input_dim_idx, output_dim_idx, dtype;
    std::string message;
  };
  for (const Case& c :
       {Case{{}, 0, 0, 5, "attribute shape is empty"},
        Case{{-1, 3}, 0, 2, 5, "output_dim_idx 2 is outside shape [-1,3]"},
        Case{{-1, 3}, 2, 0, 5, "input_dim_idx 2 is outside Input [4,2]"},
        Case{{-1, -1},
             0,
             0,
             5,
             "shape [4,-1] (with Input's extent at 0) has a "
             "negative extent"},
        Case{{-1, 3}, 0, 0, 99, "attribute dtype 99 is no element type"}}) {
    OpTester t("fill_constant_batch_size_like");
    t.Input("Input", RandomTensor({4, 2}, 0, 1, 1))
        .Output("Out")
        .Attr("shape", c.shape)
        .Attr<int>("input_dim_idx", c.input_dim_idx)
        .Attr<int>("output_dim_idx", c.output_dim_idx)
        .Attr<int>("dtype", c.dtype);
    Status s = t.Run();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(s.message(), HasSubstr("'fill_constant_batch_size_like'"));
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

TEST(FillConstantBatchSizeLikeSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 3});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("fill_constant_batch_size_like");
  op->SetInput("Input", {"x"});
  op->SetOutput("Out", {"out"});
  op->SetAttr("shape", std::vector<int>{7, 5});
  op->SetAttr<int>("dtype", kInt64);
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 5}));
  EXPECT_EQ(block.FindVar("out")->dtype(), DType::kInt64);
  // Paddle's programs always carry shape.
  OpDesc* bare = block.AppendOp("fill_constant_batch_size_like");
  bare->SetInput("Input", {"x"});
  bare->SetOutput("Out", {"out"});
  Status s = ValidateProgram(program);
  EXPECT_THAT(s.message(), HasSubstr("required attribute 'shape'"));
}

// range against PaddlePaddle 2.6.2 (shape_values.json: up, down, by a
// float fraction whose values accumulate as Paddle's do, empty).
TEST(RangeKernelTest, MatchesPaddle) {
  EXPECT_EQ(CheckPaddleGoldens("range", {}, "shape_values.json"), 6);
}

TEST(RangeKernelTest, BadValuesAreErrorsNamingTheOp) {
  auto one = [](int64_t v) { return MakeTensor<int64_t>({1}, {v}); };
  struct Bad {
    Tensor start, end, step;
    const char* needle;
  };
  const std::vector<Bad> bad = {
      {one(0), one(5), one(0), "Step is 0"},
      {one(0), one(5), one(-1), "leads away from End"},
      {one(0), one(int64_t{1} << 50), one(1), "more than parex makes"},
      {one(0), MakeTensor<int64_t>({2}, {1, 2}), one(1), "one finite value"},
      {one(0), MakeTensor<int32_t>({1}, {5}), one(1), "End is int32"},
      {MakeTensor<double>({1}, {0}),
       MakeTensor<double>({1}, {std::numeric_limits<double>::infinity()}),
       MakeTensor<double>({1}, {1}), "one finite value"},
  };
  for (const Bad& b : bad) {
    OpTester t("range");
    t.Input("Start", b.start)
        .Input("End", b.end)
        .Input("Step", b.step)
        .Output("Out");
    Status s = t.Run();
    EXPECT_FALSE(s.ok()) << b.needle;
    EXPECT_THAT(s.message(), HasSubstr(b.needle));
    EXPECT_THAT(s.message(), HasSubstr("range"));
  }
}

// The length comes from the values: a prepared op run again with other
// values of the same dims infers it again (no shape cache).
TEST(RangeKernelTest, PreparedOpFollowsTheValues) {
  Program program;
  OpDesc* op = program.global_block().AppendOp("range");
  op->SetInput("Start", {"s"});
  op->SetInput("End", {"e"});
  op->SetInput("Step", {"d"});
  op->SetOutput("Out", {"out"});
  Scope scope;
  for (const char* v : {"s", "e", "d", "out"}) scope.Var(v);
  CpuDeviceContext ctx(Place::CPU(0));
  auto prepared = PreparedOp::Prepare(*op, &scope, &ctx);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  *scope.FindVar("s")->GetMutableTensor() = MakeTensor<int64_t>({1}, {0});
  *scope.FindVar("d")->GetMutableTensor() = MakeTensor<int64_t>({1}, {1});
  for (int64_t end : {3, 7, 0, 7}) {
    *scope.FindVar("e")->GetMutableTensor() = MakeTensor<int64_t>({1}, {end});
    ASSERT_TRUE((*prepared)->Run().ok());
    const Tensor* out = scope.FindVar("out")->GetTensor();
    ASSERT_EQ(out->dims(), (Dims{end}));
    for (int64_t i = 0; i < end; ++i) EXPECT_EQ(out->data<int64_t>()[i], i);
  }
}

TEST(RangeSchemaTest, LengthIsUnknownAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  for (const char* v : {"s", "e", "d"}) {
    block.Var(v)->SetDType(DType::kInt64);
    block.FindVar(v)->SetDims({1});
  }
  block.Var("out");
  OpDesc* op = block.AppendOp("range");
  op->SetInput("Start", {"s"});
  op->SetInput("End", {"e"});
  op->SetInput("Step", {"d"});
  op->SetOutput("Out", {"out"});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, /*write_back=*/true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1}));
  EXPECT_EQ(block.FindVar("out")->dtype(), DType::kInt64);
}

}  // namespace
}  // namespace parex::testing
