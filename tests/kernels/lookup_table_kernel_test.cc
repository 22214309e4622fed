// Tests of lookup_table, lookup_table_v2 and their gradients
// (kernels/cpu/lookup_table_kernel.cc, schemas in
// graph/ir/ops/lookup_table_ops.cc): hand-computed gathers with padding_idx,
// id dtypes, dense gradients against finite differences, errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/ir/op_schema.h"
#include "kernels/device_context.h"
#include "kernels/op_runner.h"
#include "tests/kernels/op_tester.h"

namespace parex::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A [4, 2] table whose row r is {10r, 10r + 1}.
Tensor Table() {
  return MakeTensor<double>({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
}

TEST(LookupTableKernelTest, GathersRowsAndZeroesPadding) {
  OpTester t("lookup_table");
  t.Input("W", Table())
      .Input("Ids", MakeTensor<int64_t>({4, 1}, {2, 0, 3, 2}))
      .Output("Out")
      .Attr("padding_idx", int64_t{3});
  ASSERT_TRUE(t.Run().ok());
  EXPECT_EQ(CompareTensors(
                t.Out("Out"),
                MakeTensor<double>({4, 2}, {20, 21, 0, 1, 0, 0, 20, 21}), 0, 0),
            "");
}

// A table prefetched from parameter servers: W as SelectedRows of some of
// the table's rows (ascending) reads as the whole table where it has the
// row, and an id it lacks is an error naming it.
TEST(LookupTableKernelTest, PrefetchedRowsReadAsTheTable) {
  OpTester t("lookup_table");
  t.Input("W", Table())
      .Input("Ids", MakeTensor<int64_t>({4, 1}, {2, 0, 3, 2}))
      .Output("Out")
      .Attr("padding_idx", int64_t{-1});
  ASSERT_TRUE(t.Run().ok());
  const Tensor whole = t.Out("Out").Clone();
  SelectedRows* rows = t.scope().FindVar("W_0")->GetMutableSelectedRows();
  rows->rows = {0, 2, 3};
  rows->height = 4;
  rows->value = MakeTensor<double>({3, 2}, {0, 1, 20, 21, 30, 31});
  const Status s = t.Run();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(CompareTensors(t.Out("Out"), whole, 0, 0), "");
  rows->rows = {0, 3};
  rows->value = MakeTensor<double>({2, 2}, {0, 1, 30, 31});
  const Status missing = t.Run();
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(missing.message(),
              HasSubstr("id 2 (Ids element 0) is not among the table's "
                        "prefetched rows"));
}

TEST(LookupTableKernelTest, V2KeepsIdsShapeAndTakesInt32) {
  OpTester t("lookup_table_v2");
  t.Input("W", RandomTensor({4, 2}, -1, 1, 1, DType::kFP32))
      .Input("Ids", MakeTensor<int32_t>({2, 3}, {0, 1, 2, 3, 3, 1}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  ASSERT_EQ(t.Out("Out").dims(), (Dims{2, 3, 2}));
  const Tensor& w = *t.scope().FindVar("W_0")->GetTensor();
  const int ids[] = {0, 1, 2, 3, 3, 1};
  for (int i = 0; i < 6; ++i) {
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(t.Out("Out").data<float>()[i * 2 + j],
                w.data<float>()[ids[i] * 2 + j]);
    }
  }
}

TEST(LookupTableKernelTest, Gradients) {
  for (const char* type : {"lookup_table", "lookup_table_v2"}) {
    SCOPED_TRACE(type);
    const bool v2 = std::string(type) == "lookup_table_v2";
    // Repeated ids accumulate; padding_idx 1 gets no gradient.
    std::vector<int64_t> ids{4, 1, 0, 4, 2, 4};
    OpTester t(type);
    t.Input("W", RandomTensor({5, 3}, -1, 1, 2))
        .Input("Ids", MakeTensor<int64_t>(v2 ? Dims{2, 3} : Dims{6, 1}, ids))
        .Output("Out")
        .Attr("padding_idx", int64_t{1});
    EXPECT_THAT(t.CheckGrad({"W"}, {"Out"}), IsEmpty());
  }
}

TEST(LookupTableKernelTest, GradientIsDenseScatterAdd) {
  OpTester t("lookup_table");
  t.Input("W", Table())
      .Input("Ids", MakeTensor<int64_t>({3, 1}, {2, 0, 2}))
      .Output("Out");
  ASSERT_TRUE(t.Run().ok());
  Program& program = t.program();
  Block& block = program.global_block();
  for (const char* name : {"dout", "dw"}) block.Var(name);
  block.Var("dout")->SetDims({3, 2});
  block.Var("dout")->SetDType(DType::kFP64);
  *t.scope().Var("dout")->GetMutableTensor() =
      MakeTensor<double>({3, 2}, {1, 2, 3, 4, 5, 6});
  OpDesc* grad = block.AppendOp("lookup_table_grad");
  grad->SetInput("W", {"W_0"});
  grad->SetInput("Ids", {"Ids_0"});
  grad->SetInput("Out@GRAD", {"dout"});
  grad->SetOutput("W@GRAD", {"dw"});
  CpuDeviceContext device;
  ASSERT_TRUE(RunOp(*grad, &t.scope(), &device).ok());
  EXPECT_EQ(CompareTensors(*t.scope().FindVar("dw")->GetTensor(),
                           MakeTensor<double>({4, 2}, {3, 4, 0, 0, 6, 8, 0, 0}),
                           0, 0),
            "");
}

TEST(LookupTableKernelTest, OutOfRangeIdIsAnErrorNamingTheId) {
  OpTester t("lookup_table_v2");
  t.Input("W", Table())
      .Input("Ids", MakeTensor<int64_t>({3}, {1, 7, 0}))
      .Output("Out");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'lookup_table_v2'"));
  EXPECT_THAT(s.message(), HasSubstr("id 7"));
}

TEST(LookupTableKernelTest, NegativeIdIsAnError) {
  OpTester t("lookup_table");
  t.Input("W", Table())
      .Input("Ids", MakeTensor<int64_t>({2, 1}, {0, -2}))
      .Output("Out");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("id -2"));
}

TEST(LookupTableKernelTest, IdsLastDimMustBeOneForV1) {
  OpTester t("lookup_table");
  t.Input("W", Table())
      .Input("Ids", MakeTensor<int64_t>({2, 2}, {0, 1, 2, 3}))
      .Output("Out");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("'lookup_table'"));
  EXPECT_THAT(s.message(), HasSubstr("last dim of Ids"));
}

TEST(LookupTableKernelTest, FloatIdsAreAnError) {
  OpTester t("lookup_table_v2");
  t.Input("W", Table())
      .Input("Ids", MakeTensor<double>({2}, {0, 1}))
      .Output("Out");
  Status s = t.Run();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("Ids must be int64"));
}

TEST(LookupTableSchemaTest, KernelDTypeComesFromW) {
  const OpSchema* s = OpSchemaRegistry::Global().Find("lookup_table");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->kernel_dtype_source(), "W");
  Program program;
  Block& block = program.global_block();
  block.Var("w")->SetDims({100, 16});
  block.Var("w")->SetDType(DType::kFP32);
  block.Var("ids")->SetDims({-1, 1});
  block.Var("ids")->SetDType(DType::kInt64);
  block.Var("out");
  OpDesc* op = block.AppendOp("lookup_table");
  op->SetInput("W", {"w"});
  op->SetInput("Ids", {"ids"});
  op->SetOutput("Out", {"out"});
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("out")->dims(), (Dims{-1, 16}));
  EXPECT_EQ(block.FindVar("out")->dtype(), DType::kFP32);
}

}  // namespace
}  // namespace parex::testing
