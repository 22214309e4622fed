// The launch plans of kernel_plans.h, replayed on the host against naive
// references: they run on every machine.
#include "graph/ir/op_schema.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace parex {
namespace {

using namespace cuda_test;  // NOLINT: test helpers
using ::testing::HasSubstr;

// ---- Launch plans, replayed on the host ----

// Computes out from a plan the way elementwise_launchers.cu indexes.
std::vector<double> ReplayElementwise(
    const ElementwisePlan& plan, const Array& x, const Array& y,
    const std::function<double(double, double)>& f) {
  std::vector<double> out(plan.numel);
  for (int64_t i = 0; i < plan.numel; ++i) {
    switch (plan.kind) {
      case ElementwisePlan::Kind::kSameShape:
        out[i] = f(x.values[i], y.values[i]);
        break;
      case ElementwisePlan::Kind::kMid: {
        const int64_t mid = (i / plan.post) % plan.n;
        out[i] = plan.broadcast_y ? f(x.values[i], y.values[mid])
                                  : f(x.values[mid], y.values[i]);
        break;
      }
      case ElementwisePlan::Kind::kGeneral: {
        int64_t rest = i, xo = 0, yo = 0;
        for (int d = plan.shape.rank - 1; d >= 0; --d) {
          const int64_t index = rest % plan.shape.extents[d];
          rest /= plan.shape.extents[d];
          xo += index * plan.shape.x_strides[d];
          yo += index * plan.shape.y_strides[d];
        }
        out[i] = f(x.values[xo], y.values[yo]);
        break;
      }
    }
  }
  return out;
}

TEST(KernelPlansTest, ElementwiseFollowsNumpyAndFluidBroadcasting) {
  const auto sub = [](double a, double b) { return a - b; };
  uint32_t seed = 1;
  for (const BroadcastCase& c : BroadcastCases()) {
    SCOPED_TRACE(DimsToString(c.x) + " - " + DimsToString(c.y) + " axis " +
                 std::to_string(c.axis));
    auto plan = PlanElementwise(c.x, c.y, c.axis);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->kind, c.kind);
    EXPECT_EQ(plan->out_dims, c.out);
    const Array x = RandomArray<double>(c.x, -1, 1, seed++);
    const Array y = RandomArray<double>(c.y, -1, 1, seed++);
    const Array expected = RefElementwise(x, y, c.axis, sub);
    EXPECT_EQ(expected.dims, c.out);
    EXPECT_TRUE(
        ValuesNear(ReplayElementwise(*plan, x, y, sub), expected.values, 0, 0));
  }
}

// Issue 29: on a GPU, CudaOpsTest.ElementwiseSameShapeAndBroadcast failed
// for [3,1] + [1,4] and [4] + [2,3,4] because the schemas' shape inference
// (run before any kernel) refused what the plan accepts. Every device case
// must get the plan's Out dims from the schema, for each op the test runs.
TEST(KernelPlansTest, Issue29SchemaShapeInferenceAcceptsEveryDeviceCase) {
  for (const char* type : {"elementwise_add", "elementwise_sub",
                           "elementwise_mul", "elementwise_div"}) {
    for (const BroadcastCase& c : BroadcastCases()) {
      SCOPED_TRACE(std::string(type) + " " + DimsToString(c.x) + " " +
                   DimsToString(c.y) + " axis " + std::to_string(c.axis));
      Program program;
      Block& block = program.global_block();
      block.Var("x")->SetDims(c.x);
      block.Var("x")->SetDType(DType::kFP32);
      block.Var("y")->SetDims(c.y);
      block.Var("y")->SetDType(DType::kFP32);
      block.Var("out");
      OpDesc* op = block.AppendOp(type);
      op->SetInput("X", {"x"});
      op->SetInput("Y", {"y"});
      op->SetOutput("Out", {"out"});
      op->SetAttr<int>("axis", c.axis);
      const Status s = InferShapeAtCompileTime(*op, block, true);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(block.FindVar("out")->dims(), c.out);
    }
  }
}

