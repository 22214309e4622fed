// elementwise_add/sub/mul/div/max/min/pow and their gradients, and
// less_than, on CPU, broadcasting Y into X by Fluid's `axis` rule
// (kernels/cpu/broadcast.h); equal, broadcasting either operand
// (graph/ir/spec/broadcast_spec.h).
//
// Out may be the same variable as X (in-place "x = x + y"), and X@GRAD the
// same as Out@GRAD: every element is read before the element at the same
// index is written.
#include <array>
#include <cmath>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "base/checked_math.h"
#include "graph/ir/spec/broadcast_spec.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

using cpu::BroadcastMap;

// The map pairing `full` (X, or Out@GRAD in grad ops) with Y.
Status BuildYMap(const KernelContext& ctx, const Dims& full, const Dims& y,
                 BroadcastMap* map) {
  if (full.size() > static_cast<size_t>(BroadcastMap::kMaxRank)) {
    return ctx.Error("rank " + std::to_string(full.size()) +
                     " is above the supported " +
                     std::to_string(BroadcastMap::kMaxRank));
  }
  int64_t y_extents[BroadcastMap::kMaxRank];
  if (!cpu::FluidElementwiseExtents(full, y, ctx.Attr<int>("axis"),
                                    y_extents) ||
      !map->Init(full, y_extents)) {
    return ctx.Error("Y " + DimsToString(y) + " cannot be broadcast to " +
                     DimsToString(full) + " at axis " +
                     std::to_string(ctx.Attr<int>("axis")));
  }
  return Status::Ok();
}

struct AddOp {
  template <typename T>
  static T Apply(T x, T y) {
    return x + y;
  }
  // dOut/dX and dOut/dY given x, y, out and dout.
  template <typename T>
  static T DX(T, T, T, T dout) {
    return dout;
  }
  template <typename T>
  static T DY(T, T, T, T dout) {
    return dout;
  }
  static constexpr bool kNeedsX = false;
  static constexpr bool kDxNeedsX = false;
  static constexpr bool kNeedsOut = false;
};

struct SubOp {
  template <typename T>
  static T Apply(T x, T y) {
    return x - y;
  }
  template <typename T>
  static T DX(T, T, T, T dout) {
    return dout;
  }
  template <typename T>
  static T DY(T, T, T, T dout) {
    return -dout;
  }
  static constexpr bool kNeedsX = false;
  static constexpr bool kDxNeedsX = false;
  static constexpr bool kNeedsOut = false;
};

struct MulOp {
  template <typename T>
  static T Apply(T x, T y) {
    return x * y;
  }
  template <typename T>
  static T DX(T, T y, T, T dout) {
    return dout * y;
  }
  template <typename T>
  static T DY(T x, T, T, T dout) {
    return dout * x;
  }
  static constexpr bool kNeedsX = true;
  static constexpr bool kDxNeedsX = false;
  static constexpr bool kNeedsOut = false;
};

// Like Fluid, the gradient reads Out (= X / Y) rather than X.
struct DivOp {
  template <typename T>
  static T Apply(T x, T y) {
    return x / y;
  }
  template <typename T>
  static T DX(T, T y, T, T dout) {
    return dout / y;
  }
  template <typename T>
  static T DY(T, T y, T out, T dout) {
    return -dout * out / y;
  }
  static constexpr bool kNeedsX = false;
  static constexpr bool kDxNeedsX = false;
  static constexpr bool kNeedsOut = true;
};

// Fluid's gradients: X@GRAD where x > y, Y@GRAD where x <= y (ties go to Y).
struct MaxOp {
  template <typename T>
  static T Apply(T x, T y) {
    return x > y ? x : y;
  }
  template <typename T>
  static T DX(T x, T y, T, T dout) {
    return x > y ? dout : T(0);
  }
  template <typename T>
  static T DY(T x, T y, T, T dout) {
    return x <= y ? dout : T(0);
  }
  static constexpr bool kNeedsX = true;
  static constexpr bool kDxNeedsX = true;
  static constexpr bool kNeedsOut = false;
};

