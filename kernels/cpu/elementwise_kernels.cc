// elementwise_add/sub/mul/div/max/min/pow and their gradients, and
// less_than, on CPU, broadcasting by ElementwiseBroadcast (numpy's rule at
// axis -1, Fluid's at an explicit axis); equal by BroadcastBoth (both in
// graph/ir/spec/broadcast_spec.h).
//
// When X has Out's elements (the usual case: same shapes, or Y a bias) the
// kernels walk one BroadcastMap pairing Out with Y; when X broadcasts too, a
// BinaryBroadcastMap. A gradient is Out@GRAD's terms summed over the dims
// along which its operand repeats.
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

using cpu::BinaryBroadcastMap;
using cpu::BroadcastMap;

// The broadcast of the elementwise ops' X (or Out@GRAD, standing in for a
// missing X in grad ops) and Y, and Out's check against it.
Status Broadcast(const KernelContext& ctx, const Dims& x, const Dims& y,
                 const char* x_name, ElementwiseExtents* e) {
  Status s = ElementwiseBroadcast(x, y, ctx.Attr<int>("axis"), e, x_name, "Y");
  return s.ok() ? s : ctx.Error(s.message());
}

Status CheckOutDims(const KernelContext& ctx, const char* slot,
                    const Dims& dims, const ElementwiseExtents& e) {
  bool same = static_cast<int>(dims.size()) == e.rank;
  for (int d = 0; same && d < e.rank; ++d) same = dims[d] == e.out[d];
  if (same) return Status::Ok();
  return ctx.Error(std::string(slot) + " " + DimsToString(dims) +
                   " does not have the broadcast dims " +
                   DimsToString(Dims(e.out, e.out + e.rank)));
}

// The maps accept whatever ElementwiseBroadcast gives: a broken invariant.
Status BadMap(const KernelContext& ctx, const ElementwiseExtents& e) {
  return Internal(ctx.op().Label() + ": no broadcast map for Out " +
                  DimsToString(Dims(e.out, e.out + e.rank)));
}

// Whether X has Out's elements in Out's order (it repeats along no dim).
bool XIsFull(const ElementwiseExtents& e) {
  for (int d = 0; d < e.rank; ++d) {
    if (e.x[d] != e.out[d]) return false;
  }
  return true;
}

// Calls f(i, xi, yi) for every element i of Out, with the indices of the X
// and Y elements it pairs, in row-major order.
template <typename F>
Status ForEachElement(const KernelContext& ctx, const ElementwiseExtents& e,
                      F&& f) {
  if (XIsFull(e)) {
    BroadcastMap map;
    if (!map.Init(e.rank, e.out, e.y)) return BadMap(ctx, e);
    map.ForEach([&](int64_t i, int64_t j) { f(i, i, j); });
    return Status::Ok();
  }
  BinaryBroadcastMap map;
  if (!map.Init(e.rank, e.out, e.x, e.y)) return BadMap(ctx, e);
  map.ForEach(f);
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

// elementwise_floordiv and elementwise_mod (no gradient ops): Python's
// rounding, toward -inf, so a remainder takes the divisor's sign. Integer
// divisors are checked for 0 first (ElementwiseKernel); x / -1 wraps for
// the most negative x instead of trapping.
struct FloorDivOp {
  template <typename T>
  static T Apply(T x, T y) {
    if constexpr (std::is_integral_v<T>) {
      if (y == -1)
        return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(x));
      T q = x / y;
      if (x % y != 0 && ((x < 0) != (y < 0))) --q;
      return q;
    } else {
      return std::floor(x / y);
    }
  }
};

