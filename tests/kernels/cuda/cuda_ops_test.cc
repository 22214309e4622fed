// Each CUDA kernel through parex::RunOp on cuda:0 against a naive host
// reference, fp32 and fp64. Skips when no CUDA device is visible.
#include "tests/kernels/cuda/cuda_test_util.h"

namespace parex {
namespace {

using namespace cuda_test;  // NOLINT: test helpers
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------
// Device tests.

template <typename T>
Tensor ToDevice(CudaDeviceContext* context, const Array& a) {
  Tensor host(DTypeOf<T>(), a.dims);
  for (size_t i = 0; i < a.values.size(); ++i) {
    host.data<T>()[i] = static_cast<T>(a.values[i]);
  }
  Tensor device(DTypeOf<T>(), a.dims, context->place());
  Status s =
      context->CopyFromHost(device.raw_data(), host.raw_data(), host.bytes());
  PAREX_CHECK(s.ok(), s.ToString());
  s = context->Synchronize();  // `host` dies here
  PAREX_CHECK(s.ok(), s.ToString());
  return device;
}

template <typename T>
Array ToHost(CudaDeviceContext* context, const Tensor& device) {
  EXPECT_EQ(device.place(), context->place());
  Tensor host(DTypeOf<T>(), device.dims());
  Status s =
      context->CopyToHost(host.raw_data(), device.raw_data(), device.bytes());
  PAREX_CHECK(s.ok(), s.ToString());
  s = context->Synchronize();
  PAREX_CHECK(s.ok(), s.ToString());
  Array a{device.dims(), {}};
  for (int64_t i = 0; i < host.numel(); ++i) {
    a.values.push_back(static_cast<double>(host.data<T>()[i]));
  }
  return a;
}

// One op of a one-op program, run on cuda:0 through RunOp. Input slot S
// argument i is variable "S_i"; outputs default to "Out".
template <typename T>
class CudaOp {
 public:
  explicit CudaOp(const std::string& type)
      : context_(Cuda0()), op_(program_.global_block().AppendOp(type)) {
    op_->SetOutput("Out", {"Out"});
  }

  CudaOp& Input(const std::string& slot, const std::vector<Array>& arrays) {
    std::vector<std::string> names;
    for (size_t i = 0; i < arrays.size(); ++i) {
      names.push_back(slot + "_" + std::to_string(i));
      program_.global_block().Var(names.back())->SetDType(DTypeOf<T>());
      *scope_.Var(names.back())->GetMutableTensor() =
          ToDevice<T>(context_, arrays[i]);
    }
    op_->SetInput(slot, names);
    return *this;
  }
  CudaOp& Input(const std::string& slot, const Array& array) {
    return Input(slot, std::vector<Array>{array});
  }
  // Out names an existing variable (in-place ops).
  CudaOp& OutputTo(const std::string& name) {
    op_->SetOutput("Out", {name});
    out_name_ = name;
    return *this;
  }
  template <typename A>
  CudaOp& Attr(const std::string& name, const A& value) {
    op_->SetAttr<A>(name, value);
    return *this;
  }

  // Runs the op; on success returns Out copied to the host.
  StatusOr<Array> Run() {
    PAREX_RETURN_IF_ERROR(RunOp(*op_, &scope_, context_));
    const Tensor* out = scope_.FindVar(out_name_)->GetTensor();
    if (out == nullptr) return Internal("no Out tensor");
    return ToHost<T>(context_, *out);
  }

