#include "graph/validate.h"

#include <gtest/gtest.h>

#include "graph/op_schema.h"
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
  for (const char* file : {"/mnist_mlp/__model__", "/simple_model/model.pdmodel",
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