struct ModOp {
  template <typename T>
  static T Apply(T x, T y) {
    if constexpr (std::is_integral_v<T>) {
      if (y == -1) return T(0);
      T r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    } else {
      T r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    }
  }
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
  ElementwiseExtents e;
  PAREX_RETURN_IF_ERROR(Broadcast(ctx, x->dims(), y->dims(), "X", &e));
  PAREX_RETURN_IF_ERROR(CheckOutDims(ctx, "Out", out->dims(), e));
  const T* yd = y->data<T>();
  if constexpr (std::is_integral_v<T> &&
                (std::is_same_v<Op, DivOp> || std::is_same_v<Op, FloorDivOp> ||
                 std::is_same_v<Op, ModOp>)) {
    for (int64_t j = 0, j_end = y->numel(); j < j_end; ++j) {
      if (yd[j] == 0) return ctx.Error("integer division by zero in Y");
    }
  }
  const T* xd = x->data<T>();
  T* od = out->data<T>();
  return ForEachElement(ctx, e, [&](int64_t i, int64_t xi, int64_t yi) {
    od[i] = Op::Apply(xd[xi], yd[yi]);
  });
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
  // Without X, X had Out@GRAD's dims.
  ElementwiseExtents e;
  PAREX_RETURN_IF_ERROR(Broadcast(ctx, x != nullptr ? x->dims() : dout->dims(),
                                  y->dims(), x != nullptr ? "X" : "Out@GRAD",
                                  &e));
  if (dy != nullptr && Op::kNeedsX && x == nullptr) {
    return ctx.Error("Y@GRAD needs input X");
  }
  if (dx != nullptr && Op::kDxNeedsX && x == nullptr) {
    return ctx.Error("X@GRAD needs input X");
  }
  if (dy != nullptr && Op::kNeedsOut && out == nullptr) {
    return ctx.Error("Y@GRAD needs input Out");
  }
  PAREX_RETURN_IF_ERROR(CheckOutDims(ctx, "Out@GRAD", dout->dims(), e));
  if (out != nullptr) {
    PAREX_RETURN_IF_ERROR(CheckOutDims(ctx, "Out", out->dims(), e));
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
  if (XIsFull(e)) {  // X@GRAD has Out@GRAD's elements: assigned in place
    return ForEachElement(ctx, e, [&](int64_t i, int64_t, int64_t j) {
      const T g = doutd[i];
      const T xv = xd != nullptr ? xd[i] : T(0);
      const T ov = outd != nullptr ? outd[i] : T(0);
      if (dyd != nullptr) dyd[j] += Op::DY(xv, yd[j], ov, g);
      if (dxd != nullptr) dxd[i] = Op::DX(xv, yd[j], ov, g);
    });
  }
  // X repeats along some dims, so it is bound (a missing X stands for
  // Out@GRAD's dims): X@GRAD, smaller than Out@GRAD, sums its terms.
  if (xd == nullptr) return ctx.Error("X@GRAD needs input X");
  if (dxd != nullptr) {
    for (int64_t j = 0, j_end = dx->numel(); j < j_end; ++j) dxd[j] = T(0);
  }
  return ForEachElement(ctx, e, [&](int64_t i, int64_t xi, int64_t yi) {
    const T g = doutd[i];
    const T xv = xd[xi];
    const T ov = outd != nullptr ? outd[i] : T(0);
    if (dyd != nullptr) dyd[yi] += Op::DY(xv, yd[yi], ov, g);
    if (dxd != nullptr) dxd[xi] += Op::DX(xv, yd[yi], ov, g);
  });
}

// Out[i] = X[.] < Y[.] (bool), broadcast as the arithmetic ops.
template <typename T>
Status LessThanKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Y"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* y = ctx.Input("Y");
  Tensor* out = ctx.Output("Out");
  ElementwiseExtents e;
  PAREX_RETURN_IF_ERROR(Broadcast(ctx, x->dims(), y->dims(), "X", &e));
  PAREX_RETURN_IF_ERROR(CheckOutDims(ctx, "Out", out->dims(), e));
  const T* xd = x->data<T>();
  const T* yd = y->data<T>();
  bool* od = out->data<bool>();
  return ForEachElement(ctx, e, [&](int64_t i, int64_t xi, int64_t yi) {
    od[i] = xd[xi] < yd[yi];
  });
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

// Comparisons and logic of two operands (Paddle 2.6's functors).
struct EqualCmp {
  template <typename T>
  static bool Apply(T a, T b) {
    return PaddleEqual(a, b);
  }
};
struct NotEqualCmp {
  template <typename T>
  static bool Apply(T a, T b) {
    return !PaddleEqual(a, b);
  }
};
struct GreaterThanCmp {
  template <typename T>
  static bool Apply(T a, T b) {
    return a > b;
  }
};
struct GreaterEqualCmp {
  template <typename T>
  static bool Apply(T a, T b) {
    return a >= b;
  }
};
struct LessEqualCmp {
  template <typename T>
  static bool Apply(T a, T b) {
    return a <= b;
  }
};
struct AndCmp {
  template <typename T>
  static bool Apply(T a, T b) {
    return a != T(0) && b != T(0);
  }
};
struct OrCmp {
  template <typename T>
  static bool Apply(T a, T b) {
    return a != T(0) || b != T(0);
  }
};
struct XorCmp {
  template <typename T>
  static bool Apply(T a, T b) {
    return (a != T(0)) != (b != T(0));
  }
};

// Out[i] = Cmp::Apply(X[.], Y[.]) (bool), each operand broadcast over Out's
// dims (numpy's rule from the last dim, or Fluid's at `axis`).
template <typename T, typename Cmp>
Status CompareKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Y"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* y = ctx.Input("Y");
  StatusOr<BroadcastSpec> spec = BroadcastBoth(
      x->dims(), y->dims(), ctx.HasAttr("axis") ? ctx.Attr<int>("axis") : -1);
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
    od[i] = Cmp::Apply(xd[xo], yd[yo]);
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

// logical_not: Out = !X (X's nonzero elements are true).
template <typename T>
Status LogicalNotKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  const T* xd = x->data<T>();
  bool* od = ctx.Output("Out")->data<bool>();
  for (int64_t i = 0, n = x->numel(); i < n; ++i) od[i] = xd[i] == T(0);
  return Status::Ok();
}