 private:
  CudaDeviceContext* context_;
  Program program_;
  OpDesc* op_;
  Scope scope_;
  std::string out_name_ = "Out";
};

template <typename T>
struct Tolerance;
template <>
struct Tolerance<float> {
  static constexpr double kAbs = 1e-5, kRel = 1e-5;
};
template <>
struct Tolerance<double> {
  static constexpr double kAbs = 1e-12, kRel = 1e-12;
};

template <typename T>
class CudaOpsTest : public ::testing::Test {
 protected:
  // Compares dims and values; `scale` widens the tolerance for long sums.
  void ExpectNear(const StatusOr<Array>& actual, const Array& expected,
                  double scale = 1.0) {
    ASSERT_TRUE(actual.ok()) << actual.status().ToString();
    EXPECT_EQ(actual->dims, expected.dims);
    EXPECT_TRUE(ValuesNear(actual->values, expected.values,
                           Tolerance<T>::kAbs * scale,
                           Tolerance<T>::kRel * scale));
  }
};

using FloatTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(CudaOpsTest, FloatTypes);

TYPED_TEST(CudaOpsTest, ElementwiseSameShapeAndBroadcast) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const std::vector<
      std::pair<std::string, std::function<double(double, double)>>>
      ops = {{"elementwise_add", [](double a, double b) { return a + b; }},
             {"elementwise_sub", [](double a, double b) { return a - b; }},
             {"elementwise_mul", [](double a, double b) { return a * b; }},
             {"elementwise_div", [](double a, double b) { return a / b; }}};
  uint32_t seed = 1;
  for (const auto& [type, f] : ops) {
    for (const BroadcastCase& c : BroadcastCases()) {
      SCOPED_TRACE(type + " " + DimsToString(c.x) + " " + DimsToString(c.y) +
                   " axis " + std::to_string(c.axis));
      const Array x = RandomSignedArray<T>(c.x, 0.5, 2.0, seed++);
      const Array y = RandomSignedArray<T>(c.y, 0.5, 2.0, seed++);
      CudaOp<T> op(type);
      op.Input("X", x).Input("Y", y).template Attr<int>("axis", c.axis);
      // The reference rounds through T once per element, as the device does.
      Array expected = RefElementwise(x, y, c.axis, f);
      for (double& v : expected.values)
        v = static_cast<double>(static_cast<T>(v));
      this->ExpectNear(op.Run(), expected);
    }
  }
}

TYPED_TEST(CudaOpsTest, ElementwiseInPlace) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const Array x = RandomArray<T>({4, 5}, -1, 1, 3);
  const Array y = RandomArray<T>({5}, -1, 1, 4);
  CudaOp<T> op("elementwise_add");
  op.Input("X", x).Input("Y", y).OutputTo("X_0");
  this->ExpectNear(op.Run(), RefElementwise(x, y, -1, std::plus<double>()));
}

TYPED_TEST(CudaOpsTest, ElementwiseBadShapesAreErrors) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  CudaOp<T> op("elementwise_add");
  op.Input("X", RandomArray<T>({2, 3}, -1, 1, 1))
      .Input("Y", RandomArray<T>({4}, -1, 1, 2));
  StatusOr<Array> result = op.Run();
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("elementwise_add"));
}

TYPED_TEST(CudaOpsTest, Activations) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const std::vector<std::pair<std::string, std::function<double(double)>>> ops =
      {{"relu", [](double v) { return v > 0 ? v : 0.0; }},
       {"sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
       {"tanh", [](double v) { return std::tanh(v); }}};
  Array x = RandomArray<T>({5, 7}, -4, 4, 11);
  x.values[0] = 0.0;
  x.values[1] = -0.0;
  for (const auto& [type, f] : ops) {
    SCOPED_TRACE(type);
    CudaOp<T> op(type);
    op.Input("X", x);
    Array expected = x;
    for (double& v : expected.values) v = f(v);
    this->ExpectNear(op.Run(), expected);
  }
}

TYPED_TEST(CudaOpsTest, ActivationOfALargeTensorInPlace) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  // More elements than one grid covers: the grid-stride loop must go round.
  const Array x = RandomArray<T>({1 << 25}, -1, 1, 12);
  CudaOp<T> op("relu");
  op.Input("X", x).OutputTo("X_0");
  Array expected = x;
  for (double& v : expected.values) v = v > 0 ? v : 0.0;
  this->ExpectNear(op.Run(), expected);
}

TYPED_TEST(CudaOpsTest, Scale) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const Array x = RandomArray<T>({3, 4}, -2, 2, 21);
  for (bool after : {true, false}) {
    SCOPED_TRACE(after ? "bias after scale" : "bias before scale");
    CudaOp<T> op("scale");
    op.Input("X", x)
        .template Attr<float>("scale", 2.5f)
        .template Attr<float>("bias", -0.5f)
        .template Attr<bool>("bias_after_scale", after);
    Array expected = x;
    for (double& v : expected.values)
      v = after ? 2.5 * v - 0.5 : 2.5 * (v - 0.5);
    this->ExpectNear(op.Run(), expected);
  }
}

