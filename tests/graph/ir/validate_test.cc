#include "graph/ir/validate.h"

#include <gtest/gtest.h>

#include "graph/ir/op_schema.h"
#include "tests/paddle_models.h"

namespace parex {
namespace {

// x[-1,4] --mul(w[4,3])--> y
Program MulProgram() {
  Program program;
  Block& block = program.global_block();
  auto declare = [&](const std::string& name, Dims dims) {
    VarDesc* v = block.Var(name);
    v->SetDType(DType::kFP32);
    v->SetDims(dims);
  };
  declare("x", {-1, 4});
  declare("w", {4, 3});
  declare("y", {-1, 3});
  OpDesc* op = block.AppendOp("mul");
  op->SetInput("X", {"x"});
  op->SetInput("Y", {"w"});
  op->SetOutput("Out", {"y"});
  return program;
}

TEST(ValidateTest, BlockTreeMustBeRootedAndAcyclic) {
  proto::ProgramDesc desc = MulProgram().proto();
  desc.mutable_blocks(0)->set_parent_idx(0);
  Status root = ValidateProgram(Program(desc));
  ASSERT_FALSE(root.ok());
  EXPECT_NE(root.message().find("block 0"), std::string::npos);

  // Blocks 1 and 2 each other's parent: rejected, and a lookup through them
  // ends instead of looping.
  desc = MulProgram().proto();
  auto* b1 = desc.add_blocks();
  b1->set_idx(1);
  b1->set_parent_idx(2);
  auto* b2 = desc.add_blocks();
  b2->set_idx(2);
  b2->set_parent_idx(1);
  Program cyclic(desc);
  EXPECT_EQ(cyclic.block(1).FindVar("nowhere"), nullptr);
  Status cycle = ValidateProgram(cyclic);
  ASSERT_FALSE(cycle.ok());
  EXPECT_NE(cycle.message().find("block 1"), std::string::npos);
}

TEST(ValidateTest, DeclaredShapesAreBounded) {
  Program program = MulProgram();
  program.global_block().FindVar("y")->SetDims(
      {int64_t{1} << 40, int64_t{1} << 40});
  Status s = ValidateProgram(program);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("variable 'y'"), std::string::npos) << s.message();
  program.global_block().FindVar("y")->SetDims({-7, 3});
  EXPECT_FALSE(ValidateProgram(program).ok());
}

TEST(ValidateTest, OnlyInPlaceOpsMayWriteTheirPersistableInputs) {
  Program program = MulProgram();
  program.global_block().FindVar("w")->SetPersistable(true);
  OpDesc* op = &program.global_block().op(0);
  op->SetOutput("Out", {"w"});
  Status s = ValidateProgram(program);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("persistable variable 'w'"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("op #0 'mul'"), std::string::npos);

  // sgd writes Param in place, as Paddle's optimizers do.
  Program sgd;
  Block& block = sgd.global_block();
  for (const char* name : {"p", "g", "lr"}) {
    VarDesc* v = block.Var(name);
    v->SetDType(DType::kFP32);
    v->SetDims(std::string(name) == "lr" ? Dims{1} : Dims{4});
    v->SetPersistable(std::string(name) != "g");
  }
  OpDesc* update = block.AppendOp("sgd");
  update->SetInput("Param", {"p"});
  update->SetInput("Grad", {"g"});
  update->SetInput("LearningRate", {"lr"});
  update->SetOutput("ParamOut", {"p"});
  EXPECT_TRUE(ValidateProgram(sgd).ok()) << ValidateProgram(sgd).ToString();
  // ... but not from its learning rate.
  update->SetOutput("ParamOut", {"lr"});
  EXPECT_FALSE(ValidateProgram(sgd).ok());
}

TEST(ValidateTest, AcceptsAGoodProgram) {
  Program program = MulProgram();
  Status s = ValidateProgram(program);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(ValidateTest, UnknownOpTypeNamesTheOp) {
  Program program = MulProgram();
  program.global_block().AppendOp("frobnicate");
  Status s = ValidateProgram(program);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("frobnicate"), std::string::npos);
  EXPECT_NE(s.message().find("op #1"), std::string::npos);
}

TEST(ValidateTest, AttributeOfWrongTypeNamesTheAttribute) {
  Program program = MulProgram();
  program.global_block().op(0).SetAttr<std::string>("x_num_col_dims", "one");
  Status s = ValidateProgram(program);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("x_num_col_dims"), std::string::npos);
  EXPECT_NE(s.message().find("'mul'"), std::string::npos);
}

TEST(ValidateTest, BoolWrittenAsIntIsAccepted) {
  Program program = MulProgram();
  // Attributes parex does not use are accepted, whatever their type.
  program.global_block().op(0).SetAttr<int>("use_mkldnn", 0);
  program.global_block().op(0).SetAttr<std::string>("op_namescope", "/");
  EXPECT_TRUE(ValidateProgram(program).ok());
}

TEST(ValidateTest, UndeclaredVariableIsNamed) {
  Program program = MulProgram();
  program.global_block().op(0).SetInput("Y", {"ghost"});
  Status s = ValidateProgram(program);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ghost"), std::string::npos);
}

TEST(ValidateTest, MissingRequiredSlotIsNamed) {
  Program program = MulProgram();
  program.global_block().op(0).SetInput("Y", {});
  Status s = ValidateProgram(program);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'Y'"), std::string::npos);
}

TEST(ValidateTest, ShapeMismatchIsCaughtAtLoad) {
  Program program = MulProgram();
  program.global_block().FindVar("w")->SetDims({5, 3});
  Status s = ValidateProgram(program);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'mul'"), std::string::npos);
}

}  // namespace
}  // namespace parex

namespace parex {
namespace {

// Corrupted program files either fail to parse or fail validation with a
// Status; none crashes the loader (run under ASan in CI).
TEST(ValidateTest, CorruptedPaddleProgramsNeverCrash) {
  PAREX_REQUIRE_PADDLE_MODELS();
  const std::string& models = testing::PaddleModelsDir();
  int parsed = 0, rejected = 0;
  for (const char* file :
       {"/mnist_mlp/__model__", "/simple_model/model.pdmodel",
        "/fit_a_line/__model__"}) {
    auto bytes = ReadFileBytes(models + file);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    uint32_t x = 2024;
    for (int round = 0; round < 300; ++round) {
      std::string mutated = *bytes;
      for (int flips = 0; flips < 1 + round % 4; ++flips) {
        x = x * 1664525u + 1013904223u;
        size_t at = (x >> 8) % mutated.size();
        x = x * 1664525u + 1013904223u;
        mutated[at] = static_cast<char>(x >> 24);
      }
      auto desc = ParseProgramBinary(mutated, file);
      if (!desc.ok()) {
        ++rejected;
        continue;
      }
      ++parsed;
      Program program(std::move(*desc));
      Status s = ValidateProgram(program);
      if (!s.ok()) {
        ++rejected;
        EXPECT_FALSE(s.message().empty());
      }
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace parex