// Fluid's gradients: X@GRAD where x < y, Y@GRAD where x >= y (ties go to Y).
struct MinOp {
  template <typename T>
  static T Apply(T x, T y) {
    return x < y ? x : y;
  }
  template <typename T>
  static T DX(T x, T y, T, T dout) {
    return x < y ? dout : T(0);
  }
  template <typename T>
  static T DY(T x, T y, T, T dout) {
    return x >= y ? dout : T(0);
  }
  static constexpr bool kNeedsX = true;
  static constexpr bool kDxNeedsX = true;
  static constexpr bool kNeedsOut = false;
};

// x^y; integer tensors round the double result to the nearest integer, as
// Fluid does. Gradients: y * x^(y-1) and ln(x) * x^y (NaN for x < 0).
struct PowOp {
  template <typename T>
  static T Apply(T x, T y) {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(std::llrint(
          std::pow(static_cast<double>(x), static_cast<double>(y))));
    } else {
      return std::pow(x, y);
    }
  }
  template <typename T>
  static T DX(T x, T y, T, T dout) {
    return dout * y * std::pow(x, y - T(1));
  }
  template <typename T>
  static T DY(T x, T y, T, T dout) {
    return dout * std::log(x) * std::pow(x, y);
  }
  static constexpr bool kNeedsX = true;
  static constexpr bool kDxNeedsX = true;
  static constexpr bool kNeedsOut = false;
};

template <typename T, typename Op>
Status ElementwiseKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Y"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* y = ctx.Input("Y");
  Tensor* out = ctx.Output("Out");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(BuildYMap(ctx, x->dims(), y->dims(), &map));
  const T* yd = y->data<T>();
  if constexpr (std::is_integral_v<T> && std::is_same_v<Op, DivOp>) {
    for (int64_t j = 0, j_end = y->numel(); j < j_end; ++j) {
      if (yd[j] == 0) return ctx.Error("integer division by zero in Y");
    }
  }
  const T* xd = x->data<T>();
  T* od = out->data<T>();
  map.ForEach([&](int64_t i, int64_t j) { od[i] = Op::Apply(xd[i], yd[j]); });
  return Status::Ok();
}

template <typename T, typename Op>
Status ElementwiseGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Y", "Out", "Out@GRAD"}));
  const Tensor* dout = ctx.Input("Out@GRAD");
  const Tensor* y = ctx.Input("Y");
  const Tensor* x = ctx.Input("X");
  const Tensor* out = ctx.Input("Out");
  Tensor* dx = ctx.Output("X@GRAD");
  Tensor* dy = ctx.Output("Y@GRAD");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(BuildYMap(ctx, dout->dims(), y->dims(), &map));
  if (dy != nullptr && Op::kNeedsX && x == nullptr) {
    return ctx.Error("Y@GRAD needs input X");
  }
  if (dx != nullptr && Op::kDxNeedsX && x == nullptr) {
    return ctx.Error("X@GRAD needs input X");
  }
  if (dy != nullptr && Op::kNeedsOut && out == nullptr) {
    return ctx.Error("Y@GRAD needs input Out");
  }
  for (const Tensor* t : {x, out}) {
    if (t != nullptr && t->dims() != dout->dims()) {
      return ctx.Error("X and Out must have Out@GRAD's dims " +
                       DimsToString(dout->dims()) + ", got " +
                       DimsToString(t->dims()));
    }
  }
  const T* doutd = dout->data<T>();
  const T* yd = y->data<T>();
  const T* xd = x != nullptr ? x->data<T>() : nullptr;
  const T* outd = out != nullptr ? out->data<T>() : nullptr;
  T* dxd = dx != nullptr ? dx->data<T>() : nullptr;
  T* dyd = dy != nullptr ? dy->data<T>() : nullptr;
  if (dyd != nullptr) {
    for (int64_t j = 0, j_end = dy->numel(); j < j_end; ++j) dyd[j] = T(0);
  }
  map.ForEach([&](int64_t i, int64_t j) {
    const T g = doutd[i];
    const T xv = xd != nullptr ? xd[i] : T(0);
    const T ov = outd != nullptr ? outd[i] : T(0);
    if (dyd != nullptr) dyd[j] += Op::DY(xv, yd[j], ov, g);
    if (dxd != nullptr) dxd[i] = Op::DX(xv, yd[j], ov, g);
  });
  return Status::Ok();
}

