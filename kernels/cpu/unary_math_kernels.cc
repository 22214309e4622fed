// Paddle 2.x's further element-wise ops and their gradients on CPU: the
// activations of paddle.nn (relu6, hard_sigmoid, softplus, silu, elu,
// celu, selu, mish, softsign, logsigmoid, tanh_shrink, hard_shrink,
// softshrink, thresholded_relu, brelu) and the unary math of paddle
// (rsqrt, reciprocal, sin, cos, tan, asin, acos, atan, sinh, cosh, erf,
// log2, log10, log1p, expm1, ceil, round, sign; sqrt and floor are in
// math_kernels.cc), with phi's
// formulas and the forward value each gradient op reads in Paddle 2.6
// (graph/ir/ops/activation_ops.cc declares the same).
#include <cmath>

#include "kernels/cpu/activation_kernel_impl.h"

namespace parex {
namespace {

using activation::NoAttrs;
using activation::RegisterActivation;

// Attributes of one float, by name.
constexpr char kThreshold[] = "threshold";
constexpr char kAlpha[] = "alpha";
constexpr char kLambda[] = "lambda";

template <const char* kName>
struct OneAttr {
  double v;
  static StatusOr<OneAttr> Read(const KernelContext& ctx) {
    return OneAttr{ctx.Attr<float>(kName)};
  }
};

// Defines a functor with no attributes: `fwd` of x, `bwd` of (s, g) where s
// is the value named `source` and g is dOut.
#define PAREX_UNARY(Name, source, fwd, bwd)        \
  struct Name {                                    \
    using Attrs = NoAttrs;                         \
    static constexpr const char* kSource = source; \
    template <typename T>                          \
    static T Forward(T x, const Attrs&) {          \
      return fwd;                                  \
    }                                              \
    template <typename T>                          \
    static T Backward(T s, T g, const Attrs&) {    \
      (void)s;                                     \
      return bwd;                                  \
    }                                              \
  };

PAREX_UNARY(Rsqrt, "Out", T(1) / std::sqrt(x), T(-0.5) * g * s * s * s)
PAREX_UNARY(Reciprocal, "Out", T(1) / x, -g* s* s)
PAREX_UNARY(Sin, "X", std::sin(x), g* std::cos(s))
PAREX_UNARY(Cos, "X", std::cos(x), -g* std::sin(s))
PAREX_UNARY(Tan, "X", std::tan(x), g / (std::cos(s) * std::cos(s)))
PAREX_UNARY(Asin, "X", std::asin(x), g / std::sqrt(T(1) - s * s))
PAREX_UNARY(Acos, "X", std::acos(x), -g / std::sqrt(T(1) - s * s))
PAREX_UNARY(Atan, "X", std::atan(x), g / (T(1) + s * s))
PAREX_UNARY(Sinh, "X", std::sinh(x), g* std::cosh(s))
PAREX_UNARY(Cosh, "X", std::cosh(x), g* std::sinh(s))
PAREX_UNARY(Erf, "X", std::erf(x),
            g* static_cast<T>(M_2_SQRTPI) * std::exp(-s * s))
PAREX_UNARY(Log2, "X", std::log2(x), g / (s * static_cast<T>(M_LN2)))
PAREX_UNARY(Log10, "X", std::log10(x), g / (s * static_cast<T>(M_LN10)))
PAREX_UNARY(Log1p, "X", std::log1p(x), g / (T(1) + s))
PAREX_UNARY(Expm1, "Out", std::expm1(x), g*(s + T(1)))
// Piecewise constant: the gradient is zero (Paddle's reads dOut only).
PAREX_UNARY(Ceil, "Out@GRAD", std::ceil(x), T(0))
PAREX_UNARY(Round, "Out@GRAD", std::round(x), T(0))
PAREX_UNARY(Sign, "Out@GRAD", x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0)), T(0))
// silu_grad also gets Out in Paddle's programs; it needs X only.
PAREX_UNARY(Silu, "X", x / (T(1) + std::exp(-x)),
            g*(T(1) / (T(1) + std::exp(-s))) *
                (T(1) + s * std::exp(-s) / (T(1) + std::exp(-s))))
PAREX_UNARY(Softsign, "X", x / (T(1) + std::abs(x)),
            g / ((T(1) + std::abs(s)) * (T(1) + std::abs(s))))
PAREX_UNARY(TanhShrink, "X", x - std::tanh(x), g* std::tanh(s) * std::tanh(s))

#undef PAREX_UNARY

