// Tests of mul, matmul and matmul_v2 (kernels/cpu/matmul_kernels.cc, schemas
// in graph/ir/ops/matmul_ops.cc): forward values against naive loops written
// here, gradients against finite differences, shape errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/cpu/blas.h"
#include "kernels/cpu/spatial/dnnl_conv.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Element (i, j) of the logical matrix op(A), A stored row-major [rows, cols].
double At(const std::vector<double>& a, int cols, bool trans, int i, int j) {
  return trans ? a[j * cols + i] : a[i * cols + j];
}

// out[m,n] = alpha * op(a) op(b) by the textbook triple loop.
std::vector<double> NaiveMatMul(const std::vector<double>& a, int a_cols,
                                bool ta, const std::vector<double>& b,
                                int b_cols, bool tb, int m, int n, int k,
                                double alpha = 1) {
  std::vector<double> out(m * n, 0.0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        s += At(a, a_cols, ta, i, p) * At(b, b_cols, tb, p, j);
      }
      out[i * n + j] = alpha * s;
    }
  }
  return out;
}

// One thread at a time runs OpenMP teams wider than one (blas.cc): the first
// to ask, until it exits; a second team would make every region wait for a
// futex wake-up.
TEST(IntraOpThreadsTest, OneThreadAtATimeRunsWideTeams) {
  if (!cpu::DnnlAvailable()) GTEST_SKIP() << "no oneDNN: no OpenMP teams";
  cpu::SetIntraOpThreads(2);
  int first = 0, second = 0, after = 0;
  std::thread a([&] {
    cpu::UseIntraOpThreads();
    first = cpu::TeamWidth();
    std::thread b([&] {
      cpu::UseIntraOpThreads();
      second = cpu::TeamWidth();
    });
    b.join();
  });
  a.join();
  std::thread c([&] {
    cpu::UseIntraOpThreads();
    after = cpu::TeamWidth();
  });
  c.join();
  cpu::SetIntraOpThreads(1);
  EXPECT_EQ(first, 2);
  EXPECT_EQ(second, 1);  // while the first holds the claim
  EXPECT_EQ(after, 2);   // the first has exited
}

TEST(MulKernelTest, HandComputed2D) {
  OpTester t("mul");
  t.Input("X", MakeTensor<double>({2, 2}, {1, 2, 3, 4}))
      .Input("Y", MakeTensor<double>({2, 3}, {1, 0, 2, 0, 1, 3}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(
      CompareTensors(t.Out("Out"),
                     MakeTensor<double>({2, 3}, {1, 2, 8, 3, 4, 18}), 0, 0),
      "");
}

TEST(MulKernelTest, FlattensAtNumColDimsFp32) {
  // X [2,3,2] at x_num_col_dims 2 is [6,2]; Y [2,1,3] at 1 is [2,3].
  Tensor x = RandomTensor({2, 3, 2}, -1, 1, 1);
  Tensor y = RandomTensor({2, 1, 3}, -1, 1, 2);
  std::vector<double> want = NaiveMatMul(
      ToVector<double>(x), 2, false, ToVector<double>(y), 3, false, 6, 3, 2);
  std::vector<float> xf, yf;
  for (double v : ToVector<double>(x)) xf.push_back(static_cast<float>(v));
  for (double v : ToVector<double>(y)) yf.push_back(static_cast<float>(v));
  OpTester t("mul");
  t.Input("X", MakeTensor<float>({2, 3, 2}, xf))
      .Input("Y", MakeTensor<float>({2, 1, 3}, yf))
      .Output("Out")
      .Attr("x_num_col_dims", 2);
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(t.Out("Out").dtype(), DType::kFP32);
  EXPECT_EQ(CompareTensors(t.Out("Out"), MakeTensor<double>({2, 3, 1, 3}, want),
                           1e-6, 1e-5),
            "");
}

TEST(MulKernelTest, Gradient) {
  OpTester t("mul");
  t.Input("X", RandomTensor({2, 3, 2}, -1, 1, 3))
      .Input("Y", RandomTensor({6, 4}, -1, 1, 4))
      .Output("Out");
  EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
}

TEST(MulKernelTest, InnerDimsMismatchIsAnError) {
  OpTester t("mul");
  t.Input("X", RandomTensor({2, 3}, -1, 1, 1))
      .Input("Y", RandomTensor({4, 2}, -1, 1, 2))
      .Output("Out");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'mul'"));
  EXPECT_THAT(s.message(), HasSubstr("inner dims"));
}

TEST(MulKernelTest, NumColDimsOutOfRangeIsAnError) {
  OpTester t("mul");
  t.Input("X", RandomTensor({2, 3}, -1, 1, 1))
      .Input("Y", RandomTensor({3, 2}, -1, 1, 2))
      .Output("Out")
      .Attr("x_num_col_dims", 2);
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("x_num_col_dims"));
}

TEST(MulKernelTest, MixedDTypesAreAnError) {
  OpTester t("mul");
  t.Input("X", RandomTensor({2, 3}, -1, 1, 1, DType::kFP32))
      .Input("Y", RandomTensor({3, 2}, -1, 1, 2, DType::kFP64))
      .Output("Out");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'mul'"));
  EXPECT_THAT(s.message(), HasSubstr("fp64"));
}

TEST(MulSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 1, 28, 28});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("w")->SetDims({784, 100});
  block.Var("w")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("mul");
  op->SetInput("X", {"x"});
  op->SetInput("Y", {"w"});
  op->SetOutput("Out", {"out"});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 100}));
  EXPECT_EQ(block.FindVar("out")->dtype(), DType::kFP32);
}