TEST(KernelPlansTest, ElementwiseMidDecomposition) {
  auto plan = PlanElementwise({2, 3, 4, 5}, {3, 4}, 1);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->kind, ElementwisePlan::Kind::kMid);
  EXPECT_TRUE(plan->broadcast_y);
  EXPECT_EQ(plan->pre, 2);
  EXPECT_EQ(plan->n, 12);
  EXPECT_EQ(plan->post, 5);
}

TEST(KernelPlansTest, ElementwiseRejectsMismatches) {
  EXPECT_EQ(PlanElementwise({2, 3}, {4}, -1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanElementwise({2, 3}, {3}, 2).status().code(),
            StatusCode::kInvalidArgument);  // runs past the last dim
  EXPECT_EQ(PlanElementwise({2, 3}, {2}, 1).status().code(),
            StatusCode::kInvalidArgument);
  // Fluid's rule at an explicit axis: only Y broadcasts, inside X.
  EXPECT_EQ(PlanElementwise({3, 1}, {1, 4}, 0).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanElementwise({3}, {2, 3}, 0).status().code(),
            StatusCode::kInvalidArgument);
  auto status = PlanElementwise({2, 3}, {4}, -1).status();
  EXPECT_THAT(status.message(), HasSubstr("[2,3]"));
  EXPECT_THAT(status.message(), HasSubstr("[4]"));
}

TEST(KernelPlansTest, ElementwiseEmptyTensor) {
  auto plan = PlanElementwise({0, 3}, {3}, -1);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->numel, 0);
  EXPECT_EQ(plan->out_dims, (Dims{0, 3}));
}

// Computes a reduction from a plan the way reduce_launchers.cu indexes.
std::vector<double> ReplayReduce(const ReducePlan& plan, const Array& x,
                                 bool mean) {
  std::vector<double> out;
  auto finish = [&](double s, int64_t count) { return mean ? s / count : s; };
  if (plan.kind == ReducePlan::Kind::kMiddle) {
    for (int64_t j = 0; j < plan.outer * plan.inner; ++j) {
      const int64_t o = j / plan.inner, i = j % plan.inner;
      double s = 0;
      for (int64_t r = 0; r < plan.reduce; ++r) {
        s += x.values[(o * plan.reduce + r) * plan.inner + i];
      }
      out.push_back(finish(s, plan.reduce));
    }
    return out;
  }
  const ReduceShape& shape = plan.shape;
  for (int64_t j = 0; j < plan.out_numel; ++j) {
    int64_t rest = j, base = 0;
    for (int d = shape.kept_rank - 1; d >= 0; --d) {
      base += rest % shape.kept_extents[d] * shape.kept_strides[d];
      rest /= shape.kept_extents[d];
    }
    double s = 0;
    for (int64_t r = 0; r < plan.reduce_count; ++r) {
      int64_t rest_r = r, offset = base;
      for (int d = shape.reduced_rank - 1; d >= 0; --d) {
        offset += rest_r % shape.reduced_extents[d] * shape.reduced_strides[d];
        rest_r /= shape.reduced_extents[d];
      }
      s += x.values[offset];
    }
    out.push_back(finish(s, plan.reduce_count));
  }
  return out;
}

TEST(KernelPlansTest, ReduceMatchesNaiveSums) {
  uint32_t seed = 100;
  for (const ReduceCase& c : ReduceCases()) {
    SCOPED_TRACE("reduce " + DimsToString(c.x) + " keep_dim " +
                 std::to_string(c.keep_dim));
    auto plan = PlanReduce(c.x, c.dims, c.keep_dim, c.reduce_all);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->out_dims, c.out);
    EXPECT_EQ(plan->out_numel, Numel(c.out));
    const Array x = RandomArray<double>(c.x, -1, 1, seed++);
    for (bool mean : {false, true}) {
      const Array expected = RefReduce(x, ReducedFlags(c), mean);
      EXPECT_TRUE(ValuesNear(ReplayReduce(*plan, x, mean), expected.values,
                             1e-12, 1e-12));
    }
  }
}

