// PreparedOp: bound once, run many times with inputs of changing shapes, it
// gives what RunOp gives, and the same errors.
#include "kernels/prepared_op.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/op_runner.h"

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
  EXPECT_THAT(s.message(),
              HasSubstr("input 'Y' reads variable 'y', which holds no value"));
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

// top_k over x [2, 3] with its outputs renamed, as a crafted program could.
Program TopKProgram(const std::string& out, const std::string& indices) {
  Program program;
  Block& block = program.global_block();
  for (const char* name : {"x", "v", "i"}) {
    VarDesc* v = block.Var(name);
    v->SetDType(DType::kFP32);
    v->SetDims({2, 3});
  }
  OpDesc* op = block.AppendOp("top_k");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {out});
  op->SetOutput("Indices", {indices});
  op->SetAttr<int>("k", 1);
  return program;
}

// An output that is another output or an input of a different dtype or
// shape is refused, naming both slots, before anything is allocated (the
// kernel would otherwise read a tensor the other slot reshaped).
TEST(PreparedOpTest, RefusesOutputsAliasingWithAnotherDTypeOrShape) {
  CpuDeviceContext ctx(Place::CPU(0));
  struct Case {
    std::string out, indices, want;
  };
  for (const Case& c :
       {Case{"v", "v", "outputs 'Indices' and 'Out' both write variable 'v'"},
        Case{"v", "x",
             "output 'Indices' writes variable 'x' in place of its "
             "input 'X' (fp32[2,3]) as int64[2,1]"},
        Case{"x", "i",
             "output 'Out' writes variable 'x' in place of its "
             "input 'X' (fp32[2,3]) as fp32[2,1]"}}) {
    Program program = TopKProgram(c.out, c.indices);
    const OpDesc& op = program.global_block().op(0);
    for (bool prepared : {false, true}) {
      Scope scope;
      for (const char* name : {"x", "v", "i"}) scope.Var(name);
      *scope.FindVar("x")->GetMutableTensor() = Filled(2, 1);
      Status s;
      if (prepared) {
        auto p = PreparedOp::Prepare(op, &scope, &ctx);
        ASSERT_TRUE(p.ok()) << p.status().ToString();
        s = (*p)->Run();
      } else {
        s = RunOp(op, &scope, &ctx);
      }
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
      EXPECT_THAT(s.message(), HasSubstr("'top_k'"));
      EXPECT_THAT(s.message(), HasSubstr(c.want));
      // x is untouched.
      EXPECT_EQ(scope.FindVar("x")->GetTensor()->DebugString(),
                "fp32[2,3]@cpu:0");
    }
  }
}

// In place with the same dtype and shape stays allowed: x *= y.
TEST(PreparedOpTest, InPlaceWithTheSameShapeRuns) {
  Program program = MulProgram();
  OpDesc& op = program.global_block().op(0);
  op.SetOutput("Out", {"x"});
  Scope scope;
  scope.Var("x");
  scope.Var("y");
  *scope.FindVar("x")->GetMutableTensor() = Filled(2, 1);
  *scope.FindVar("y")->GetMutableTensor() = Filled(2, 1);
  CpuDeviceContext ctx(Place::CPU(0));
  ASSERT_TRUE(RunOp(op, &scope, &ctx).ok());
  EXPECT_EQ(scope.FindVar("x")->GetTensor()->data<float>()[2], 9.0f);
}

}  // namespace
}  // namespace parex