TYPED_TEST(CudaOpsTest, ReduceSumAndMean) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  uint32_t seed = 31;
  for (const ReduceCase& c : ReduceCases()) {
    for (bool mean : {false, true}) {
      const std::string type = mean ? "reduce_mean" : "reduce_sum";
      SCOPED_TRACE(type + " " + DimsToString(c.x));
      const Array x = RandomArray<T>(c.x, -1, 1, seed++);
      CudaOp<T> op(type);
      op.Input("X", x)
          .template Attr<std::vector<int>>("dim", c.dims)
          .template Attr<bool>("keep_dim", c.keep_dim)
          .template Attr<bool>("reduce_all", c.reduce_all);
      StatusOr<Array> actual = op.Run();
      ASSERT_TRUE(actual.ok()) << actual.status().ToString();
      Array expected = RefReduce(x, ReducedFlags(c), mean);
      // A full reduction may be [1] or [] by schema version; compare counts.
      if (Numel(c.out) == 1) {
        EXPECT_EQ(Numel(actual->dims), 1);
      } else {
        EXPECT_EQ(actual->dims, c.out);
      }
      EXPECT_TRUE(ValuesNear(actual->values, expected.values,
                             Tolerance<T>::kAbs * 100,
                             Tolerance<T>::kRel * 100));
    }
  }
}

TYPED_TEST(CudaOpsTest, Mean) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  for (const Dims& dims : {Dims{7, 9}, Dims{100000}, Dims{1}}) {
    SCOPED_TRACE(DimsToString(dims));
    const Array x = RandomArray<T>(dims, -1, 1, 41);
    CudaOp<T> op("mean");
    op.Input("X", x);
    StatusOr<Array> actual = op.Run();
    ASSERT_TRUE(actual.ok()) << actual.status().ToString();
    EXPECT_EQ(Numel(actual->dims), 1);
    double sum = 0;
    for (double v : x.values) sum += v;
    EXPECT_TRUE(ValuesNear(actual->values, {sum / x.values.size()},
                           Tolerance<T>::kAbs * 10, Tolerance<T>::kRel * 10));
  }
}

TYPED_TEST(CudaOpsTest, SumOfSeveralInputs) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  for (int count : {1, 3, kMaxSumInputs, kMaxSumInputs * 2 + 3}) {
    SCOPED_TRACE(std::to_string(count) + " inputs");
    std::vector<Array> inputs;
    Array expected{{6, 5}, std::vector<double>(30, 0.0)};
    for (int k = 0; k < count; ++k) {
      inputs.push_back(RandomArray<T>({6, 5}, -1, 1, 50 + k));
      for (size_t i = 0; i < 30; ++i)
        expected.values[i] += inputs.back().values[i];
    }
    CudaOp<T> op("sum");
    op.Input("X", inputs);
    this->ExpectNear(op.Run(), expected, 10);
  }
}

TYPED_TEST(CudaOpsTest, SumAccumulatesInPlace) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  std::vector<Array> inputs;
  Array expected{{40}, std::vector<double>(40, 0.0)};
  for (int k = 0; k < kMaxSumInputs + 2; ++k) {
    inputs.push_back(RandomArray<T>({40}, -1, 1, 70 + k));
    for (size_t i = 0; i < 40; ++i)
      expected.values[i] += inputs.back().values[i];
  }
  CudaOp<T> op("sum");
  op.Input("X", inputs).OutputTo("X_0");  // gradient accumulation
  this->ExpectNear(op.Run(), expected, 10);
}

TYPED_TEST(CudaOpsTest, Mul) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const Array x = RandomArray<T>({2, 3, 4}, -1, 1, 81);
  const Array y = RandomArray<T>({4, 5}, -1, 1, 82);
  CudaOp<T> op("mul");
  op.Input("X", x)
      .Input("Y", y)
      .template Attr<int>("x_num_col_dims", 2)
      .template Attr<int>("y_num_col_dims", 1);
  Array expected{
      {2, 3, 5},
      RefGemm(x.values.data(), 6, 4, false, y.values.data(), 4, 5, false, 1.0)};
  this->ExpectNear(op.Run(), expected, 10);

  const Array y3 = RandomArray<T>({3, 4, 5}, -1, 1, 83);
  CudaOp<T> flat("mul");
  flat.Input("X", Array{{2, 12}, x.values})
      .Input("Y", y3)
      .template Attr<int>("x_num_col_dims", 1)
      .template Attr<int>("y_num_col_dims", 2);
  Array expected_flat{{2, 5},
                      RefGemm(x.values.data(), 2, 12, false, y3.values.data(),
                              12, 5, false, 1.0)};
  this->ExpectNear(flat.Run(), expected_flat, 10);
}

