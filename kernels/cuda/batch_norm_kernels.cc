// batch_norm and batch_norm_grad on CUDA, NCHW (rank 2..5) and NHWC, with
// the CPU kernel's semantics (kernels/cpu/batch_norm_kernel.cc): parex's own
// device kernels (batch_norm_launchers.h), not cuDNN's, whose saved
// statistics and running variance (unbiased) follow other conventions.
// MeanOut / VarianceOut may be the Mean / Variance variables (in place).
#include <algorithm>
#include <string>

#include "kernels/cuda/batch_norm_launchers.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"

namespace parex {
namespace {

StatusOr<BnView> ViewOf(const KernelContext& ctx, const Dims& x) {
  if (x.size() < 2 || x.size() > 5) {
    return ctx.Error("X " + DimsToString(x) + " must have rank 2 to 5");
  }
  PAREX_ASSIGN_OR_RETURN(std::string layout,
                         AttrOr<std::string>(ctx, "data_layout", "NCHW"));
  BnView v;
  if (layout == "NHWC") {
    v.channels = x.back();
    v.outer = v.channels == 0 ? 0 : Numel(x) / v.channels;
    v.inner = 1;
  } else if (layout == "NCHW" || layout == "AnyLayout") {
    v.outer = x[0];
    v.channels = x[1];
    v.inner = 1;
    for (size_t i = 2; i < x.size(); ++i) v.inner *= x[i];
  } else {
    return ctx.Error("unknown data_layout '" + layout + "'");
  }
  return v;
}

// Input `slot` as a per-channel vector of `channels` values.
template <typename T>
StatusOr<const T*> ChannelInput(const KernelContext& ctx, const char* slot,
                                int64_t channels) {
  PAREX_ASSIGN_OR_RETURN(const Tensor* t, CudaInput(ctx, slot, DTypeOf<T>()));
  if (t->numel() != channels) {
    return ctx.Error(std::string(slot) + " " + DimsToString(t->dims()) +
                     " is not one value per channel (" +
                     std::to_string(channels) + ")");
  }
  return t->data<T>();
}

template <typename T>
StatusOr<T*> ChannelOutput(const KernelContext& ctx, const char* slot,
                           int64_t channels) {
  PAREX_ASSIGN_OR_RETURN(Tensor * t,
                         CudaOutput(ctx, slot, DTypeOf<T>(), Dims{channels}));
  return t->data<T>();
}

// MomentumTensor, when bound: a one-element fp32 or fp64 tensor read on the
// device.
StatusOr<DeviceScalar> MomentumTensorOf(const KernelContext& ctx) {
  DeviceScalar scalar;
  const Tensor* m = ctx.Input("MomentumTensor");
  if (m == nullptr) return scalar;
  if (m->dtype() != DType::kFP32 && m->dtype() != DType::kFP64) {
    return ctx.Error("MomentumTensor must be fp32 or fp64");
  }
  PAREX_ASSIGN_OR_RETURN(const Tensor* t,
                         CudaInput(ctx, "MomentumTensor", m->dtype()));
  if (t->numel() != 1) return ctx.Error("MomentumTensor must hold one value");
  scalar.data = t->raw_data();
  scalar.is_double = t->dtype() == DType::kFP64;
  return scalar;
}

// The op's device scratch for the launchers' partial sums, grown to the
// largest shape seen and kept: a steady step allocates nothing.
class BnScratch : public KernelState {
 public:
  StatusOr<double*> For(const KernelContext& ctx, const BnView& v) {
    const int64_t n = std::max<int64_t>(1, BnScratchDoubles(v));
    PAREX_ASSIGN_OR_RETURN(void* data, KeptDeviceBuffer(&buffer_, ctx.place(),
                                                        n * sizeof(double)));
    return static_cast<double*>(data);
  }

