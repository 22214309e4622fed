// What every element-wise activation kernel shares (activation_kernels.cc,
// unary_math_kernels.cc): the forward and gradient kernels of a functor F
// and their registration. F::Forward(x, a) is Out; F::kSource names the
// forward value its gradient op reads ("Out", "X", or "Out@GRAD" for a
// gradient of zero) and F::Backward(that value, dOut, a) is dX; `a` holds
// the op's attributes, read once per run by F::Attrs::Read.
#pragma once

#include <string>

#include "kernels/cpu/cpu_kernels.h"

namespace parex::activation {

struct NoAttrs {
  static StatusOr<NoAttrs> Read(const KernelContext&) { return NoAttrs{}; }
};

template <typename T, typename F>
Status UnaryKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  PAREX_ASSIGN_OR_RETURN(const typename F::Attrs attrs, F::Attrs::Read(ctx));
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const T* xd = x->data<T>();
  T* od = out->data<T>();
#pragma GCC ivdep  // in place or disjoint: element i touches index i only
  for (int64_t i = 0, i_end = x->numel(); i < i_end; ++i)
    od[i] = F::Forward(xd[i], attrs);
  return Status::Ok();
}

// F::kSource is the forward value the gradient reads: "Out" or "X".
template <typename T, typename F>
Status UnaryGradKernel(KernelContext& ctx) {
  const char* source = F::kSource;
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({source, "Out@GRAD"}));
  PAREX_ASSIGN_OR_RETURN(const typename F::Attrs attrs, F::Attrs::Read(ctx));
  const Tensor* a = ctx.Input(source);
  const Tensor* dout = ctx.Input("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  if (a->numel() != dout->numel()) {
    return ctx.Error(std::string("Out@GRAD has ") +
                     std::to_string(dout->numel()) + " elements, " + source +
                     " has " + std::to_string(a->numel()));
  }
  const T* ad = a->data<T>();
  const T* gd = dout->data<T>();
  T* dxd = dx->data<T>();
#pragma GCC ivdep  // in place or disjoint: element i touches index i only
  for (int64_t i = 0, i_end = a->numel(); i < i_end; ++i) {
    dxd[i] = F::Backward(ad[i], gd[i], attrs);
  }
  return Status::Ok();
}

// Registers UnaryKernel<T, F> as `type` and UnaryGradKernel<T, F> as
// `type`_grad, for float and double.
template <typename F>
void RegisterActivation(KernelRegistry* r, const std::string& type) {
  RegisterCpuKernel<float, double>(r, type, [](auto tag) {
    return &UnaryKernel<typename decltype(tag)::type, F>;
  });
  RegisterCpuKernel<float, double>(r, type + "_grad", [](auto tag) {
    return &UnaryGradKernel<typename decltype(tag)::type, F>;
  });
}

}  // namespace parex::activation