// matmul with every transpose combination and alpha, against the loop.
TEST(MatmulKernelTest, TransposesAndAlpha) {
  const int m = 2, k = 3, n = 4;
  for (bool tx : {false, true}) {
    for (bool ty : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "tx=" << tx << " ty=" << ty);
      Tensor x = RandomTensor(tx ? Dims{k, m} : Dims{m, k}, -1, 1, 5);
      Tensor y = RandomTensor(ty ? Dims{n, k} : Dims{k, n}, -1, 1, 6);
      std::vector<double> want =
          NaiveMatMul(ToVector<double>(x), tx ? m : k, tx, ToVector<double>(y),
                      ty ? k : n, ty, m, n, k, 0.5);
      OpTester t("matmul");
      t.Input("X", x)
          .Input("Y", y)
          .Output("Out")
          .Attr("transpose_X", tx)
          .Attr("transpose_Y", ty)
          .Attr("alpha", 0.5f);
      ASSERT_TRUE(t.Run().ok());
      EXPECT_EQ(CompareTensors(t.Out("Out"), MakeTensor<double>({m, n}, want),
                               1e-12, 1e-12),
                "");
    }
  }
}

TEST(MatmulKernelTest, BroadcastsBatchDims) {
  // X [2,1,3,4] x Y [3,4,2] -> Out [2,3,3,2].
  Tensor x = RandomTensor({2, 1, 3, 4}, -1, 1, 7);
  Tensor y = RandomTensor({3, 4, 2}, -1, 1, 8);
  std::vector<double> xv = ToVector<double>(x), yv = ToVector<double>(y);
  std::vector<double> want;
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 3; ++b) {
      std::vector<double> xa(xv.begin() + a * 12, xv.begin() + a * 12 + 12);
      std::vector<double> yb(yv.begin() + b * 8, yv.begin() + b * 8 + 8);
      std::vector<double> o = NaiveMatMul(xa, 4, false, yb, 2, false, 3, 2, 4);
      want.insert(want.end(), o.begin(), o.end());
    }
  }
  for (const char* type : {"matmul", "matmul_v2"}) {
    OpTester t(type);
    t.Input("X", x).Input("Y", y).Output("Out");
    ASSERT_TRUE(t.Run().ok()) << type;
    EXPECT_EQ(
        CompareTensors(t.Out("Out"), MakeTensor<double>({2, 3, 3, 2}, want),
                       1e-12, 1e-12),
        "")
        << type;
  }
}

TEST(MatmulKernelTest, FoldsUnbatchedY) {
  // X [2,3,4] x Y [4,2]: one [6,4] x [4,2] product.
  Tensor x = RandomTensor({2, 3, 4}, -1, 1, 9);
  Tensor y = RandomTensor({4, 2}, -1, 1, 10);
  std::vector<double> want = NaiveMatMul(
      ToVector<double>(x), 4, false, ToVector<double>(y), 2, false, 6, 2, 4);
  OpTester t("matmul");
  t.Input("X", x).Input("Y", y).Output("Out");
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(CompareTensors(t.Out("Out"), MakeTensor<double>({2, 3, 2}, want),
                           1e-12, 1e-12),
            "");
}

