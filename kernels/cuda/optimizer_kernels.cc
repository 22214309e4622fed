// sgd, momentum and adam on CUDA over dense gradients, with the CPU kernels'
// formulas (kernels/cpu/optimizer_kernels.cc). The learning rate and beta
// powers stay on the device (train_launchers.h). GradAddends (Reduce mode's
// optimizer slices) are summed onto Grad in order, at most kMaxGradAddends.
// A sparse gradient (SelectedRows) is not taken yet: an error naming the op.
// Unlike the CPU kernel, adam does not refuse Beta1Pow == 1 (checking would
// copy it to the host every step); it then divides by zero.
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/train_launchers.h"

namespace parex {
namespace {

// Input `slot` as a one-element fp32 or fp64 tensor on the device.
StatusOr<DeviceScalar> ScalarInput(const KernelContext& ctx,
                                   std::string_view slot) {
  const Tensor* t = ctx.Input(slot);
  if (t == nullptr) {
    return ctx.Error("input '" + std::string(slot) + "' holds no tensor");
  }
  const bool is_double = t->dtype() == DType::kFP64;
  PAREX_ASSIGN_OR_RETURN(
      t, CudaInput(ctx, slot, is_double ? DType::kFP64 : DType::kFP32));
  if (t->numel() != 1) {
    return ctx.Error("input '" + std::string(slot) + "' is " +
                     DimsToString(t->dims()) + ", not one value");
  }
  return DeviceScalar{t->raw_data(), is_double};
}

// An optional scalar input: empty (data null) when the op does not bind it.
StatusOr<DeviceScalar> OptionalScalar(const KernelContext& ctx,
                                      std::string_view slot) {
  if (ctx.Input(slot) == nullptr) return DeviceScalar{};
  return ScalarInput(ctx, slot);
}

// Param and Grad (and `same` other inputs) of one element count; the
// addends.
template <typename T>
StatusOr<GradAddends<T>> DenseInputs(const KernelContext& ctx,
                                     std::initializer_list<const char*> same,
                                     const Tensor** param,
                                     const Tensor** grad) {
  PAREX_ASSIGN_OR_RETURN(*param, CudaInput(ctx, "Param", DTypeOf<T>()));
  StatusOr<const Tensor*> dense = CudaInput(ctx, "Grad", DTypeOf<T>());
  if (!dense.ok()) {
    return Unimplemented(ctx.op().Label() +
                         ": Grad must be a dense tensor on the device (sparse "
                         "gradients are not implemented on CUDA): " +
                         dense.status().message());
  }
  *grad = *dense;
  const int64_t n = (*param)->numel();
  std::vector<const char*> slots = {"Grad"};
  slots.insert(slots.end(), same.begin(), same.end());
  for (const char* slot : slots) {
    PAREX_ASSIGN_OR_RETURN(const Tensor* t, CudaInput(ctx, slot, DTypeOf<T>()));
    if (t->numel() != n) {
      return ctx.Error(std::string(slot) + " " + DimsToString(t->dims()) +
                       " does not match Param " +
                       DimsToString((*param)->dims()));
    }
  }
  GradAddends<T> addends;
  const int count = ctx.InputCount("GradAddends");
  if (count > kMaxGradAddends) {
    return Unimplemented(ctx.op().Label() + ": " + std::to_string(count) +
                         " GradAddends (at most " +
                         std::to_string(kMaxGradAddends) + " on CUDA)");
  }
  for (int i = 0; i < count; ++i) {
    PAREX_ASSIGN_OR_RETURN(const Tensor* t,
                           CudaInput(ctx, "GradAddends", DTypeOf<T>(), i));
    if (t->numel() != n) {
      return ctx.Error("GradAddends " + DimsToString(t->dims()) +
                       " does not match Param " +
                       DimsToString((*param)->dims()));
    }
    addends.data[addends.count++] = t->data<T>();
  }
  return addends;
}

template <typename T>
Status SgdKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  const Tensor *param = nullptr, *grad = nullptr;
  PAREX_ASSIGN_OR_RETURN(GradAddends<T> addends,
                         DenseInputs<T>(ctx, {}, &param, &grad));
  PAREX_ASSIGN_OR_RETURN(DeviceScalar lr, ScalarInput(ctx, "LearningRate"));
  PAREX_ASSIGN_OR_RETURN(
      Tensor * out, CudaOutput(ctx, "ParamOut", DTypeOf<T>(), param->dims()));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchSgd<T>(param->data<T>(), grad->data<T>(),
                                          addends, lr, out->data<T>(),
                                          param->numel(), cuda->stream()));
  return Status::Ok();
}