TYPED_TEST(CudaOpsTest, MatmulTransposesBatchesAndAlpha) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const std::vector<MatmulCase> cases = {
      {{3, 4}, {4, 5}, false, false, {3, 5}, true},
      {{4, 3}, {4, 5}, true, false, {3, 5}, true},
      {{3, 4}, {5, 4}, false, true, {3, 5}, true},
      {{4, 3}, {5, 4}, true, true, {3, 5}, true},
      {{2, 3, 4}, {2, 4, 5}, false, false, {2, 3, 5}, true},
      {{2, 3, 4}, {4, 5}, false, false, {2, 3, 5}, true},
      {{3, 4}, {2, 4, 5}, false, false, {2, 3, 5}, true},
      {{2, 4, 3}, {2, 5, 4}, true, true, {2, 3, 5}, true},
      {{64, 33}, {33, 65}, false, false, {64, 65}, true},
  };
  uint32_t seed = 90;
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(DimsToString(c.x) + " x " + DimsToString(c.y));
    const Array x = RandomArray<T>(c.x, -1, 1, seed++);
    const Array y = RandomArray<T>(c.y, -1, 1, seed++);
    CudaOp<T> op("matmul");
    op.Input("X", x)
        .Input("Y", y)
        .template Attr<bool>("transpose_X", c.trans_x)
        .template Attr<bool>("transpose_Y", c.trans_y)
        .template Attr<float>("alpha", 0.5f);
    this->ExpectNear(op.Run(),
                     RefBatchedMatmul(x, y, c.trans_x, c.trans_y, 0.5), 10);
  }
}

TYPED_TEST(CudaOpsTest, MatmulOfAVector) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const Array x = RandomArray<T>({4}, -1, 1, 95);
  const Array y = RandomArray<T>({4, 5}, -1, 1, 96);
  CudaOp<T> op("matmul");
  op.Input("X", x).Input("Y", y);
  Array expected{
      {5},
      RefGemm(x.values.data(), 1, 4, false, y.values.data(), 4, 5, false, 1.0)};
  this->ExpectNear(op.Run(), expected, 10);
}

TYPED_TEST(CudaOpsTest, MatmulV2) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  const std::vector<MatmulCase> cases = {
      {{3, 4}, {4, 5}, false, false, {3, 5}, true},
      {{4, 3}, {5, 4}, true, true, {3, 5}, true},
      {{2, 3, 4}, {4, 5}, false, false, {2, 3, 5}, true},
      {{2, 1, 3, 4}, {5, 4, 6}, false, false, {2, 5, 3, 6}, false},
      {{2, 1, 4, 3}, {1, 3, 6, 4}, true, true, {2, 3, 3, 6}, false},
  };
  uint32_t seed = 100;
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(DimsToString(c.x) + " x " + DimsToString(c.y));
    const Array x = RandomArray<T>(c.x, -1, 1, seed++);
    const Array y = RandomArray<T>(c.y, -1, 1, seed++);
    CudaOp<T> op("matmul_v2");
    op.Input("X", x)
        .Input("Y", y)
        .template Attr<bool>("trans_x", c.trans_x)
        .template Attr<bool>("trans_y", c.trans_y);
    this->ExpectNear(op.Run(),
                     RefBatchedMatmul(x, y, c.trans_x, c.trans_y, 1.0), 10);
  }
  // Matrix times vector: Y's dim is dropped.
  const Array x = RandomArray<T>({2, 3, 4}, -1, 1, 120);
  const Array y = RandomArray<T>({4}, -1, 1, 121);
  CudaOp<T> op("matmul_v2");
  op.Input("X", x).Input("Y", y);
  Array expected =
      RefBatchedMatmul(x, Array{{4, 1}, y.values}, false, false, 1);
  expected.dims = {2, 3};
  this->ExpectNear(op.Run(), expected, 10);
}

TYPED_TEST(CudaOpsTest, InputOnTheWrongPlaceIsAnError) {
  if (parex::CudaDeviceCount() == 0) GTEST_SKIP() << "no CUDA device visible";
  using T = TypeParam;
  Program program;
  OpDesc* op = program.global_block().AppendOp("relu");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"out"});
  Scope scope;
  *scope.Var("x")->GetMutableTensor() = MakeTensor<T>({2}, {T(-1), T(1)});
  Status status = RunOp(*op, &scope, Cuda0());
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("cpu:0"));
  EXPECT_THAT(status.message(), HasSubstr("'x'"));
}

}  // namespace
}  // namespace parex
