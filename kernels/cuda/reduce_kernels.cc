// The reduce group on CUDA (Fluid semantics):
//   reduce_sum / reduce_mean: X over `dim` (negative from the back; all dims
//     when reduce_all or `dim` is empty), keep_dim keeps them as 1;
//   reduce_sum_grad / reduce_mean_grad: X@GRAD[i] = Out@GRAD[j] (divided by
//     the number of elements reduced into j for the mean), j being the
//     element i was reduced into;
//   mean: the mean of every element, Out [1];
//   sum: Out = X_0 + X_1 + ... over the non-empty inputs (Out may be X_0,
//     as in gradient accumulation).
#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_launchers.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/kernel_plans.h"
#include "kernels/cuda/reduce_run.h"
#include "kernels/cuda/transformer_launchers.h"

namespace parex {
namespace {

template <typename T>
Status ReduceKernel(KernelContext& ctx, bool mean) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(std::vector<int> dims,
                         AttrOr<std::vector<int>>(ctx, "dim", {0}));
  PAREX_ASSIGN_OR_RETURN(bool keep_dim, AttrOr<bool>(ctx, "keep_dim", false));
  PAREX_ASSIGN_OR_RETURN(bool reduce_all,
                         AttrOr<bool>(ctx, "reduce_all", false));
  PAREX_ASSIGN_OR_RETURN(int out_dtype, AttrOr<int>(ctx, "out_dtype", -1));
  if (out_dtype != -1 && out_dtype != static_cast<int>(DTypeOf<T>())) {
    return Unimplemented(ctx.op().Label() +
                         ": out_dtype different from X's dtype");
  }
  StatusOr<ReducePlan> plan = PlanReduce(x->dims(), dims, keep_dim, reduce_all);
  if (!plan.ok()) return plan.status().WithContext(ctx.op().Label());
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), plan->out_dims));
  return RunReducePlan<T>(*plan, x->data<T>(), out->data<T>(), mean,
                          cuda->stream());
}

template <typename T>
Status ReduceSumKernel(KernelContext& ctx) {
  return ReduceKernel<T>(ctx, /*mean=*/false);
}
template <typename T>
Status ReduceMeanKernel(KernelContext& ctx) {
  return ReduceKernel<T>(ctx, /*mean=*/true);
}

template <typename T>
Status ReduceGradKernel(KernelContext& ctx, bool mean) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(std::vector<int> dims,
                         AttrOr<std::vector<int>>(ctx, "dim", {0}));
  PAREX_ASSIGN_OR_RETURN(bool reduce_all,
                         AttrOr<bool>(ctx, "reduce_all", false));
  const int rank = x->rank();
  if (rank > kMaxGatherRank) {
    return Unimplemented(ctx.op().Label() + ": rank " + std::to_string(rank) +
                         " above " + std::to_string(kMaxGatherRank) +
                         " on CUDA");
  }
  const bool all = reduce_all || dims.empty();
  std::vector<bool> reduced(rank, all);
  for (int d : dims) {
    if (d < -rank || d >= rank) {
      return ctx.Error("dim " + std::to_string(d) +
                       " is out of range for X of rank " +
                       std::to_string(rank));
    }
    reduced[d < 0 ? d + rank : d] = true;
  }
  // X@GRAD walks X's dims reading Out@GRAD (X's dims with the reduced ones
  // 1) at stride 0 along the reduced dims.
  GatherShape shape;
  shape.rank = rank;
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    shape.extents[d] = x->dim(d);
    shape.src_strides[d] = reduced[d] ? 0 : stride;
    if (!reduced[d]) stride *= x->dim(d);
  }
  const int64_t small = stride;  // Out's element count
  if (small != dout->numel()) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " does not hold the reduction of X " +
                     DimsToString(x->dims()));
  }
  const T scale =
      mean && small > 0 ? T(1) / static_cast<T>(x->numel() / small) : T(1);
  PAREX_ASSIGN_OR_RETURN(Tensor * dx,
                         CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), x->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchGather<T>(dout->data<T>(), dx->data<T>(),
                                             shape, x->numel(), true, scale,
                                             cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status ReduceSumGradKernel(KernelContext& ctx) {
  return ReduceGradKernel<T>(ctx, /*mean=*/false);
}
template <typename T>
Status ReduceMeanGradKernel(KernelContext& ctx) {
  return ReduceGradKernel<T>(ctx, /*mean=*/true);
}

template <typename T>
Status MeanKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  StatusOr<ReducePlan> plan = PlanReduce(x->dims(), {}, false, true);
  if (!plan.ok()) return plan.status().WithContext(ctx.op().Label());
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), Dims{1}));
  return RunReducePlan<T>(*plan, x->data<T>(), out->data<T>(), true,
                          cuda->stream());
}

template <typename T>
Status SumKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  const int count = ctx.InputCount("X");
  std::vector<const Tensor*> inputs;
  inputs.reserve(count);
  for (int i = 0; i < count; ++i) {
    if (ctx.InputVar("X", i) == nullptr) continue;  // empty argument name
    PAREX_ASSIGN_OR_RETURN(const Tensor* t,
                           CudaInput(ctx, "X", DTypeOf<T>(), i));
    if (t->numel() > 0) inputs.push_back(t);
  }
  Dims dims = inputs.empty() ? Dims{0} : inputs[0]->dims();
  for (const Tensor* t : inputs) {
    if (t->numel() != inputs[0]->numel()) {
      return ctx.Error("inputs disagree: " + inputs[0]->DebugString() +
                       " and " + t->DebugString());
    }
  }
  if (inputs.empty()) {
    // Every input is empty: Out keeps the shape inference gave it, zeroed.
    Tensor* out = ctx.Output("Out");
    if (out != nullptr && out->defined()) dims = out->dims();
  }
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), dims));
  T* out_data = out->data<T>();
  const int64_t n = out->numel();
  if (n == 0) return Status::Ok();
  if (inputs.empty()) {
    PAREX_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(out_data, 0, out->bytes(), cuda->stream()));
    return Status::Ok();
  }
  std::vector<const T*> data;
  data.reserve(inputs.size());
  for (const Tensor* t : inputs) data.push_back(t->data<T>());
  // An input that is Out itself (in-place accumulation) goes first, so it is
  // read before the first launch writes Out.
  std::stable_partition(data.begin(), data.end(),
                        [&](const T* p) { return p == out_data; });
  for (size_t start = 0; start < data.size(); start += kMaxSumInputs) {
    const int chunk =
        static_cast<int>(std::min<size_t>(kMaxSumInputs, data.size() - start));
    PAREX_CUDA_RETURN_IF_ERROR(LaunchSum<T>(data.data() + start, chunk,
                                            /*accumulate=*/start > 0, out_data,
                                            n, cuda->stream()));
  }
  return Status::Ok();
}

}  // namespace

void RegisterCudaReduceKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "reduce_sum", ReduceSumKernel, float, double);
  PAREX_CUDA_KERNEL(r, "reduce_mean", ReduceMeanKernel, float, double);
  PAREX_CUDA_KERNEL(r, "reduce_sum_grad", ReduceSumGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "reduce_mean_grad", ReduceMeanGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "mean", MeanKernel, float, double);
  PAREX_CUDA_KERNEL(r, "sum", SumKernel, float, double);
}

}  // namespace parex
