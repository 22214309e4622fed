// Bad programs give clear errors (issue 4, acceptance 7): no places, an
// unknown or missing loss, op_role_var naming an unknown parameter, two
// unordered writers of one var, an undeclared input, and Reduce mode with
// clipping by global norm.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "graph/builder/layers.h"
#include "graph/builder/optimizer.h"
#include "graph/builder/program_builder.h"
#include "graph/ir/op_role.h"
#include "graph/ssa/multi_device_builder.h"
#include "tests/graph/ssa/ssa_test_util.h"

namespace parex {
namespace {

using testing::CpuPlaces;
using ::testing::HasSubstr;
using testing::TrainingProgram;
using Mode = BuildStrategy::ReduceStrategy;

// Acceptance 7: bad programs give clear errors.
TEST(MultiDeviceErrorsTest, MissingLossUnknownParameterAndDoubleWriter) {
  ExampleProgram ex = TrainingProgram(ExampleKind::kDigitsMlp);
  Block& block = ex.main.global_block();

  {  // No places.
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(ex.main, {}, ex.loss, BuildStrategy{});
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr("no places"));
  }
  {  // A loss name that is no var.
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(ex.main, CpuPlaces(2), "nope", BuildStrategy{});
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr("loss 'nope'"));
  }
  {  // No loss name for a training program.
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(ex.main, CpuPlaces(2), "", BuildStrategy{});
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr("missing loss"));
  }
  {  // The loss-gradient fill lost its role: gradients without a loss.
    Program p = ex.main;
    for (int i = 0; i < p.global_block().num_ops(); ++i) {
      OpDesc& op = p.global_block().op(i);
      if (OpRole(op) == (kOpRoleBackward | kOpRoleLoss)) {
        op.SetAttr<int>("op_role", kOpRoleBackward);
      }
    }
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(p, CpuPlaces(2), ex.loss, BuildStrategy{});
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr("missing loss"));
    EXPECT_THAT(g.status().message(), HasSubstr("Backward|Loss"));
  }
  {  // op_role_var naming an unknown parameter.
    Program p = ex.main;
    for (int i = 0; i < p.global_block().num_ops(); ++i) {
      OpDesc& op = p.global_block().op(i);
      if (op.type() == "mul_grad" && op.HasAttr("op_role_var")) {
        std::vector<std::string> rv =
            *op.GetAttr<std::vector<std::string>>("op_role_var");
        rv[0] = "ghost_param";
        op.SetAttr<std::vector<std::string>>("op_role_var", rv);
        break;
      }
    }
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(p, CpuPlaces(2), ex.loss, BuildStrategy{});
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr("ghost_param"));
    EXPECT_THAT(g.status().message(), HasSubstr("mul_grad"));
  }
  {  // One op writing one var in two output slots: two unordered writers.
    Program p = ex.main;
    for (int i = 0; i < p.global_block().num_ops(); ++i) {
      OpDesc& op = p.global_block().op(i);
      if (op.type() == "mul_grad") {
        op.SetOutput("Y@GRAD", op.Output("X@GRAD"));
        break;
      }
    }
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(p, CpuPlaces(2), ex.loss, BuildStrategy{});
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr("two unordered writers"));
    EXPECT_THAT(g.status().message(), HasSubstr("mul_grad"));
  }
  {  // An op reading an undeclared var.
    Program p = ex.main;
    p.global_block().op(0).SetInput("X", {"undeclared_x"});
    StatusOr<SsaGraph> g =
        BuildMultiDeviceGraph(p, CpuPlaces(2), ex.loss, BuildStrategy{});
    ASSERT_FALSE(g.ok());
    EXPECT_THAT(g.status().message(), HasSubstr("undeclared_x"));
  }
  (void)block;
}

TEST(MultiDeviceErrorsTest, ReduceModeRejectsGlobalNormClipping) {
  Program main, startup;
  ProgramBuilder b(&main, &startup);
  VarDesc* x = *layers::Data(b, "x", {8});
  VarDesc* y = *layers::Data(b, "y", {1});
  layers::FcOptions fc;
  fc.size = 1;
  VarDesc* pred = *layers::Fc(b, x, fc);
  VarDesc* avg = *layers::Mean(b, *layers::SquareErrorCost(b, pred, y));
  OptimizerOptions options;
  options.clip_global_norm = 1.0;
  SGDOptimizer sgd(LearningRate::Constant(0.1), options);
  ASSERT_TRUE(sgd.Minimize(b, avg).ok());
  BuildStrategy strategy;
  strategy.reduce = Mode::kReduce;
  StatusOr<SsaGraph> g =
      BuildMultiDeviceGraph(main, CpuPlaces(2), avg->name(), strategy);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(g.status().message(), HasSubstr("AllReduce mode"));
  EXPECT_THAT(g.status().message(), HasSubstr("Reduce mode computes on"));
  // AllReduce mode runs the clipping on every place.
  g = BuildMultiDeviceGraph(main, CpuPlaces(2), avg->name(), BuildStrategy{});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_TRUE(CheckRaces(*g).ok());
}

}  // namespace
}  // namespace parex
