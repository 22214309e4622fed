// fill_constant (and fill_constant_batch_size_like, the same fill once its
// schema has shaped Out), uniform_random, gaussian_random, assign, scale and
// cast on CPU.
//
// The random ops draw from std::mt19937_64 seeded by
// DeviceContext::NextSeed(seed attribute) and map its 64-bit outputs to
// values with the transforms below (not std:: distributions), so a seed
// gives the same numbers with every standard library.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/runtime_shape_context.h"

namespace parex {
namespace {

// A uniform double in [0, 1) from the top 53 bits of one draw.
double UnitInterval(std::mt19937_64& gen) {
  return static_cast<double>(gen() >> 11) * 0x1.0p-53;
}

// fill_constant's value: `str_value` when set (Paddle writes it for values a
// float attribute would round: large int64s, "inf", "nan"), else `value`.
template <typename T>
Status FillValue(const KernelContext& ctx, T* value) {
  // fill_constant's ValueTensor (one value) wins over the attributes.
  if (ctx.InputCount("ValueTensor") > 0 &&
      ctx.Input("ValueTensor") != nullptr) {
    PAREX_ASSIGN_OR_RETURN(
        std::vector<double> v,
        RuntimeShapeContext(ctx).InputValues("ValueTensor", 0));
    if (v.size() != 1) {
      return ctx.Error("ValueTensor holds " + std::to_string(v.size()) +
                       " values, not one");
    }
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (!(v[0] >= static_cast<double>(std::numeric_limits<T>::min()) &&
            v[0] <= static_cast<double>(std::numeric_limits<T>::max()))) {
        return ctx.Error("ValueTensor holds " + std::to_string(v[0]) +
                         ", outside " + DTypeName(DTypeOf<T>()));
      }
    }
    *value = static_cast<T>(v[0]);
    return Status::Ok();
  }
  const std::string str = ctx.Attr<std::string>("str_value");
  if (str.empty()) {
    *value = static_cast<T>(ctx.Attr<float>("value"));
    return Status::Ok();
  }
  const char* begin = str.c_str();
  char* end = nullptr;
  errno = 0;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    const long long v = std::strtoll(begin, &end, 10);
    // "1.0" or "1e3" are written for integer dtypes too: parse as a double.
    if (*end != '\0') {
      const double d = std::strtod(begin, &end);
      if (*end == '\0' && errno == 0 && std::isfinite(d)) {
        *value = static_cast<T>(d);
        return Status::Ok();
      }
    } else if (errno == 0 && v >= std::numeric_limits<T>::min() &&
               v <= std::numeric_limits<T>::max()) {
      *value = static_cast<T>(v);
      return Status::Ok();
    }
  } else {
    const double d = std::strtod(begin, &end);
    if (end != begin && *end == '\0') {
      *value = static_cast<T>(d);
      return Status::Ok();
    }
  }
  return ctx.Error("str_value '" + str + "' is no " + DTypeName(DTypeOf<T>()) +
                   " value");
}

template <typename T>
Status FillConstantKernel(KernelContext& ctx) {
  T value{};
  PAREX_RETURN_IF_ERROR(FillValue(ctx, &value));
  Tensor* out = ctx.Output("Out");
  T* od = out->data<T>();
  for (int64_t i = 0, i_end = out->numel(); i < i_end; ++i) od[i] = value;
  return Status::Ok();
}

// Uniform in [min, max); then diag_num values diag_val at index
// i * diag_step + i (Fluid's diagonal initialisation).
template <typename T>
Status UniformRandomKernel(KernelContext& ctx) {
  const double lo = ctx.Attr<float>("min");
  const double hi = ctx.Attr<float>("max");
  if (!(lo <= hi)) {
    return ctx.Error("min " + std::to_string(lo) + " > max " +
                     std::to_string(hi));
  }
  Tensor* out = ctx.Output("Out");
  T* od = out->data<T>();
  std::mt19937_64 gen(ctx.device_context()->NextSeed(ctx.Attr<int>("seed")));
  for (int64_t i = 0, i_end = out->numel(); i < i_end; ++i) {
    od[i] = static_cast<T>(lo + (hi - lo) * UnitInterval(gen));
  }
  const int64_t diag_num = ctx.Attr<int>("diag_num");
  const int64_t diag_step = ctx.Attr<int>("diag_step");
  if (diag_num > 0) {
    const int64_t last = (diag_num - 1) * diag_step + diag_num - 1;
    if (diag_step < 0 || last >= out->numel()) {
      return ctx.Error("diag_num " + std::to_string(diag_num) +
                       " with diag_step " + std::to_string(diag_step) +
                       " runs past " + std::to_string(out->numel()) +
                       " elements");
    }
    const T diag_val = static_cast<T>(ctx.Attr<float>("diag_val"));
    for (int64_t i = 0; i < diag_num; ++i) od[i * diag_step + i] = diag_val;
  }
  return Status::Ok();
}

