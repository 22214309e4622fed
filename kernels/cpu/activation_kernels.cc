// relu, sigmoid, tanh, square and their gradients on CPU. Outputs may be the
// same variables as inputs (in-place activations): each element is read
// before the element at the same index is written.
#include <cmath>
#include <initializer_list>
#include <string>

#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

// An activation F: Forward(x) is Out; kSource names the forward value its
// gradient op reads ("Out", or "X" for square) and Backward(that value,
// dOut) is dX.
struct Relu {
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x) {
    return x > T(0) ? x : T(0);
  }
  template <typename T>
  static T Backward(T out, T dout) {
    return out > T(0) ? dout : T(0);
  }
};

struct Sigmoid {
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x) {
    return T(1) / (T(1) + std::exp(-x));
  }
  template <typename T>
  static T Backward(T out, T dout) {
    return dout * out * (T(1) - out);
  }
};

struct Tanh {
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x) {
    return std::tanh(x);
  }
  template <typename T>
  static T Backward(T out, T dout) {
    return dout * (T(1) - out * out);
  }
};

struct Square {
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x) {
    return x * x;
  }
  template <typename T>
  static T Backward(T x, T dout) {
    return dout * T(2) * x;
  }
};

template <typename T, typename F>
Status UnaryKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  const T* xd = x->data<T>();
  T* od = out->data<T>();
#pragma GCC ivdep  // in place or disjoint: element i touches index i only
  for (int64_t i = 0, i_end = x->numel(); i < i_end; ++i) od[i] = F::Forward(xd[i]);
  return Status::Ok();
}

// F::kSource is the forward value the gradient reads: "Out" or "X".
template <typename T, typename F>
Status UnaryGradKernel(KernelContext& ctx) {
  const char* source = F::kSource;
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({source, "Out@GRAD"}));
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
  for (int64_t i = 0, i_end = a->numel(); i < i_end; ++i) dxd[i] = F::Backward(ad[i], gd[i]);
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

}  // namespace

void RegisterActivationKernels(KernelRegistry* r) {
  RegisterActivation<Relu>(r, "relu");
  RegisterActivation<Sigmoid>(r, "sigmoid");
  RegisterActivation<Tanh>(r, "tanh");
  RegisterActivation<Square>(r, "square");
}

}  // namespace parex