// -log(1 + exp(-x)), computed as phi does to stay finite.
struct LogSigmoid {
  using Attrs = NoAttrs;
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs&) {
    const T m = std::max(-x, T(0));
    return -m - std::log(std::exp(-m) + std::exp(-x - m));
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs&) {
    const T m = std::max(-x, T(0));
    return g * std::exp(-x - m) / (std::exp(-m) + std::exp(-x - m));
  }
};

// min(max(x, 0), threshold); Paddle 2.6's relu6 carries no attribute (the
// schema's default, 6).
struct Relu6 {
  struct Attrs {
    double threshold;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      return Attrs{ctx.Attr<float>("threshold")};
    }
  };
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    return std::min(std::max(x, T(0)), static_cast<T>(a.threshold));
  }
  template <typename T>
  static T Backward(T out, T g, const Attrs& a) {
    return out > T(0) && out < static_cast<T>(a.threshold) ? g : T(0);
  }
};

// max(min(slope * x + offset, 1), 0).
struct HardSigmoid {
  struct Attrs {
    double slope, offset;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      return Attrs{ctx.Attr<float>("slope"), ctx.Attr<float>("offset")};
    }
  };
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    const T y = x * static_cast<T>(a.slope) + static_cast<T>(a.offset);
    return std::max(std::min(y, T(1)), T(0));
  }
  template <typename T>
  static T Backward(T out, T g, const Attrs& a) {
    return out > T(0) && out < T(1) ? g * static_cast<T>(a.slope) : T(0);
  }
};

// x when beta * x > threshold, else log(1 + exp(beta * x)) / beta.
struct Softplus {
  struct Attrs {
    double beta, threshold;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      Attrs a{ctx.Attr<float>("beta"), ctx.Attr<float>("threshold")};
      if (a.beta == 0) return ctx.Error("beta is 0");
      return a;
    }
  };
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    const T xb = x * static_cast<T>(a.beta);
    return xb > static_cast<T>(a.threshold)
               ? x
               : std::log(T(1) + std::exp(xb)) / static_cast<T>(a.beta);
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs& a) {
    const T xb = x * static_cast<T>(a.beta);
    return xb > static_cast<T>(a.threshold)
               ? g
               : g * std::exp(xb) / (T(1) + std::exp(xb));
  }
};

// x * tanh(softplus(x)), softplus being x past `threshold`.
struct Mish {
  using Attrs = OneAttr<kThreshold>;
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Softplus(T x, const Attrs& a) {
    return x > static_cast<T>(a.v) ? x : std::log1p(std::exp(x));
  }
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    return x * std::tanh(Softplus(x, a));
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs& a) {
    const T sp = Softplus(x, a);
    const T tsp = std::tanh(sp);
    const T gsp = T(1) - std::exp(-sp);
    return g * (tsp + x * (T(1) - tsp * tsp) * gsp);
  }
};

// x > 0 ? x : alpha * (exp(x) - 1); elu_grad also gets Out in Paddle's
// programs, this needs X only.
struct Elu {
  using Attrs = OneAttr<kAlpha>;
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    return x > T(0) ? x : static_cast<T>(a.v) * (std::exp(x) - T(1));
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs& a) {
    return x > T(0) ? g : g * static_cast<T>(a.v) * std::exp(x);
  }
};

// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
struct Celu {
  struct Attrs {
    double alpha;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      const double alpha = ctx.Attr<float>("alpha");
      if (alpha == 0) return ctx.Error("alpha is 0");
      return Attrs{alpha};
    }
  };
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    const T alpha = static_cast<T>(a.alpha);
    return std::max(T(0), x) +
           std::min(T(0), alpha * (std::exp(x / alpha) - T(1)));
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs& a) {
    return x > T(0) ? g : g * std::exp(x / static_cast<T>(a.alpha));
  }
};

// scale * (x > 0 ? x : alpha * (exp(x) - 1)); the gradient reads Out.
struct Selu {
  struct Attrs {
    double scale, alpha;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      return Attrs{ctx.Attr<float>("scale"), ctx.Attr<float>("alpha")};
    }
  };
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    const T s = static_cast<T>(a.scale);
    return x > T(0) ? s * x
                    : s * static_cast<T>(a.alpha) * (std::exp(x) - T(1));
  }
  // As phi does: alpha * scale is a float product even for doubles.
  template <typename T>
  static T Backward(T out, T g, const Attrs& a) {
    const float la = static_cast<float>(a.alpha) * static_cast<float>(a.scale);
    return out <= T(0) ? g * (out + static_cast<T>(la))
                       : g * static_cast<T>(a.scale);
  }
};

