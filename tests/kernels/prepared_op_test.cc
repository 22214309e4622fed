// PreparedOp: bound once, run many times with inputs of changing shapes, it
// gives what RunOp gives, and the same errors.
#include "kernels/op_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace parex {
namespace {

using ::testing::HasSubstr;

// out = x * y (elementwise_mul) in a one-op program.
Program MulProgram() {
  Program program;
  Block& block = program.global_block();
  for (const char* name : {"x", "y", "out"}) {
    VarDesc* v = block.Var(name);
    v->SetDType(DType::kFP32);
    v->SetDims({-1, 3});
  }
  OpDesc* op = block.AppendOp("elementwise_mul");
  op->SetInput("X", {"x"});
  op->SetInput("Y", {"y"});
  op->SetOutput("Out", {"out"});
  op->SetAttr<int>("axis", -1);
  return program;
}

Tensor Filled(int64_t rows, float start) {
  Tensor t(DType::kFP32, {rows, 3});
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + i;
  return t;
}

TEST(PreparedOpTest, MatchesRunOpAcrossShapes) {
  Program program = MulProgram();
  const OpDesc& op = program.global_block().op(0);
  Scope prepared_scope, plain_scope;
  for (Scope* s : {&prepared_scope, &plain_scope}) {
    s->Var("x");
    s->Var("y");
    s->Var("out");
  }
  CpuDeviceContext ctx(Place::CPU(0));
  auto prepared = PreparedOp::Prepare(op, &prepared_scope, &ctx);
  ASSERT_TRUE(prepared.ok()) << prepared.status().ToString();
  for (int64_t rows : {2, 5, 1, 5}) {
    for (Scope* s : {&prepared_scope, &plain_scope}) {
      *s->FindVar("x")->GetMutableTensor() = Filled(rows, 1);
      *s->FindVar("y")->GetMutableTensor() = Filled(rows, -0.5f);
    }
    ASSERT_TRUE((*prepared)->Run().ok());
    ASSERT_TRUE(RunOp(op, &plain_scope, &ctx).ok());
    const Tensor* got = prepared_scope.FindVar("out")->GetTensor();
    const Tensor* want = plain_scope.FindVar("out")->GetTensor();
    ASSERT_EQ(got->dims(), (Dims{rows, 3}));
    EXPECT_EQ(ToVector<float>(*got), ToVector<float>(*want));
    EXPECT_EQ(got->data<float>()[1], 2.0f * 0.5f);  // (1 + 1) * (-0.5 + 1)
  }
}

TEST(PreparedOpTest, ErrorsNameTheOpAndVariable) {
  Program program = MulProgram();
  const OpDesc& op = program.global_block().op(0);
  CpuDeviceContext ctx(Place::CPU(0));
  Scope empty;
  // A variable no scope holds: an error when preparing.
  EXPECT_THAT(PreparedOp::Prepare(op, &empty, &ctx).status().message(),
              HasSubstr("reads variable 'x'"));
  // A variable that holds no value yet: an error when running.
  Scope scope;
  scope.Var("x");
  scope.Var("y");
  auto prepared = PreparedOp::Prepare(op, &scope, &ctx);
  ASSERT_TRUE(prepared.ok());
  *scope.FindVar("x")->GetMutableTensor() = Filled(2, 0);
  Status s = (*prepared)->Run();
  EXPECT_THAT(s.message(), HasSubstr("'elementwise_mul'"));
  EXPECT_THAT(s.message(), HasSubstr("input 'Y' reads variable 'y', which holds no value"));
  // The wrong dtype: the kernel lookup names op, place and dtype.
  Tensor flags(DType::kBool, {2, 3});
  *scope.FindVar("x")->GetMutableTensor() = flags;
  *scope.FindVar("y")->GetMutableTensor() = flags;
  s = (*prepared)->Run();
  EXPECT_THAT(s.message(), HasSubstr("'elementwise_mul' on cpu for bool"));
  // An unknown op type fails to prepare.
  Program other;
  OpDesc* bad = other.global_block().AppendOp("no_such_op");
  EXPECT_THAT(PreparedOp::Prepare(*bad, &scope, &ctx).status().message(),
              HasSubstr("no_such_op"));
}

}  // namespace
}  // namespace parex
