#include "kernels/reference_executor.h"

#include <gtest/gtest.h>

#include "kernels/io/model_io.h"
#include "kernels/io/tensor_io.h"
#include "proto/program_io.h"

namespace parex {
namespace {

const std::string kTmpDir = PAREX_TEST_TMP_DIR;

VarDesc* Declare(Block& block, const std::string& name, DType dtype, Dims dims,
                 bool persistable = false) {
  VarDesc* v = block.Var(name);
  v->SetDType(dtype);
  v->SetDims(dims);
  v->SetPersistable(persistable);
  return v;
}

// feed x[-1,2] -> scale(2, bias 1) -> y -> mul(w[2,3]) -> z -> fetch
Program AffineProgram() {
  Program program;
  Block& block = program.global_block();
  VarDesc* feed = block.Var("feed");
  feed->SetType(proto::VarType::FEED_MINIBATCH);
  feed->SetPersistable(true);
  VarDesc* fetch = block.Var("fetch");
  fetch->SetType(proto::VarType::FETCH_LIST);
  fetch->SetPersistable(true);
  Declare(block, "x", DType::kFP32, {-1, 2});
  Declare(block, "y", DType::kFP32, {-1, 2});
  Declare(block, "w", DType::kFP32, {2, 3}, /*persistable=*/true);
  Declare(block, "z", DType::kFP32, {-1, 3});
  OpDesc* f = block.AppendOp("feed");
  f->SetInput("X", {"feed"});
  f->SetOutput("Out", {"x"});
  f->SetAttr<int>("col", 0);
  OpDesc* s = block.AppendOp("scale");
  s->SetInput("X", {"x"});
  s->SetOutput("Out", {"y"});
  s->SetAttr<float>("scale", 2.0f);
  s->SetAttr<float>("bias", 1.0f);
  OpDesc* m = block.AppendOp("mul");
  m->SetInput("X", {"y"});
  m->SetInput("Y", {"w"});
  m->SetOutput("Out", {"z"});
  OpDesc* out = block.AppendOp("fetch");
  out->SetInput("X", {"z"});
  out->SetOutput("Out", {"fetch"});
  out->SetAttr<int>("col", 0);
  return program;
}

void SetW(Scope* scope) {
  *scope->Var("w")->GetMutableTensor() =
      MakeTensor<float>({2, 3}, {1, 0, 2, 0, 1, -1});
}

TEST(ReferenceExecutorTest, RunsOpsInOrderWithFeedAndFetch) {
  Program program = AffineProgram();
  Scope scope;
  SetW(&scope);
  ReferenceExecutor executor;
  auto out = executor.Run(program, &scope,
                          {{"x", MakeTensor<float>({2, 2}, {1, 2, 3, 4})}},
                          {"z", "y"});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // y = 2x+1 = [[3,5],[7,9]]; z = y*w
  EXPECT_EQ(ToVector<float>((*out)[1]), (std::vector<float>{3, 5, 7, 9}));
  EXPECT_EQ(ToVector<float>((*out)[0]),
            (std::vector<float>{3, 5, 6 - 5, 7, 9, 14 - 9}));
  // Temporaries are gone; the persistable stays.
  EXPECT_EQ(scope.FindVar("y"), nullptr);
  EXPECT_NE(scope.FindVar("w"), nullptr);
}

TEST(ReferenceExecutorTest, FeedErrorsNameTheVariable) {
  Program program = AffineProgram();
  Scope scope;
  SetW(&scope);
  ReferenceExecutor executor;
  auto missing = executor.Run(program, &scope, {}, {"z"});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing feed 'x'"),
            std::string::npos);

  auto wrong_dtype = executor.Run(
      program, &scope, {{"x", MakeTensor<double>({1, 2}, {1, 2})}}, {"z"});
  ASSERT_FALSE(wrong_dtype.ok());
  EXPECT_NE(wrong_dtype.status().message().find("'x'"), std::string::npos);
  EXPECT_NE(wrong_dtype.status().message().find("fp64"), std::string::npos);

  auto wrong_shape = executor.Run(
      program, &scope, {{"x", MakeTensor<float>({1, 3}, {1, 2, 3})}}, {"z"});
  ASSERT_FALSE(wrong_shape.ok());
  EXPECT_NE(wrong_shape.status().message().find("[1,3]"), std::string::npos);