// pow(x, factor); FactorTensor (one float), when given, is the factor.
struct Pow {
  struct Attrs {
    double factor;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      Attrs a{ctx.Attr<float>("factor")};
      if (const Tensor* t = ctx.Input("FactorTensor")) {
        if (t->numel() != 1 || t->dtype() != DType::kFP32) {
          return ctx.Error("FactorTensor must be one float32");
        }
        a.factor = t->data<float>()[0];
      }
      return a;
    }
  };
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    return std::pow(x, static_cast<T>(a.factor));
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs& a) {
    const T f = static_cast<T>(a.factor);
    return g * f * std::pow(x, f - T(1));
  }
};

// x where |x| > threshold, else 0.
struct HardShrink {
  using Attrs = OneAttr<kThreshold>;
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    const T t = static_cast<T>(a.v);
    return x < -t || x > t ? x : T(0);
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs& a) {
    const T t = static_cast<T>(a.v);
    return x < -t || x > t ? g : T(0);
  }
};

// x - lambda above lambda, x + lambda below -lambda, else 0.
struct SoftShrink {
  using Attrs = OneAttr<kLambda>;
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    const T l = static_cast<T>(a.v);
    return x > l ? x - l : (x < -l ? x + l : T(0));
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs& a) {
    const T l = static_cast<T>(a.v);
    return x > l || x < -l ? g : T(0);
  }
};

// x above threshold, else 0.
struct ThresholdedRelu {
  using Attrs = OneAttr<kThreshold>;
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    return x > static_cast<T>(a.v) ? x : T(0);
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs& a) {
    return x > static_cast<T>(a.v) ? g : T(0);
  }
};

// min(max(x, t_min), t_max) (paddle.nn.functional.hardtanh).
struct BRelu {
  struct Attrs {
    double t_min, t_max;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      Attrs a{ctx.Attr<float>("t_min"), ctx.Attr<float>("t_max")};
      if (!(a.t_min <= a.t_max)) return ctx.Error("t_min is above t_max");
      return a;
    }
  };
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    return std::min(std::max(x, static_cast<T>(a.t_min)),
                    static_cast<T>(a.t_max));
  }
  template <typename T>
  static T Backward(T x, T g, const Attrs& a) {
    return x > static_cast<T>(a.t_min) && x < static_cast<T>(a.t_max) ? g
                                                                      : T(0);
  }
};

}  // namespace

void RegisterUnaryMathKernels(KernelRegistry* r) {
  RegisterActivation<Rsqrt>(r, "rsqrt");
  RegisterActivation<Reciprocal>(r, "reciprocal");
  RegisterActivation<Sin>(r, "sin");
  RegisterActivation<Cos>(r, "cos");
  RegisterActivation<Tan>(r, "tan");
  RegisterActivation<Asin>(r, "asin");
  RegisterActivation<Acos>(r, "acos");
  RegisterActivation<Atan>(r, "atan");
  RegisterActivation<Sinh>(r, "sinh");
  RegisterActivation<Cosh>(r, "cosh");
  RegisterActivation<Erf>(r, "erf");
  RegisterActivation<Log2>(r, "log2");
  RegisterActivation<Log10>(r, "log10");
  RegisterActivation<Log1p>(r, "log1p");
  RegisterActivation<Expm1>(r, "expm1");
  RegisterActivation<Ceil>(r, "ceil");
  RegisterActivation<Round>(r, "round");
  RegisterActivation<Sign>(r, "sign");
  RegisterActivation<Silu>(r, "silu");
  RegisterActivation<Pow>(r, "pow");
  RegisterActivation<Softsign>(r, "softsign");
  RegisterActivation<TanhShrink>(r, "tanh_shrink");
  RegisterActivation<LogSigmoid>(r, "logsigmoid");
  RegisterActivation<Relu6>(r, "relu6");
  RegisterActivation<HardSigmoid>(r, "hard_sigmoid");
  RegisterActivation<Softplus>(r, "softplus");
  RegisterActivation<Mish>(r, "mish");
  RegisterActivation<Elu>(r, "elu");
  RegisterActivation<Celu>(r, "celu");
  RegisterActivation<Selu>(r, "selu");
  RegisterActivation<HardShrink>(r, "hard_shrink");
  RegisterActivation<SoftShrink>(r, "softshrink");
  RegisterActivation<ThresholdedRelu>(r, "thresholded_relu");
  RegisterActivation<BRelu>(r, "brelu");
}

}  // namespace parex