TEST(KernelPlansTest, ReduceKinds) {
  auto middle = PlanReduce({2, 3, 4}, {1}, false, false);
  ASSERT_TRUE(middle.ok());
  EXPECT_EQ(middle->kind, ReducePlan::Kind::kMiddle);
  EXPECT_EQ(middle->outer, 2);
  EXPECT_EQ(middle->reduce, 3);
  EXPECT_EQ(middle->inner, 4);
  auto general = PlanReduce({2, 3, 4}, {0, 2}, false, false);
  ASSERT_TRUE(general.ok());
  EXPECT_EQ(general->kind, ReducePlan::Kind::kGeneral);
  EXPECT_EQ(general->reduce_count, 8);
  EXPECT_EQ(PlanReduce({2, 3}, {2}, false, false).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanReduce({2, 3}, {-3}, false, false).status().code(),
            StatusCode::kInvalidArgument);
}

// Runs a matmul plan on the host the way matmul_kernels.cc drives cuBLAS:
// the plan's leading dims, strides and batch offsets.
std::vector<double> ReplayMatmul(const MatmulPlan& plan, const Array& x,
                                 const Array& y, double alpha) {
  std::vector<double> out;
  for (int64_t b = 0; b < plan.batch; ++b) {
    int64_t xo = 0, yo = 0;
    BatchOffsets(plan, b, &xo, &yo);
    for (int64_t i = 0; i < plan.m; ++i) {
      for (int64_t j = 0; j < plan.n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < plan.k; ++p) {
          const double xv = plan.trans_x ? x.values[xo + p * plan.ldx + i]
                                         : x.values[xo + i * plan.ldx + p];
          const double yv = plan.trans_y ? y.values[yo + j * plan.ldy + p]
                                         : y.values[yo + p * plan.ldy + j];
          s += xv * yv;
        }
        out.push_back(alpha * s);
      }
    }
  }
  return out;
}

