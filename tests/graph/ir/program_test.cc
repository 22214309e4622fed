#include "graph/ir/program.h"

#include <gtest/gtest.h>

#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"
#include "tests/paddle_models.h"

namespace parex {
namespace {

const std::string& kModels = testing::PaddleModelsDir();

TEST(ProgramTest, LoadsPaddleMnistProgram) {
  PAREX_REQUIRE_PADDLE_MODELS();
  auto program = Program::Load(kModels + "/mnist_mlp/__model__");
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  const Block& block = program->global_block();
  ASSERT_GT(block.num_ops(), 2);
  EXPECT_EQ(block.op(0).type(), "feed");
  EXPECT_EQ(block.op(block.num_ops() - 1).type(), "fetch");
  const VarDesc* w = block.FindVar("fc_0.w_0");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->persistable());
  EXPECT_EQ(w->dtype(), DType::kFP32);
  EXPECT_EQ(w->dims(), (Dims{784, 100}));
  const VarDesc* image = block.FindVar("image");
  ASSERT_NE(image, nullptr);
  EXPECT_EQ(image->dims(), (Dims{-1, 1, 28, 28}));
  bool found_mul = false;
  for (const auto& op : block.ops()) {
    if (op->type() != "mul") continue;
    found_mul = true;
    EXPECT_EQ(*op->GetAttr<int>("x_num_col_dims"), 1);
    EXPECT_EQ(op->Input("Y").size(), 1u);
  }
  EXPECT_TRUE(found_mul);
  EXPECT_TRUE(ValidateProgram(*program).ok());
}

TEST(ProgramTest, BuildsOpsAndVarsThroughTheApi) {
  Program program;
  Block& block = program.global_block();
  VarDesc* x = block.Var("x");
  x->SetDType(DType::kFP32);
  x->SetDims({-1, 4});
  OpDesc* op = block.AppendOp("scale");
  op->SetInput("X", {"x"});
  op->SetOutput("Out", {"y"});
  op->SetAttr<float>("scale", 3.0f);
  block.Var("y");
  EXPECT_EQ(block.num_ops(), 1);
  EXPECT_EQ(op->FirstInput("X"), "x");
  EXPECT_EQ(*op->GetAttr<float>("scale"), 3.0f);
  // Absent attributes fall back to the schema default.
  EXPECT_EQ(*op->GetAttr<float>("bias"), 0.0f);
  auto missing = op->GetAttr<int>("no_such_attr");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no_such_attr"), std::string::npos);
  EXPECT_NE(missing.status().message().find("'scale'"), std::string::npos);
  // Compile-time shape inference fills the output declaration.
  ASSERT_TRUE(InferShapeAtCompileTime(*op, block, true).ok());
  EXPECT_EQ(block.FindVar("y")->dims(), (Dims{-1, 4}));
  EXPECT_EQ(block.FindVar("y")->dtype(), DType::kFP32);
}

TEST(ProgramTest, CopiesAndMovesKeepViewsValid) {
  Program a;
  a.global_block().Var("x");
  Block* sub = a.AppendBlock(0);
  sub->Var("y");
  Program b = a;
  Program c = std::move(a);
  for (Program* p : {&b, &c}) {
    EXPECT_EQ(p->num_blocks(), 2);
    // Lookups from block 1 reach block 0 through the moved program.
    EXPECT_NE(p->block(1).FindVar("x"), nullptr);
    EXPECT_EQ(p->block(0).FindVar("y"), nullptr);
  }
}

TEST(ProgramTest, SchemasCoverEveryRequiredOp) {
  const char* ops[] = {"feed",
                       "fetch",
                       "fill_constant",
                       "uniform_random",
                       "gaussian_random",
                       "assign",
                       "scale",
                       "cast",
                       "mul",
                       "matmul",
                       "matmul_v2",
                       "elementwise_add",
                       "elementwise_sub",
                       "elementwise_mul",
                       "elementwise_div",
                       "relu",
                       "sigmoid",
                       "tanh",
                       "softmax",
                       "cross_entropy",
                       "softmax_with_cross_entropy",
                       "square",
                       "mean",
                       "reduce_sum",
                       "reduce_mean",
                       "sum",
                       "accuracy",
                       "top_k",
                       "conv2d",
                       "pool2d",
                       "batch_norm",
                       "dropout",
                       "reshape2",
                       "transpose2",
                       "concat",
                       "split",
                       "lookup_table",
                       "lookup_table_v2",
                       "sgd",
                       "momentum",
                       "adam",
                       "stack",
                       "gather",
                       "expand_v2",
                       "where",
                       "equal",
                       "fill_constant_batch_size_like",
                       "one_hot_v2",
                       "arg_max",
                       "cumsum",
                       "sigmoid_cross_entropy_with_logits",
                       "depthwise_conv2d",
                       "conv2d_transpose",
                       "pool3d",
                       "conv3d",
                       "pad3d",
                       "nearest_interp_v2",
                       "bilinear_interp_v2"};
  const auto& registry = OpSchemaRegistry::Global();
  for (const char* type : ops) {
    const OpSchema* schema = registry.Find(type);
    ASSERT_NE(schema, nullptr) << type;
    if (schema->has_grad()) {
      EXPECT_NE(registry.Find(schema->grad_type()), nullptr)
          << type << " declares missing grad op " << schema->grad_type();
    }
  }
}

}  // namespace
}  // namespace parex
