// reshape2, transpose2 and their gradients on CUDA, as the CPU kernels
// (kernels/cpu/shape_kernels.cc; semantics: graph/ir/ops/shape_ops.cc).
//
// reshape2 (and reshape2_grad) copy device to device on the stream rather
// than share the buffer, for the CPU kernel's reason: buffers are kept from
// step to step, so a shared one would let the next step's Out write into X.
// XShape ([0] + X's dims) holds no elements; the kernels leave it to shape
// inference, as the CPU kernels do.
// transpose2: Out[i_0, ..., i_r-1] = X[j] with j's index along dim axis[d]
// equal to i_d; the gradient permutes Out@GRAD back with the inverse.
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/transformer_launchers.h"

namespace parex {
namespace {

template <typename T>
Status CopyOnStream(const CudaDeviceContext& cuda, const Tensor& from,
                    Tensor* to) {
  if (from.numel() == 0 || from.raw_data() == to->raw_data()) {
    return Status::Ok();
  }
  PAREX_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(to->raw_data(), from.raw_data(), from.bytes(),
                      cudaMemcpyDeviceToDevice, cuda.stream()));
  return Status::Ok();
}

template <typename T>
Status Reshape2Kernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  // Shape inference gave Out its dims; only the element count is checked.
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, "Out", DTypeOf<T>(), x->dims()));
  return CopyOnStream<T>(*cuda, *x, out);
}

template <typename T>
Status Reshape2GradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  // X's dims: XShape's past its leading 0.
  Dims dims = dout->dims();
  if (const Tensor* xshape = ctx.Input("XShape");
      xshape != nullptr && xshape->rank() > 0) {
    dims.assign(xshape->dims().begin() + 1, xshape->dims().end());
  }
  PAREX_ASSIGN_OR_RETURN(Tensor * dx,
                         CudaOutput(ctx, "X@GRAD", DTypeOf<T>(), dims));
  if (dx->numel() != dout->numel()) {
    return ctx.Error("X@GRAD " + DimsToString(dx->dims()) + " and Out@GRAD " +
                     DimsToString(dout->dims()) + " differ in size");
  }
  return CopyOnStream<T>(*cuda, *dout, dx);
}

// Out = `in` permuted by `axis` (a permutation of in's dims, checked here).
template <typename T>
Status Permute(KernelContext& ctx, const char* in_slot, const char* out_slot,
               const std::vector<int>& axis) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* in,
                         CudaInput(ctx, in_slot, DTypeOf<T>()));
  const int rank = in->rank();
  std::vector<bool> seen(rank, false);
  bool ok = static_cast<int>(axis.size()) == rank;
  for (size_t d = 0; ok && d < axis.size(); ++d) {
    ok = axis[d] >= 0 && axis[d] < rank && !seen[axis[d]];
    if (ok) seen[axis[d]] = true;
  }
  if (!ok) {
    return ctx.Error("axis " + DimsToString(Dims(axis.begin(), axis.end())) +
                     " is not a permutation of the dims of " + in_slot + " " +
                     DimsToString(in->dims()));
  }
  if (rank > kMaxGatherRank) {
    return Unimplemented(ctx.op().Label() + ": rank " + std::to_string(rank) +
                         " above " + std::to_string(kMaxGatherRank) +
                         " on CUDA");
  }
  GatherShape shape;
  shape.rank = rank;
  std::vector<int64_t> in_stride(rank, 1);
  for (int d = rank - 2; d >= 0; --d) {
    in_stride[d] = in_stride[d + 1] * in->dim(d + 1);
  }
  Dims out_dims(rank);
  for (int d = 0; d < rank; ++d) {
    out_dims[d] = in->dim(axis[d]);
    shape.extents[d] = out_dims[d];
    shape.src_strides[d] = in_stride[axis[d]];
  }
  PAREX_ASSIGN_OR_RETURN(Tensor * out,
                         CudaOutput(ctx, out_slot, DTypeOf<T>(), out_dims));
  if (out->raw_data() == in->raw_data() && in->numel() > 0) {
    return ctx.Error(std::string(out_slot) + " may not be " + in_slot);
  }
  PAREX_CUDA_RETURN_IF_ERROR(LaunchGather<T>(in->data<T>(), out->data<T>(),
                                             shape, in->numel(), false, T(1),
                                             cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status Transpose2Kernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(std::vector<int> axis,
                         AttrOr<std::vector<int>>(ctx, "axis", {}));
  return Permute<T>(ctx, "X", "Out", axis);
}

template <typename T>
Status Transpose2GradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(std::vector<int> axis,
                         AttrOr<std::vector<int>>(ctx, "axis", {}));
  std::vector<int> inverse(axis.size(), -1);
  for (size_t i = 0; i < axis.size(); ++i) {
    const int a = axis[i];
    if (a < 0 || a >= static_cast<int>(axis.size()) || inverse[a] != -1) {
      return ctx.Error("axis " + DimsToString(Dims(axis.begin(), axis.end())) +
                       " is not a permutation");
    }
    inverse[a] = static_cast<int>(i);
  }
  return Permute<T>(ctx, "Out@GRAD", "X@GRAD", inverse);
}

}  // namespace

void RegisterCudaShapeKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "reshape2", Reshape2Kernel, float, double);
  PAREX_CUDA_KERNEL(r, "reshape2_grad", Reshape2GradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "transpose2", Transpose2Kernel, float, double);
  PAREX_CUDA_KERNEL(r, "transpose2_grad", Transpose2GradKernel, float, double);
}

}  // namespace parex