template <typename T>
Status MomentumKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  const Tensor *param = nullptr, *grad = nullptr;
  PAREX_ASSIGN_OR_RETURN(GradAddends<T> addends,
                         DenseInputs<T>(ctx, {"Velocity"}, &param, &grad));
  PAREX_ASSIGN_OR_RETURN(DeviceScalar lr, ScalarInput(ctx, "LearningRate"));
  MomentumArgs args;
  PAREX_ASSIGN_OR_RETURN(std::string method,
                         AttrOr<std::string>(ctx, "regularization_method", ""));
  if (!method.empty() && method != "l2_decay") {
    return ctx.Error("regularization_method '" + method + "' is not supported");
  }
  PAREX_ASSIGN_OR_RETURN(float mu, AttrOr<float>(ctx, "mu", 0.0f));
  PAREX_ASSIGN_OR_RETURN(float rescale, AttrOr<float>(ctx, "rescale_grad", 1));
  PAREX_ASSIGN_OR_RETURN(float coeff,
                         AttrOr<float>(ctx, "regularization_coeff", 0.0f));
  PAREX_ASSIGN_OR_RETURN(args.nesterov,
                         AttrOr<bool>(ctx, "use_nesterov", false));
  args.mu = mu;
  args.rescale = rescale;
  args.l2 = method == "l2_decay" ? coeff : 0.0f;
  const Dims& dims = param->dims();
  PAREX_ASSIGN_OR_RETURN(Tensor * p_out,
                         CudaOutput(ctx, "ParamOut", DTypeOf<T>(), dims));
  PAREX_ASSIGN_OR_RETURN(Tensor * v_out,
                         CudaOutput(ctx, "VelocityOut", DTypeOf<T>(), dims));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchMomentum<T>(
      param->data<T>(), grad->data<T>(), addends,
      ctx.Input("Velocity")->data<T>(), lr, args, p_out->data<T>(),
      v_out->data<T>(), param->numel(), cuda->stream()));
  return Status::Ok();
}

// The beta-power outputs adam writes (none with use_global_beta_pow).
StatusOr<std::pair<Tensor*, Tensor*>> BetaPowOutputs(const KernelContext& ctx,
                                                     const AdamScalars& s) {
  PAREX_ASSIGN_OR_RETURN(bool global,
                         AttrOr<bool>(ctx, "use_global_beta_pow", false));
  if (global) return std::pair<Tensor*, Tensor*>{nullptr, nullptr};
  Tensor* outs[2] = {nullptr, nullptr};
  const char* slots[2] = {"Beta1PowOut", "Beta2PowOut"};
  const DeviceScalar inputs[2] = {s.beta1_pow, s.beta2_pow};
  for (int i = 0; i < 2; ++i) {
    if (ctx.Output(slots[i]) == nullptr) continue;
    PAREX_ASSIGN_OR_RETURN(
        outs[i],
        CudaOutput(ctx, slots[i],
                   inputs[i].is_double ? DType::kFP64 : DType::kFP32, Dims{1}));
  }
  return std::pair<Tensor*, Tensor*>{outs[0], outs[1]};
}

template <typename T>
Status AdamKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  const Tensor *param = nullptr, *grad = nullptr;
  PAREX_ASSIGN_OR_RETURN(
      GradAddends<T> addends,
      DenseInputs<T>(ctx, {"Moment1", "Moment2"}, &param, &grad));
  AdamScalars s;
  PAREX_ASSIGN_OR_RETURN(s.lr, ScalarInput(ctx, "LearningRate"));
  PAREX_ASSIGN_OR_RETURN(s.beta1_pow, ScalarInput(ctx, "Beta1Pow"));
  PAREX_ASSIGN_OR_RETURN(s.beta2_pow, ScalarInput(ctx, "Beta2Pow"));
  PAREX_ASSIGN_OR_RETURN(s.beta1_tensor, OptionalScalar(ctx, "Beta1Tensor"));
  PAREX_ASSIGN_OR_RETURN(s.beta2_tensor, OptionalScalar(ctx, "Beta2Tensor"));
  PAREX_ASSIGN_OR_RETURN(s.epsilon_tensor,
                         OptionalScalar(ctx, "EpsilonTensor"));
  PAREX_ASSIGN_OR_RETURN(float beta1, AttrOr<float>(ctx, "beta1", 0.9f));
  PAREX_ASSIGN_OR_RETURN(float beta2, AttrOr<float>(ctx, "beta2", 0.999f));
  PAREX_ASSIGN_OR_RETURN(float epsilon, AttrOr<float>(ctx, "epsilon", 1e-8f));
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.epsilon = epsilon;
  const Dims& dims = param->dims();
  PAREX_ASSIGN_OR_RETURN(Tensor * p_out,
                         CudaOutput(ctx, "ParamOut", DTypeOf<T>(), dims));
  PAREX_ASSIGN_OR_RETURN(Tensor * m1_out,
                         CudaOutput(ctx, "Moment1Out", DTypeOf<T>(), dims));
  PAREX_ASSIGN_OR_RETURN(Tensor * m2_out,
                         CudaOutput(ctx, "Moment2Out", DTypeOf<T>(), dims));
  PAREX_ASSIGN_OR_RETURN(auto pow_outs, BetaPowOutputs(ctx, s));
  PAREX_CUDA_RETURN_IF_ERROR(LaunchAdam<T>(
      param->data<T>(), grad->data<T>(), addends,
      ctx.Input("Moment1")->data<T>(), ctx.Input("Moment2")->data<T>(), s,
      p_out->data<T>(), m1_out->data<T>(), m2_out->data<T>(), param->numel(),
      cuda->stream()));
  auto [b1_out, b2_out] = pow_outs;
  PAREX_CUDA_RETURN_IF_ERROR(LaunchAdamBetaPows(
      s, b1_out ? b1_out->raw_data() : nullptr, s.beta1_pow.is_double,
      b2_out ? b2_out->raw_data() : nullptr, s.beta2_pow.is_double,
      cuda->stream()));
  return Status::Ok();
}

}  // namespace

void RegisterCudaOptimizerKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "sgd", SgdKernel, float, double);
  PAREX_CUDA_KERNEL(r, "momentum", MomentumKernel, float, double);
  PAREX_CUDA_KERNEL(r, "adam", AdamKernel, float, double);
}

}  // namespace parex