template <typename Cmp, typename... Ts>
void RegisterCompare(KernelRegistry* r, const std::string& type) {
  RegisterCpuKernel<Ts...>(r, type, [](auto tag) {
    return &CompareKernel<typename decltype(tag)::type, Cmp>;
  });
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
  RegisterCpuKernel<float, double, int32_t, int64_t>(
      r, "elementwise_floordiv", [](auto tag) {
        return &ElementwiseKernel<typename decltype(tag)::type, FloorDivOp>;
      });
  RegisterCpuKernel<float, double, int32_t, int64_t>(
      r, "elementwise_mod", [](auto tag) {
        return &ElementwiseKernel<typename decltype(tag)::type, ModOp>;
      });
  PAREX_CPU_KERNEL(r, "less_than", LessThanKernel, float, double, int32_t,
                   int64_t);
  RegisterCompare<EqualCmp, float, double, int32_t, int64_t, bool>(r, "equal");
  RegisterCompare<NotEqualCmp, float, double, int32_t, int64_t, bool>(
      r, "not_equal");
  RegisterCompare<GreaterThanCmp, float, double, int32_t, int64_t>(
      r, "greater_than");
  RegisterCompare<GreaterEqualCmp, float, double, int32_t, int64_t>(
      r, "greater_equal");
  RegisterCompare<LessEqualCmp, float, double, int32_t, int64_t>(r,
                                                                 "less_equal");
  RegisterCompare<AndCmp, bool, float, double, int32_t, int64_t>(r,
                                                                 "logical_and");
  RegisterCompare<OrCmp, bool, float, double, int32_t, int64_t>(r,
                                                                "logical_or");
  RegisterCompare<XorCmp, bool, float, double, int32_t, int64_t>(r,
                                                                 "logical_xor");
  PAREX_CPU_KERNEL(r, "logical_not", LogicalNotKernel, bool, float, double,
                   int32_t, int64_t);
}

}  // namespace parex