struct VectorCase {
  const char* type;
  Dims x, y;
  Dims out;
};

TEST(MatmulKernelTest, VectorOperandsFollowFluid) {
  const VectorCase cases[] = {
      {"matmul", {3}, {3}, {1}},
      {"matmul", {3}, {3, 2}, {2}},
      {"matmul", {2, 3}, {3}, {2}},
      {"matmul", {2, 2, 3}, {3}, {2, 2}},
      {"matmul_v2", {3}, {3}, {1}},
      {"matmul_v2", {3}, {2, 3, 4}, {2, 4}},
      {"matmul_v2", {2, 4, 3}, {3}, {2, 4}},
  };
  for (const VectorCase& c : cases) {
    SCOPED_TRACE(std::string(c.type) + " " + DimsToString(c.x) + " x " +
                 DimsToString(c.y));
    Tensor x = RandomTensor(c.x, -1, 1, 11);
    Tensor y = RandomTensor(c.y, -1, 1, 12);
    OpTester t(c.type);
    t.Input("X", x).Input("Y", y).Output("Out");
    ASSERT_TRUE(t.Run().ok());
    ASSERT_EQ(t.Out("Out").dims(), c.out);
    // Values: a vector X is one row, a vector Y one column.
    const int k = static_cast<int>(c.x.back());
    const int xm = c.x.size() == 1 ? 1 : static_cast<int>(Numel(c.x) / k);
    std::vector<double> xv = ToVector<double>(x), yv = ToVector<double>(y);
    if (c.y.size() == 1) {
      std::vector<double> want =
          NaiveMatMul(xv, k, false, yv, 1, false, xm, 1, k);
      EXPECT_EQ(CompareTensors(t.Out("Out"), MakeTensor<double>(c.out, want),
                               1e-12, 1e-12),
                "");
    } else if (c.y.size() == 2) {
      const int n = static_cast<int>(c.y[1]);
      std::vector<double> want =
          NaiveMatMul(xv, k, false, yv, n, false, 1, n, k);
      EXPECT_EQ(CompareTensors(t.Out("Out"), MakeTensor<double>(c.out, want),
                               1e-12, 1e-12),
                "");
    }
  }
}