// Normal(mean, std) by the Box-Muller transform, two values per two draws.
template <typename T>
Status GaussianRandomKernel(KernelContext& ctx) {
  const double mean = ctx.Attr<float>("mean");
  const double std_dev = ctx.Attr<float>("std");
  Tensor* out = ctx.Output("Out");
  T* od = out->data<T>();
  std::mt19937_64 gen(ctx.device_context()->NextSeed(ctx.Attr<int>("seed")));
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const int64_t n = out->numel();
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = 1.0 - UnitInterval(gen);  // (0, 1]: log is finite
    const double u2 = UnitInterval(gen);
    const double r = std::sqrt(-2.0 * std::log(u1));
    od[i] = static_cast<T>(mean + std_dev * r * std::cos(kTwoPi * u2));
    if (i + 1 < n) {
      od[i + 1] = static_cast<T>(mean + std_dev * r * std::sin(kTwoPi * u2));
    }
  }
  return Status::Ok();
}

template <typename T>
Status AssignKernel(KernelContext& ctx) {
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  if (x == nullptr) return ctx.Error("input X holds no tensor");
  if (out->raw_data() != x->raw_data() && x->bytes() > 0) {
    std::memcpy(out->raw_data(), x->raw_data(), x->bytes());
  }
  out->set_lod(x->lod());
  return Status::Ok();
}

// Out = scale * X + bias (bias_after_scale) or scale * (X + bias); the scale
// comes from ScaleTensor when it is bound.
template <typename T>
Status ScaleKernel(KernelContext& ctx) {
  const Tensor* x = ctx.Input("X");
  if (x == nullptr) return ctx.Error("input X holds no tensor");
  double scale = ctx.Attr<float>("scale");
  if (const Tensor* s = ctx.Input("ScaleTensor"); s != nullptr) {
    if (s->numel() != 1) return ctx.Error("ScaleTensor must hold one element");
    switch (s->dtype()) {
      case DType::kFP32:
        scale = s->data<float>()[0];
        break;
      case DType::kFP64:
        scale = s->data<double>()[0];
        break;
      default:
        return ctx.Error(std::string("ScaleTensor must be fp32 or fp64, got ") +
                         DTypeName(s->dtype()));
    }
  }
  const double bias = ctx.Attr<float>("bias");
  const bool after = ctx.Attr<bool>("bias_after_scale");
  const T* xd = x->data<T>();
  T* od = ctx.Output("Out")->data<T>();
  // Like Fluid, scale and bias are cast to T first (integer tensors get
  // truncated factors).
  const T s = static_cast<T>(scale);
  const T b = static_cast<T>(bias);
  for (int64_t i = 0, i_end = x->numel(); i < i_end; ++i) {
    od[i] = after ? s * xd[i] + b : s * (xd[i] + b);
  }
  return Status::Ok();
}

template <typename From, typename To>
void CastElements(const From* in, To* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<To, bool>) {
      out[i] = in[i] != From(0);
    } else {
      out[i] = static_cast<To>(in[i]);
    }
  }
}

// Kernel chosen by X's dtype; Out's dtype is out_dtype. Out may not be X's
// variable (Fluid programs never cast in place).
template <typename T>
Status CastKernel(KernelContext& ctx) {
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  if (x == nullptr) return ctx.Error("input X holds no tensor");
  if (x->dtype() != DTypeOf<T>()) {
    // Out is X's variable and its allocation already changed the dtype.
    return ctx.Error("cast cannot write its input variable in place");
  }
  const T* in = x->data<T>();
  const int64_t n = x->numel();
  switch (out->dtype()) {
    case DType::kBool:
      CastElements(in, out->data<bool>(), n);
      break;
    case DType::kUInt8:
      CastElements(in, out->data<uint8_t>(), n);
      break;
    case DType::kInt8:
      CastElements(in, out->data<int8_t>(), n);
      break;
    case DType::kInt16:
      CastElements(in, out->data<int16_t>(), n);
      break;
    case DType::kInt32:
      CastElements(in, out->data<int32_t>(), n);
      break;
    case DType::kInt64:
      CastElements(in, out->data<int64_t>(), n);
      break;
    case DType::kFP32:
      CastElements(in, out->data<float>(), n);
      break;
    case DType::kFP64:
      CastElements(in, out->data<double>(), n);
      break;
    default:
      return Unimplemented(ctx.op().Label() + ": cast to " +
                           DTypeName(out->dtype()) + " is not supported on " +
                           "CPU");
  }
  out->set_lod(x->lod());
  return Status::Ok();
}

// fill_any_like: Out (X's dims, the dtype shape inference chose) holds
// `value` everywhere; X's values are not read.
template <typename T>
Status FillAnyLikeKernel(KernelContext& ctx) {
  Tensor* out = ctx.Output("Out");
  const double value = ctx.Attr<float>("value");
  switch (out->dtype()) {
    case DType::kFP32:
      std::fill_n(out->data<float>(), out->numel(), static_cast<float>(value));
      return Status::Ok();
    case DType::kFP64:
      std::fill_n(out->data<double>(), out->numel(), value);
      return Status::Ok();
    case DType::kInt32:
      std::fill_n(out->data<int32_t>(), out->numel(),
                  static_cast<int32_t>(value));
      return Status::Ok();
    case DType::kInt64:
      std::fill_n(out->data<int64_t>(), out->numel(),
                  static_cast<int64_t>(value));
      return Status::Ok();
    case DType::kBool:
      std::fill_n(out->data<bool>(), out->numel(), value != 0);
      return Status::Ok();
    default:
      return ctx.Error(std::string("Out of ") + DTypeName(out->dtype()) +
                       " is not supported");
  }
}

