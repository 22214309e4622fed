// elementwise_{add,sub,mul,div,max,min}_grad on CUDA, with the CPU kernels'
// formulas (kernels/cpu/elementwise_kernels.cc). X and Y line up along
// Out's dims as the elementwise ops' rule says (ElementwiseBroadcast in
// graph/ir/spec/broadcast_spec.h: numpy's at axis -1, Fluid's otherwise); each
// requested gradient is Out-shaped contributions (train_launchers.h), summed
// over the dims where its operand repeats (PlanReduce) into the operand's
// shape. The contributions of a repeated operand go to a scratch tensor the op
// keeps across runs, so a steady step allocates nothing and no other stream can
// be handed that memory while the reduction still reads it.
#include "graph/ir/spec/broadcast_spec.h"
#include "kernels/cuda/cuda_kernel_util.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/kernel_plans.h"
#include "kernels/cuda/reduce_run.h"
#include "kernels/cuda/train_launchers.h"

namespace parex {
namespace {

struct GradScratch : KernelState {
  Tensor contrib[2];  // X's, Y's
};

// An optional input: null when the op does not bind it.
template <typename T>
StatusOr<const Tensor*> OptionalInput(const KernelContext& ctx,
                                      std::string_view slot) {
  if (ctx.Input(slot) == nullptr) return static_cast<const Tensor*>(nullptr);
  return CudaInput(ctx, slot, DTypeOf<T>());
}

// Element strides of an operand of padded extents `dims` along Out's dims
// (0 where it repeats).
void StridesOf(const Dims& dims, const Dims& out, int64_t* strides) {
  int64_t stride = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    strides[d] = dims[d] == 1 && out[d] != 1 ? 0 : stride;
    stride *= dims[d];
  }
}

template <typename T>
Status BinaryGradKernel(KernelContext& ctx, BinaryGrad op) {
  PAREX_ASSIGN_OR_RETURN(CudaDeviceContext * cuda, CudaContextOf(ctx));
  PAREX_ASSIGN_OR_RETURN(const Tensor* dout,
                         CudaInput(ctx, "Out@GRAD", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* y, CudaInput(ctx, "Y", DTypeOf<T>()));
  PAREX_ASSIGN_OR_RETURN(const Tensor* x, OptionalInput<T>(ctx, "X"));
  PAREX_ASSIGN_OR_RETURN(const Tensor* out, OptionalInput<T>(ctx, "Out"));
  const bool needs_x = op == BinaryGrad::kMul || op == BinaryGrad::kMax ||
                       op == BinaryGrad::kMin;
  if (needs_x && x == nullptr) return ctx.Error("the gradient needs input X");
  if (op == BinaryGrad::kDiv && ctx.Output("Y@GRAD") != nullptr &&
      out == nullptr) {
    return ctx.Error("Y@GRAD needs input Out");
  }
  PAREX_ASSIGN_OR_RETURN(int axis, AttrOr<int>(ctx, "axis", -1));
  const Dims x_dims = x != nullptr ? x->dims() : dout->dims();
  StatusOr<BroadcastSpec> spec =
      ElementwiseBroadcastSpec(x_dims, y->dims(), axis);
  if (!spec.ok()) return ctx.Error(spec.status().message());
  if (Numel(spec->out) != dout->numel() ||
      (out != nullptr && out->numel() != dout->numel())) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " is not the broadcast of X " + DimsToString(x_dims) +
                     " and Y " + DimsToString(y->dims()));
  }
  GradShape shape;
  shape.rank = static_cast<int>(spec->out.size());
  if (shape.rank > kMaxGradRank) {
    return Unimplemented(ctx.op().Label() + ": rank " +
                         std::to_string(shape.rank) + " above " +
                         std::to_string(kMaxGradRank) + " on CUDA");
  }
  for (int d = 0; d < shape.rank; ++d) shape.extents[d] = spec->out[d];
  StridesOf(spec->x, spec->out, shape.x_strides);
  StridesOf(spec->y, spec->out, shape.y_strides);
  const char* slots[2] = {"X@GRAD", "Y@GRAD"};
  const Dims* padded[2] = {&spec->x, &spec->y};
  const Dims operand[2] = {x_dims, y->dims()};
  for (int w = 0; w < 2; ++w) {
    if (ctx.Output(slots[w]) == nullptr) continue;
    PAREX_ASSIGN_OR_RETURN(Tensor * grad,
                           CudaOutput(ctx, slots[w], DTypeOf<T>(), operand[w]));
    std::vector<int> repeated;
    for (int d = 0; d < shape.rank; ++d) {
      if ((*padded[w])[d] == 1 && spec->out[d] != 1) repeated.push_back(d);
    }
    T* target = grad->data<T>();
    Tensor* scratch = nullptr;
    if (!repeated.empty()) {
      scratch = &ctx.State<GradScratch>()->contrib[w];
      PAREX_RETURN_IF_ERROR(
          scratch->TryAllocate(DTypeOf<T>(), spec->out, ctx.place()));
      target = scratch->data<T>();
    }
    PAREX_CUDA_RETURN_IF_ERROR(LaunchBinaryGradContrib<T>(
        op, w == 1, shape, x ? x->data<T>() : nullptr, y->data<T>(),
        out ? out->data<T>() : nullptr, dout->data<T>(), target,
        cuda->stream()));
    if (scratch == nullptr) continue;
    StatusOr<ReducePlan> plan = PlanReduce(spec->out, repeated, true, false);
    if (!plan.ok()) return plan.status().WithContext(ctx.op().Label());
    if (plan->out_numel != grad->numel()) {
      return ctx.Error(std::string(slots[w]) + " " +
                       DimsToString(grad->dims()) + " is not the sum of " +
                       DimsToString(spec->out) + " over its repeated dims");
    }
    PAREX_RETURN_IF_ERROR(RunReducePlan<T>(
        *plan, scratch->data<T>(), grad->data<T>(), false, cuda->stream()));
  }
  return Status::Ok();
}

template <typename T>
Status AddGradKernel(KernelContext& ctx) {
  return BinaryGradKernel<T>(ctx, BinaryGrad::kAdd);
}
template <typename T>
Status SubGradKernel(KernelContext& ctx) {
  return BinaryGradKernel<T>(ctx, BinaryGrad::kSub);
}
template <typename T>
Status MulGradKernel(KernelContext& ctx) {
  return BinaryGradKernel<T>(ctx, BinaryGrad::kMul);
}
template <typename T>
Status DivGradKernel(KernelContext& ctx) {
  return BinaryGradKernel<T>(ctx, BinaryGrad::kDiv);
}
template <typename T>
Status MaxGradKernel(KernelContext& ctx) {
  return BinaryGradKernel<T>(ctx, BinaryGrad::kMax);
}
template <typename T>
Status MinGradKernel(KernelContext& ctx) {
  return BinaryGradKernel<T>(ctx, BinaryGrad::kMin);
}

}  // namespace

void RegisterCudaElementwiseGradKernels(KernelRegistry* r) {
  PAREX_CUDA_KERNEL(r, "elementwise_add_grad", AddGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "elementwise_sub_grad", SubGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "elementwise_mul_grad", MulGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "elementwise_div_grad", DivGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "elementwise_max_grad", MaxGradKernel, float, double);
  PAREX_CUDA_KERNEL(r, "elementwise_min_grad", MinGradKernel, float, double);
}

}  // namespace parex