TEST(MatmulKernelTest, GradientWithTransposes) {
  for (bool tx : {false, true}) {
    for (bool ty : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "tx=" << tx << " ty=" << ty);
      OpTester t("matmul");
      t.Input("X", RandomTensor(tx ? Dims{3, 2} : Dims{2, 3}, -1, 1, 13))
          .Input("Y", RandomTensor(ty ? Dims{4, 3} : Dims{3, 4}, -1, 1, 14))
          .Output("Out")
          .Attr("transpose_X", tx)
          .Attr("transpose_Y", ty)
          .Attr("alpha", 1.5f);
      EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(MatmulKernelTest, GradientWithBatchBroadcast) {
  OpTester t("matmul");
  t.Input("X", RandomTensor({2, 1, 2, 3}, -1, 1, 15))
      .Input("Y", RandomTensor({3, 2, 3}, -1, 1, 16))
      .Output("Out")
      .Attr("transpose_Y", true);
  EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
}

TEST(MatmulKernelTest, GradientOfFoldedBatch) {
  OpTester t("matmul");
  t.Input("X", RandomTensor({2, 3, 4}, -1, 1, 17))
      .Input("Y", RandomTensor({4, 2}, -1, 1, 18))
      .Output("Out");
  EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
}

TEST(MatmulKernelTest, GradientOfVectors) {
  OpTester t("matmul");
  t.Input("X", RandomTensor({3}, -1, 1, 19))
      .Input("Y", RandomTensor({2, 3, 2}, -1, 1, 20))
      .Output("Out");
  EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
}

TEST(MatmulV2KernelTest, GradientWithTransposesAndBroadcast) {
  for (bool tx : {false, true}) {
    for (bool ty : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "tx=" << tx << " ty=" << ty);
      OpTester t("matmul_v2");
      t.Input("X",
              RandomTensor(tx ? Dims{3, 1, 3, 2} : Dims{3, 1, 2, 3}, -1, 1, 21))
          .Input("Y",
                 RandomTensor(ty ? Dims{2, 4, 3} : Dims{2, 3, 4}, -1, 1, 22))
          .Output("Out")
          .Attr("trans_x", tx)
          .Attr("trans_y", ty);
      EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
    }
  }
}

TEST(MatmulV2KernelTest, GradientOfVectorY) {
  OpTester t("matmul_v2");
  t.Input("X", RandomTensor({2, 2, 3}, -1, 1, 23))
      .Input("Y", RandomTensor({3}, -1, 1, 24))
      .Output("Out");
  EXPECT_THAT(t.CheckGrad({"X", "Y"}, {"Out"}), IsEmpty());
}

TEST(MatmulKernelTest, InnerDimsMismatchIsAnError) {
  OpTester t("matmul");
  t.Input("X", RandomTensor({2, 3}, -1, 1, 1))
      .Input("Y", RandomTensor({2, 3}, -1, 1, 2))
      .Output("Out");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'matmul'"));
  EXPECT_THAT(s.message(), HasSubstr("inner dims"));
}

TEST(MatmulV2KernelTest, BatchMismatchIsAnError) {
  OpTester t("matmul_v2");
  t.Input("X", RandomTensor({2, 2, 3}, -1, 1, 1))
      .Input("Y", RandomTensor({3, 3, 2}, -1, 1, 2))
      .Output("Out");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'matmul_v2'"));
  EXPECT_THAT(s.message(), HasSubstr("broadcast"));
}

TEST(MatmulSchemaTest, UnknownBatchAtCompileTime) {
  Program program;
  Block& block = program.global_block();
  block.Var("x")->SetDims({-1, 4, 3});
  block.Var("x")->SetDType(DType::kFP32);
  block.Var("y")->SetDims({3, 5});
  block.Var("y")->SetDType(DType::kFP32);
  block.Var("out");
  OpDesc* op = block.AppendOp("matmul_v2");
  op->SetInput("X", {"x"});
  op->SetInput("Y", {"y"});
  op->SetOutput("Out", {"out"});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 4, 5}));
}

}  // namespace
}  // namespace parex::testing

namespace parex::testing {
namespace {

// cpu::Gemm<float> goes to oneDNN above a size and to OpenBLAS below it:
// both sides of the threshold, every transpose, row strides wider than the
// rows, alpha and beta, against a product summed in double here.
TEST(BlasTest, FloatGemmMatchesANaiveProductOnBothBackends) {
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape& s :
       {Shape{3, 4, 5}, Shape{32, 256, 78}, Shape{50, 64, 500}}) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool ta = trans & 1, tb = trans & 2;
      const int64_t a_rows = ta ? s.k : s.m, a_cols = ta ? s.m : s.k;
      const int64_t b_rows = tb ? s.n : s.k, b_cols = tb ? s.k : s.n;
      const int64_t lda = a_cols + 3, ldb = b_cols + 1, ldc = s.n + 2;
      std::vector<float> a(a_rows * lda), b(b_rows * ldb), c(s.m * ldc);
      for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.3 * i);
      for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.7 * i);
      for (size_t i = 0; i < c.size(); ++i) c[i] = 0.25f * std::sin(1.1 * i);
      const std::vector<float> c0 = c;
      cpu::Gemm<float>(ta, tb, s.m, s.n, s.k, 0.5f, a.data(), lda, b.data(),
                       ldb, 2.0f, c.data(), ldc);
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < ldc; ++j) {
          if (j >= s.n) {  // the stride's padding is left alone
            ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]);
            continue;
          }
          double want = 0;
          for (int64_t p = 0; p < s.k; ++p) {
            want += double(ta ? a[p * lda + i] : a[i * lda + p]) *
                    double(tb ? b[j * ldb + p] : b[p * ldb + j]);
          }
          want = 0.5 * want + 2.0 * c0[i * ldc + j];
          ASSERT_NEAR(c[i * ldc + j], want, 1e-4 * (1 + std::abs(want)))
              << "m " << s.m << " n " << s.n << " k " << s.k << " trans "
              << trans << " at " << i << "," << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace parex::testing
