// top_k, top_k_v2 and accuracy on CUDA, as the CPU kernels compute them
// (kernels/cpu/metric_kernels.cc): top_k along the last dim with ties to
// the lower index, on the device; top_k_v2 on the host (below); accuracy
// from top_k's Indices and int64 labels.
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/train_launchers.h"
#include "kernels/topk_order.h"

namespace parex {
namespace {

template <typename T>
Status TopKKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(int k, AttrOr<int>(ctx, "k", 1));
  const Dims& dims = x->dims();
  const int64_t n = dims.empty() ? 1 : dims.back();
  if (k < 1 || k > n) {
    return ctx.Error("k = " + std::to_string(k) + " is outside [1, " +
                     std::to_string(n) + "]");
  }
  Dims out_dims = dims.empty() ? Dims{1} : dims;
  out_dims.back() = k;
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), out_dims));
  PAREX_ASSIGN_OR_RETURN(Tensor * indices,
                         CudaOutput(ctx, "Indices", DType::kInt64, out_dims));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchTopK<T>(
      x->data<T>(), out->data<T>(), indices->data<int64_t>(),
      x->numel() / std::max<int64_t>(n, 1), n, 1, k, cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status AccuracyKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* indices,
                         CudaInput(ctx, "Indices", DType::kInt64));
  PAREX_ASSIGN_OR_RETURN(const Tensor* label,
                         CudaInput(ctx, "Label", DType::kInt64));
  if (indices->rank() != 2) return ctx.Error("Indices must have rank 2");
  const int64_t rows = indices->dim(0);
  if (label->numel() != rows) {
    return ctx.Error("Label has " + std::to_string(label->numel()) +
                     " rows, Indices " + std::to_string(rows));
  }
  PAREX_ASSIGN_OR_RETURN(Tensor * accuracy,
                         CudaOutput(ctx, "Accuracy", DType::kFP32, Dims{1}));
  PAREX_ASSIGN_OR_RETURN(Tensor * correct,
                         CudaOutput(ctx, "Correct", DType::kInt32, Dims{1}));
  PAREX_ASSIGN_OR_RETURN(Tensor * total,
                         CudaOutput(ctx, "Total", DType::kInt32, Dims{1}));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchAccuracy(
      indices->data<int64_t>(), label->data<int64_t>(), rows, indices->dim(1),
      accuracy->data<float>(), correct->data<int32_t>(), total->data<int32_t>(),
      cuda->stream()));
  return Status::Ok();
}

// top_k_v2 sorts on the host: its ties fall where Paddle's CPU sort leaves
// them (PaddleTopKRow, kernels/topk_order.h), which has no simple device
// equivalent. X comes to the host (the stream's work so far awaited: this
// blocks the stream actor's own thread, never a worker, and keeps the step
// from being captured as a CUDA graph), and Out and Indices go back. The
// host tensors are the op's, kept across runs (a copy from them may still
// be queued when the kernel returns).
struct TopKV2Host : KernelState {
  Tensor x, out, indices;
};

template <typename T>
Status TopKV2Kernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(int axis, AttrOr<int>(ctx, "axis", -1));
  PAREX_ASSIGN_OR_RETURN(int k, AttrOr<int>(ctx, "k", 1));
  PAREX_ASSIGN_OR_RETURN(bool largest, AttrOr<bool>(ctx, "largest", true));
  PAREX_ASSIGN_OR_RETURN(bool sorted, AttrOr<bool>(ctx, "sorted", true));
  const Dims dims = x->dims().empty() ? Dims{1} : x->dims();
  const int rank = static_cast<int>(dims.size());
  if (axis < -rank || axis >= rank) {
    return ctx.Error("axis " + std::to_string(axis) + " is outside X " +
                     DimsToString(dims));
  }
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  for (int d = axis + 1; d < rank; ++d) inner *= dims[d];
  const int64_t n = dims[axis];
  if (k < 1 || k > n) {
    return ctx.Error("k = " + std::to_string(k) + " is outside [1, " +
                     std::to_string(n) + "]");
  }
  Dims out_dims = dims;
  out_dims[axis] = k;
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), out_dims));
  PAREX_ASSIGN_OR_RETURN(Tensor * indices,
                         CudaOutput(ctx, "Indices", DType::kInt64, out_dims));
  TopKV2Host* host = ctx.State<TopKV2Host>();
  PAREX_RETURN_IF_ERROR(host->x.TryAllocate(DTypeOf<T>(), dims));
  PAREX_RETURN_IF_ERROR(host->out.TryAllocate(DTypeOf<T>(), out_dims));
  PAREX_RETURN_IF_ERROR(host->indices.TryAllocate(DType::kInt64, out_dims));
  PAREX_RETURN_IF_ERROR(
      cuda->CopyToHost(host->x.raw_data(), x->raw_data(), x->bytes()));
  PAREX_RETURN_IF_ERROR(cuda->Synchronize());
  const T* xd = host->x.data<T>();
  T* od = host->out.data<T>();
  int64_t* id = host->indices.data<int64_t>();
  std::vector<std::pair<T, int64_t>> pairs;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      pairs.clear();
      for (int64_t j = 0; j < n; ++j) {
        pairs.emplace_back(xd[(o * n + j) * inner + i], j);
      }
      PaddleTopKRow(&pairs, k, largest, sorted);
      for (int64_t m = 0; m < k; ++m) {
        od[(o * k + m) * inner + i] = pairs[m].first;
        id[(o * k + m) * inner + i] = pairs[m].second;
      }
    }
  }
  PAREX_RETURN_IF_ERROR(
      cuda->CopyFromHost(out->raw_data(), host->out.raw_data(), out->bytes()));
  return cuda->CopyFromHost(indices->raw_data(), host->indices.raw_data(),
                            indices->bytes());
}

}  // namespace

void RegisterCudaMetricKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "top_k_v2", TopKV2Kernel, float, double);
  PAREX_CUDA_KERNEL(r, "top_k", TopKKernel, float, double);
  PAREX_CUDA_KERNEL(r, "accuracy", AccuracyKernel, float, double);
}

}  // namespace parex