 private:
  Tensor buffer_;
};

template <typename T>
Status BatchNormKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(BnView v, ViewOf(ctx, x->dims()));
  PAREX_ASSIGN_OR_RETURN(float epsilon, AttrOr<float>(ctx, "epsilon", 1e-5f));
  PAREX_ASSIGN_OR_RETURN(float momentum, AttrOr<float>(ctx, "momentum", 0.9f));
  PAREX_ASSIGN_OR_RETURN(bool is_test, AttrOr<bool>(ctx, "is_test", false));
  PAREX_ASSIGN_OR_RETURN(bool trainable,
                         AttrOr<bool>(ctx, "trainable_statistics", false));
  PAREX_ASSIGN_OR_RETURN(bool use_global,
                         AttrOr<bool>(ctx, "use_global_stats", false));
  const bool global = (is_test && !trainable) || use_global;
  PAREX_ASSIGN_OR_RETURN(DeviceScalar momentum_tensor, MomentumTensorOf(ctx));
  BnForwardTensors<T> t{};
  t.x = x->data<T>();
  const int64_t c = v.channels;
  PAREX_ASSIGN_OR_RETURN(t.scale, ChannelInput<T>(ctx, "Scale", c));
  PAREX_ASSIGN_OR_RETURN(t.bias, ChannelInput<T>(ctx, "Bias", c));
  PAREX_ASSIGN_OR_RETURN(t.mean, ChannelInput<T>(ctx, "Mean", c));
  PAREX_ASSIGN_OR_RETURN(t.variance, ChannelInput<T>(ctx, "Variance", c));
  PAREX_ASSIGN_OR_RETURN(Tensor * y,
                         CudaOutput(ctx, "Y", DTypeOf<T>(), x->dims()));
  t.y = y->data<T>();
  PAREX_ASSIGN_OR_RETURN(t.mean_out, ChannelOutput<T>(ctx, "MeanOut", c));
  PAREX_ASSIGN_OR_RETURN(t.variance_out,
                         ChannelOutput<T>(ctx, "VarianceOut", c));
  PAREX_ASSIGN_OR_RETURN(t.saved_mean, ChannelOutput<T>(ctx, "SavedMean", c));
  PAREX_ASSIGN_OR_RETURN(t.saved_inv_std,
                         ChannelOutput<T>(ctx, "SavedVariance", c));
  PAREX_ASSIGN_OR_RETURN(double* scratch, ctx.State<BnScratch>()->For(ctx, v));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchBatchNorm<T>(v, t, global, momentum,
                                                momentum_tensor, epsilon,
                                                scratch, cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status BatchNormGradKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, CudaInput(ctx, "X", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dy,
                         CudaInput(ctx, "Y@GRAD", DTypeOf<T>()));
  if (dy->dims() != x->dims()) {
    return ctx.Error("Y@GRAD " + DimsToString(dy->dims()) +
                     " does not match X " + DimsToString(x->dims()));
  }
  PAREX_ASSIGN_OR_RETURN(BnView v, ViewOf(ctx, x->dims()));
  PAREX_ASSIGN_OR_RETURN(float epsilon, AttrOr<float>(ctx, "epsilon", 1e-5f));
  PAREX_ASSIGN_OR_RETURN(bool is_test, AttrOr<bool>(ctx, "is_test", false));
  PAREX_ASSIGN_OR_RETURN(bool use_global,
                         AttrOr<bool>(ctx, "use_global_stats", false));
  const bool global = is_test || use_global;
  const int64_t c = v.channels;
  BnGradTensors<T> t{};
  t.x = x->data<T>();
  t.dy = dy->data<T>();
  PAREX_ASSIGN_OR_RETURN(t.scale, ChannelInput<T>(ctx, "Scale", c));
  if (global) {
    PAREX_ASSIGN_OR_RETURN(t.mean, ChannelInput<T>(ctx, "Mean", c));
    PAREX_ASSIGN_OR_RETURN(t.variance, ChannelInput<T>(ctx, "Variance", c));
  } else {
    PAREX_ASSIGN_OR_RETURN(t.saved_mean, ChannelInput<T>(ctx, "SavedMean", c));
    PAREX_ASSIGN_OR_RETURN(t.saved_inv_std,
                           ChannelInput<T>(ctx, "SavedVariance", c));
  }
  PAREX_ASSIGN_OR_RETURN(t.dx, CudaGradOutput<T>(ctx, "X@GRAD", x->dims()));
  PAREX_ASSIGN_OR_RETURN(t.dscale,
                         CudaGradOutput<T>(ctx, "Scale@GRAD", Dims{c}));
  PAREX_ASSIGN_OR_RETURN(t.dbias, CudaGradOutput<T>(ctx, "Bias@GRAD", Dims{c}));
  PAREX_ASSIGN_OR_RETURN(double* scratch, ctx.State<BnScratch>()->For(ctx, v));
  PAREX_CUDA_RETURN_IF_ERROR(
      LaunchBatchNormGrad<T>(v, t, global, epsilon, scratch, cuda->stream()));
  return Status::Ok();
}

}  // namespace

void RegisterCudaBatchNormKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "batch_norm", BatchNormKernel, float, double);
  PAREX_CUDA_KERNEL(r, "batch_norm_grad", BatchNormGradKernel, float, double);
}

}  // namespace parex
