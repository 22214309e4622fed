// Runs a reduction planned by PlanReduce (kernel_plans.h) with the reduce
// launchers: the reduce group's kernels and the element-wise gradients (a
// broadcast operand's gradient sums Out@GRAD over its repeated dims) use it.
#pragma once

#include <cuda_runtime_api.h>

#include "base/status.h"
#include "kernels/cuda/cuda_launchers.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/kernel_plans.h"

namespace parex {

// out = the sum (or mean) of x as `plan` says, queued on `stream`.
template <typename T>
Status RunReducePlan(const ReducePlan& plan, const T* x, T* out, bool mean,
                     cudaStream_t stream) {
  if (plan.kind == ReducePlan::Kind::kMiddle) {
    PAREX_CUDA_RETURN_IF_ERROR(LaunchReduceSum<T>(
        x, out, plan.outer, plan.reduce, plan.inner, mean, stream));
  } else {
    PAREX_CUDA_RETURN_IF_ERROR(LaunchReduceSumGeneral<T>(
        x, out, plan.shape, plan.out_numel, plan.reduce_count, mean, stream));
  }
  return Status::Ok();
}

}  // namespace parex