// Out[i] = X[i] < Y[j] (bool), Y broadcast into X.
template <typename T>
Status LessThanKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Y"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* y = ctx.Input("Y");
  BroadcastMap map;
  PAREX_RETURN_IF_ERROR(BuildYMap(ctx, x->dims(), y->dims(), &map));
  const T* xd = x->data<T>();
  const T* yd = y->data<T>();
  bool* od = ctx.Output("Out")->data<bool>();
  map.ForEach([&](int64_t i, int64_t j) { od[i] = xd[i] < yd[j]; });
  return Status::Ok();
}

// Paddle 2.6's equality: floats within 1e-8 of each other (their
// difference taken in T), an infinity only to itself, NaN to nothing.
template <typename T>
bool PaddleEqual(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isinf(a) || std::isinf(b)) return a == b;
    if (std::isnan(a) || std::isnan(b)) return false;
    return std::fabs(static_cast<double>(a - b)) < 1e-8;
  } else {
    return a == b;
  }
}

// Out[i] = PaddleEqual(X[.], Y[.]), each operand broadcast over Out's dims.
template <typename T>
Status EqualKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Y"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* y = ctx.Input("Y");
  StatusOr<BroadcastSpec> spec =
      BroadcastBoth(x->dims(), y->dims(), ctx.Attr<int>("axis"));
  if (!spec.ok()) return ctx.Error(spec.status().message());
  const int rank = static_cast<int>(spec->out.size());
  if (rank > static_cast<int>(kMaxRank)) {
    return ctx.Error("rank " + std::to_string(rank) + " is above " +
                     std::to_string(kMaxRank));
  }
  // Strides of X and Y along Out's dims; 0 where an operand repeats.
  std::array<int64_t, kMaxRank> x_stride{}, y_stride{}, index{};
  int64_t xs = 1, ys = 1;
  for (int d = rank - 1; d >= 0; --d) {
    x_stride[d] = spec->x[d] == 1 ? 0 : xs;
    y_stride[d] = spec->y[d] == 1 ? 0 : ys;
    xs *= spec->x[d];
    ys *= spec->y[d];
  }
  const T* xd = x->data<T>();
  const T* yd = y->data<T>();
  Tensor* out = ctx.Output("Out");
  bool* od = out->data<bool>();
  int64_t xo = 0, yo = 0;
  for (int64_t i = 0, n = out->numel(); i < n; ++i) {
    od[i] = PaddleEqual(xd[xo], yd[yo]);
    for (int d = rank - 1; d >= 0; --d) {  // next index of Out, row-major
      xo += x_stride[d];
      yo += y_stride[d];
      if (++index[d] < spec->out[d]) break;
      xo -= x_stride[d] * spec->out[d];
      yo -= y_stride[d] * spec->out[d];
      index[d] = 0;
    }
  }
  return Status::Ok();
}

// Registers ElementwiseKernel<T, Op> for each T as `type` and
// ElementwiseGradKernel<T, Op> for float and double as `type`_grad.
template <typename Op, typename... Ts>
void RegisterElementwise(KernelRegistry* r, const std::string& type) {
  RegisterCpuKernel<Ts...>(r, type, [](auto tag) {
    return &ElementwiseKernel<typename decltype(tag)::type, Op>;
  });
  RegisterCpuKernel<float, double>(r, type + "_grad", [](auto tag) {
    return &ElementwiseGradKernel<typename decltype(tag)::type, Op>;
  });
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry* r) {
  RegisterElementwise<AddOp, float, double, int32_t, int64_t>(
      r, "elementwise_add");
  RegisterElementwise<SubOp, float, double, int32_t, int64_t>(
      r, "elementwise_sub");
  RegisterElementwise<MulOp, float, double, int32_t, int64_t>(
      r, "elementwise_mul");
  RegisterElementwise<DivOp, float, double, int32_t, int64_t>(
      r, "elementwise_div");
  RegisterElementwise<MaxOp, float, double, int32_t, int64_t>(
      r, "elementwise_max");
  RegisterElementwise<MinOp, float, double, int32_t, int64_t>(
      r, "elementwise_min");
  RegisterElementwise<PowOp, float, double, int32_t, int64_t>(
      r, "elementwise_pow");
  PAREX_CPU_KERNEL(r, "less_than", LessThanKernel, float, double, int32_t,
                   int64_t);
  PAREX_CPU_KERNEL(r, "equal", EqualKernel, float, double, int32_t, int64_t,
                   bool);
}

}  // namespace parex
