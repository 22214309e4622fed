// increment, sqrt, floor, squared_l2_norm and their gradients on CPU
// (schemas: graph/ir/ops/math_ops.cc).
//
// In place: increment's Out is usually X (the step counter), and sqrt/floor
// may write X; every element is read before the element at the same index is
// written.
#include <cmath>
#include <string>

#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

// Out = X + step, X holding one element. Like Fluid, step is cast to T first
// (an integer counter gets a truncated step).
template <typename T>
Status IncrementKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  if (x->numel() != 1) {
    return ctx.Error("X must hold one element, got " + DimsToString(x->dims()));
  }
  const T step = static_cast<T>(ctx.Attr<float>("step"));
  ctx.Output("Out")->data<T>()[0] = x->data<T>()[0] + step;
  return Status::Ok();
}

struct Sqrt {
  template <typename T>
  static T Forward(T x) {
    return std::sqrt(x);
  }
  // dX = dOut / (2 * Out), from Out as Fluid's sqrt_grad.
  template <typename T>
  static T Backward(T out, T dout) {
    return dout * T(0.5) / out;
  }
};

struct Floor {
  template <typename T>
  static T Forward(T x) {
    return std::floor(x);
  }
};

template <typename T, typename F>
Status UnaryKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  const T* xd = x->data<T>();
  T* od = ctx.Output("Out")->data<T>();
  for (int64_t i = 0, i_end = x->numel(); i < i_end; ++i)
    od[i] = F::Forward(xd[i]);
  return Status::Ok();
}

template <typename T>
Status SqrtGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out", "Out@GRAD"}));
  const Tensor* out = ctx.Input("Out");
  const Tensor* dout = ctx.Input("Out@GRAD");
  if (out->numel() != dout->numel()) {
    return ctx.Error("Out@GRAD " + DimsToString(dout->dims()) +
                     " does not match Out " + DimsToString(out->dims()));
  }
  const T* od = out->data<T>();
  const T* gd = dout->data<T>();
  T* dx = ctx.Output("X@GRAD")->data<T>();
  for (int64_t i = 0, i_end = out->numel(); i < i_end; ++i)
    dx[i] = Sqrt::Backward(od[i], gd[i]);
  return Status::Ok();
}

// floor is piecewise constant: X@GRAD is zero (Fluid's ZeroGradFunctor).
template <typename T>
Status FloorGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out@GRAD"}));
  Tensor* dx = ctx.Output("X@GRAD");
  T* dxd = dx->data<T>();
  for (int64_t i = 0, i_end = dx->numel(); i < i_end; ++i) dxd[i] = T(0);
  return Status::Ok();
}

// Out[0] = sum(X^2), accumulated in double.
template <typename T>
Status SquaredL2NormKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  const T* xd = x->data<T>();
  double sum = 0;
  for (int64_t i = 0, i_end = x->numel(); i < i_end; ++i) {
    const double v = xd[i];
    sum += v * v;
  }
  ctx.Output("Out")->data<T>()[0] = static_cast<T>(sum);
  return Status::Ok();
}

// X@GRAD = 2 * Out@GRAD[0] * X.
template <typename T>
Status SquaredL2NormGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Out@GRAD"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* dout = ctx.Input("Out@GRAD");
  if (dout->numel() != 1) {
    return ctx.Error("Out@GRAD must hold one element, got " +
                     DimsToString(dout->dims()));
  }
  const T scale = T(2) * dout->data<T>()[0];
  const T* xd = x->data<T>();
  T* dx = ctx.Output("X@GRAD")->data<T>();
  for (int64_t i = 0, i_end = x->numel(); i < i_end; ++i) dx[i] = scale * xd[i];
  return Status::Ok();
}

}  // namespace

void RegisterMathKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "increment", IncrementKernel, float, double, int32_t,
                   int64_t);
  RegisterCpuKernel<float, double>(r, "sqrt", [](auto tag) {
    return &UnaryKernel<typename decltype(tag)::type, Sqrt>;
  });
  PAREX_CPU_KERNEL(r, "sqrt_grad", SqrtGradKernel, float, double);
  RegisterCpuKernel<float, double>(r, "floor", [](auto tag) {
    return &UnaryKernel<typename decltype(tag)::type, Floor>;
  });
  PAREX_CPU_KERNEL(r, "floor_grad", FloorGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "squared_l2_norm", SquaredL2NormKernel, float, double);
  PAREX_CPU_KERNEL(r, "squared_l2_norm_grad", SquaredL2NormGradKernel, float,
                   double);
}

}  // namespace parex