TEST(KernelPlansTest, MulFlattensByNumColDims) {
  const Array x = RandomArray<double>({2, 3, 4}, -1, 1, 1);
  const Array y = RandomArray<double>({4, 5}, -1, 1, 2);
  auto plan = PlanMul(x.dims, y.dims, 2, 1);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->out_dims, (Dims{2, 3, 5}));
  EXPECT_EQ(plan->m, 6);
  EXPECT_EQ(plan->k, 4);
  EXPECT_EQ(plan->n, 5);
  auto expected =
      RefGemm(x.values.data(), 6, 4, false, y.values.data(), 4, 5, false, 1.0);
  EXPECT_TRUE(ValuesNear(ReplayMatmul(*plan, x, y, 1.0), expected, 1e-12, 0));

  auto other = PlanMul({2, 12}, {3, 4, 5}, 1, 2);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->out_dims, (Dims{2, 5}));
  EXPECT_EQ(PlanMul({2, 3}, {4, 5}, 1, 1).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanMul({2, 3}, {3, 5}, 2, 1).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(KernelPlansTest, MatmulV2BroadcastsBatchesLikeNumpy) {
  const std::vector<MatmulCase> cases = {
      {{3, 4}, {4, 5}, false, false, {3, 5}, true},
      {{4, 3}, {4, 5}, true, false, {3, 5}, true},
      {{3, 4}, {5, 4}, false, true, {3, 5}, true},
      {{4, 3}, {5, 4}, true, true, {3, 5}, true},
      {{2, 3, 4}, {2, 4, 5}, false, false, {2, 3, 5}, true},
      {{2, 3, 4}, {4, 5}, false, false, {2, 3, 5}, true},
      {{3, 4}, {2, 4, 5}, false, false, {2, 3, 5}, true},
      {{2, 1, 3, 4}, {5, 4, 6}, false, false, {2, 5, 3, 6}, false},
      {{2, 1, 4, 3}, {1, 3, 6, 4}, true, true, {2, 3, 3, 6}, false},
  };
  uint32_t seed = 10;
  for (const MatmulCase& c : cases) {
    SCOPED_TRACE(DimsToString(c.x) + " x " + DimsToString(c.y));
    auto plan = PlanMatmulV2(c.x, c.y, c.trans_x, c.trans_y);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    EXPECT_EQ(plan->out_dims, c.out);
    EXPECT_EQ(plan->strided, c.strided);
    const Array x = RandomArray<double>(c.x, -1, 1, seed++);
    const Array y = RandomArray<double>(c.y, -1, 1, seed++);
    const Array expected = RefBatchedMatmul(x, y, c.trans_x, c.trans_y, 1.0);
    EXPECT_EQ(expected.dims, c.out);
    EXPECT_TRUE(
        ValuesNear(ReplayMatmul(*plan, x, y, 1.0), expected.values, 1e-12, 0));
  }
}

TEST(KernelPlansTest, MatmulV2Vectors) {
  auto vm = PlanMatmulV2({4}, {4, 5}, true, false);  // 1-D ignores trans
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  EXPECT_EQ(vm->out_dims, (Dims{5}));
  auto mv = PlanMatmulV2({2, 3, 4}, {4}, false, true);
  ASSERT_TRUE(mv.ok()) << mv.status().ToString();
  EXPECT_EQ(mv->out_dims, (Dims{2, 3}));
  auto vv = PlanMatmulV2({4}, {4}, false, false);
  ASSERT_TRUE(vv.ok());
  EXPECT_EQ(Numel(vv->out_dims), 1);
  const Array x = RandomArray<double>({2, 3, 4}, -1, 1, 5);
  const Array y = RandomArray<double>({4}, -1, 1, 6);
  const Array expected =
      RefBatchedMatmul(x, Array{{4, 1}, y.values}, false, false, 1.0);
  EXPECT_TRUE(
      ValuesNear(ReplayMatmul(*mv, x, y, 1.0), expected.values, 1e-12, 0));
  EXPECT_EQ(PlanMatmulV2({3, 4}, {5, 6}, false, false).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(PlanMatmulV2({2, 3, 4}, {3, 4, 5}, false, false).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(KernelPlansTest, MatmulV1FlattensBatchesAndSqueezesVectors) {
  auto batched = PlanMatmul({2, 3, 4, 5}, {6, 5, 7}, false, false);
  ASSERT_TRUE(batched.ok()) << batched.status().ToString();
  EXPECT_EQ(batched->batch, 6);
  EXPECT_EQ(batched->out_dims, (Dims{2, 3, 4, 7}));
  auto broadcast = PlanMatmul({3, 4}, {2, 4, 5}, false, false);
  ASSERT_TRUE(broadcast.ok());
  EXPECT_EQ(broadcast->x_stride, 0);
  EXPECT_EQ(broadcast->out_dims, (Dims{2, 3, 5}));
  auto row = PlanMatmul({4}, {4, 5}, false, false);
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->out_dims, (Dims{5}));
  auto dot = PlanMatmul({4}, {4}, false, false);
  ASSERT_TRUE(dot.ok());
  EXPECT_EQ(dot->out_dims, (Dims{1}));
  auto outer = PlanMatmul({4}, {4}, true, true);  // [4,1] x [1,4]
  ASSERT_TRUE(outer.ok()) << outer.status().ToString();
  EXPECT_EQ(outer->out_dims, (Dims{4, 4}));
  EXPECT_EQ(PlanMatmul({2, 3, 4}, {3, 4, 5}, false, false).status().code(),
            StatusCode::kInvalidArgument);

  const Array x = RandomArray<double>({2, 4, 3}, -1, 1, 7);
  const Array y = RandomArray<double>({5, 4}, -1, 1, 8);
  auto plan = PlanMatmul(x.dims, y.dims, true, true);
  ASSERT_TRUE(plan.ok());
  const Array expected = RefBatchedMatmul(x, y, true, true, 0.5);
  EXPECT_TRUE(
      ValuesNear(ReplayMatmul(*plan, x, y, 0.5), expected.values, 1e-12, 0));
}

}  // namespace
}  // namespace parex