// assign_value: the values attribute of Out's dtype, one per element.
template <typename T>
Status AssignValueKernel(KernelContext& ctx) {
  Tensor* out = ctx.Output("Out");
  auto copy = [&](const auto& values, const char* attr) -> Status {
    if (static_cast<int64_t>(values.size()) != out->numel()) {
      return ctx.Error(std::string(attr) + " has " +
                       std::to_string(values.size()) + " values for " +
                       std::to_string(out->numel()) + " elements");
    }
    for (int64_t i = 0; i < out->numel(); ++i) {
      out->data<T>()[i] = static_cast<T>(values[i]);
    }
    return Status::Ok();
  };
  if constexpr (std::is_same_v<T, float>) {
    return copy(ctx.Attr<std::vector<float>>("fp32_values"), "fp32_values");
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return copy(ctx.Attr<std::vector<int>>("int32_values"), "int32_values");
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return copy(ctx.Attr<std::vector<int64_t>>("int64_values"), "int64_values");
  } else {
    return copy(ctx.Attr<std::vector<int>>("bool_values"), "bool_values");
  }
}

// linspace as Paddle: a double step; the first half counted from Start,
// the rest back from Stop, each cast to T.
template <typename T>
Status LinspaceKernel(KernelContext& ctx) {
  auto scalar = [&](const char* slot) -> StatusOr<double> {
    const Tensor* t = ctx.Input(slot);
    if (t == nullptr || t->numel() != 1) {
      return ctx.Error(std::string(slot) + " must hold one value");
    }
    switch (t->dtype()) {
      case DType::kFP32:
        return static_cast<double>(t->data<float>()[0]);
      case DType::kFP64:
        return t->data<double>()[0];
      case DType::kInt32:
        return static_cast<double>(t->data<int32_t>()[0]);
      case DType::kInt64:
        return static_cast<double>(t->data<int64_t>()[0]);
      default:
        return ctx.Error(std::string(slot) + " is not a number");
    }
  };
  PAREX_ASSIGN_OR_RETURN(const double start_d, scalar("Start"));
  PAREX_ASSIGN_OR_RETURN(const double stop_d, scalar("Stop"));
  const T start = static_cast<T>(start_d), stop = static_cast<T>(stop_d);
  Tensor* out = ctx.Output("Out");
  const int64_t num = out->numel();
  T* od = out->data<T>();
  if (num == 1) {
    od[0] = start;
    return Status::Ok();
  }
  const double step =
      static_cast<double>(stop - start) / static_cast<double>(num - 1);
  const int64_t half = num / 2;
  for (int64_t i = 0; i < num; ++i) {
    od[i] = i < half ? static_cast<T>(start + step * i)
                     : static_cast<T>(stop - step * (num - i - 1));
  }
  return Status::Ok();
}

// range: Start, Start + Step, ... as Paddle computes them (each value the
// previous plus Step, so floats round as Paddle's do); Out was sized by
// shape inference.
template <typename T>
Status RangeKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Start", "End", "Step"}));
  Tensor* out = ctx.Output("Out");
  T value = ctx.Input("Start")->data<T>()[0];
  const T step = ctx.Input("Step")->data<T>()[0];
  T* od = out->data<T>();
  for (int64_t i = 0, n = out->numel(); i < n; ++i) {
    od[i] = value;
    value += step;
  }
  return Status::Ok();
}

}  // namespace

void RegisterFillKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "range", RangeKernel, float, double, int32_t, int64_t);
  PAREX_CPU_KERNEL(r, "assign_value", AssignValueKernel, float, int32_t,
                   int64_t, bool);
  PAREX_CPU_KERNEL(r, "linspace", LinspaceKernel, float, double, int32_t,
                   int64_t);
  PAREX_CPU_KERNEL(r, "fill_any_like", FillAnyLikeKernel, float, double,
                   int32_t, int64_t, bool);
  PAREX_CPU_KERNEL(r, "fill_constant", FillConstantKernel, float, double,
                   int32_t, int64_t, bool);
  PAREX_CPU_KERNEL(r, "fill_constant_batch_size_like", FillConstantKernel,
                   float, double, int32_t, int64_t, bool);
  PAREX_CPU_KERNEL(r, "uniform_random", UniformRandomKernel, float, double);
  PAREX_CPU_KERNEL(r, "gaussian_random", GaussianRandomKernel, float, double);
  PAREX_CPU_KERNEL(r, "assign", AssignKernel, float, double, int32_t, int64_t,
                   bool);
  PAREX_CPU_KERNEL(r, "scale", ScaleKernel, float, double, int32_t, int64_t);
  PAREX_CPU_KERNEL(r, "cast", CastKernel, bool, uint8_t, int8_t, int16_t,
                   int32_t, int64_t, float, double);
}

}  // namespace parex