  auto unknown = executor.Run(program, &scope,
                              {{"x", MakeTensor<float>({1, 2}, {1, 2})},
                               {"bogus", MakeTensor<float>({1}, {1})}},
                              {"z"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("bogus"), std::string::npos);
}

TEST(ReferenceExecutorTest, MissingParameterAndFetchAreErrors) {
  Program program = AffineProgram();
  Scope scope;  // w never loaded
  ReferenceExecutor executor;
  auto out = executor.Run(program, &scope,
                          {{"x", MakeTensor<float>({1, 2}, {1, 2})}}, {"z"});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("'w'"), std::string::npos);
  EXPECT_NE(out.status().message().find("'mul'"), std::string::npos);

  SetW(&scope);
  auto fetch = executor.Run(
      program, &scope, {{"x", MakeTensor<float>({1, 2}, {1, 2})}}, {"nothing"});
  ASSERT_FALSE(fetch.ok());
  EXPECT_NE(fetch.status().message().find("nothing"), std::string::npos);
}

TEST(ReferenceExecutorTest, MissingKernelNamesOpPlaceAndDType) {
  Program program;
  Block& block = program.global_block();
  Declare(block, "x", DType::kBool, {2});
  Declare(block, "y", DType::kBool, {2});
  OpDesc* op = block.AppendOp("sigmoid");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"y"});
  Scope scope;
  Tensor x(DType::kBool, {2});
  ReferenceExecutor executor;
  auto out = executor.Run(program, &scope, {{"x", x}}, {"y"});
  ASSERT_FALSE(out.ok());
  const std::string& m = out.status().message();
  EXPECT_NE(m.find("sigmoid"), std::string::npos) << m;
  EXPECT_NE(m.find("cpu"), std::string::npos) << m;
  EXPECT_NE(m.find("bool"), std::string::npos) << m;
}

TEST(ModelIoTest, PersistablesRoundTripSeparateAndCombined) {
  Program program = AffineProgram();
  Scope scope;
  SetW(&scope);
  std::string dir = kTmpDir;
  ASSERT_TRUE(SavePersistables(program, dir, scope).ok());
  ASSERT_TRUE(
      SaveCombinedPersistables(program, dir + "/all.pdiparams", scope).ok());
  Scope a, b;
  ASSERT_TRUE(LoadPersistables(program, dir, &a).ok());
  Status s = LoadCombinedPersistables(program, dir + "/all.pdiparams", &b);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (Scope* loaded : {&a, &b}) {
    EXPECT_EQ(ToVector<float>(*loaded->FindVar("w")->GetTensor()),
              ToVector<float>(*scope.FindVar("w")->GetTensor()));
  }
  // Saved again from the loaded scope: the same bytes.
  ASSERT_TRUE(
      SaveCombinedPersistables(program, dir + "/again.pdiparams", b).ok());
  EXPECT_EQ(*ReadFileBytes(dir + "/all.pdiparams"),
            *ReadFileBytes(dir + "/again.pdiparams"));
}

TEST(ModelIoTest, FailedLoadChangesNothing) {
  Program program = AffineProgram();
  Scope scope;
  SetW(&scope);
  std::string path = kTmpDir + "/w_cut.pdiparams";
  ASSERT_TRUE(SaveCombinedPersistables(program, path, scope).ok());
  std::string bytes = *ReadFileBytes(path);
  ASSERT_TRUE(WriteFileBytes(path, bytes.substr(0, bytes.size() - 3)).ok());
  Scope target;
  *target.Var("w")->GetMutableTensor() = MakeTensor<float>({1}, {42});
  Status s = LoadCombinedPersistables(program, path, &target);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("w_cut.pdiparams"), std::string::npos);
  EXPECT_NE(s.message().find("'w'"), std::string::npos);
  EXPECT_EQ(ToVector<float>(*target.FindVar("w")->GetTensor()),
            std::vector<float>{42});
}

TEST(ModelIoTest, DeclaredShapeMismatchNamesVariableAndFile) {
  Program program = AffineProgram();
  Scope scope;
  *scope.Var("w")->GetMutableTensor() =
      MakeTensor<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  std::string dir = kTmpDir + "/bad_w";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  ASSERT_TRUE(
      SaveTensorFile(dir + "/w", *scope.FindVar("w")->GetTensor()).ok());
  Scope target;
  Status s = LoadPersistables(program, dir, &target);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'w'"), std::string::npos);
  EXPECT_NE(s.message().find("[2,3]"), std::string::npos);
  Status missing = LoadPersistables(program, kTmpDir + "/no_dir", &target);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("'w'"), std::string::npos);
}

}  // namespace
}  // namespace parex
