// Element-wise activations and their gradients on CPU: relu, sigmoid, tanh,
// square, exp, log, abs, gelu, leaky_relu, hard_swish, swish and clip, with
// Paddle's formulas (phi's activation functors). Outputs may be the same
// variables as inputs (in-place activations): each element is read before
// the element at the same index is written.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>

#include "kernels/cpu/activation_kernel_impl.h"
#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

using activation::NoAttrs;
using activation::RegisterActivation;

struct Relu {
  using Attrs = NoAttrs;
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x, const Attrs&) {
    return x > T(0) ? x : T(0);
  }
  template <typename T>
  static T Backward(T out, T dout, const Attrs&) {
    return out > T(0) ? dout : T(0);
  }
};

struct Sigmoid {
  using Attrs = NoAttrs;
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x, const Attrs&) {
    return T(1) / (T(1) + std::exp(-x));
  }
  template <typename T>
  static T Backward(T out, T dout, const Attrs&) {
    return dout * out * (T(1) - out);
  }
};

struct Tanh {
  using Attrs = NoAttrs;
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x, const Attrs&) {
    return std::tanh(x);
  }
  template <typename T>
  static T Backward(T out, T dout, const Attrs&) {
    return dout * (T(1) - out * out);
  }
};

struct Square {
  using Attrs = NoAttrs;
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs&) {
    return x * x;
  }
  template <typename T>
  static T Backward(T x, T dout, const Attrs&) {
    return dout * T(2) * x;
  }
};

struct Exp {
  using Attrs = NoAttrs;
  static constexpr const char* kSource = "Out";
  template <typename T>
  static T Forward(T x, const Attrs&) {
    return std::exp(x);
  }
  template <typename T>
  static T Backward(T out, T dout, const Attrs&) {
    return dout * out;
  }
};

struct Log {
  using Attrs = NoAttrs;
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs&) {
    return std::log(x);
  }
  template <typename T>
  static T Backward(T x, T dout, const Attrs&) {
    return dout / x;
  }
};

struct Abs {
  using Attrs = NoAttrs;
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs&) {
    return std::abs(x);
  }
  template <typename T>
  static T Backward(T x, T dout, const Attrs&) {
    return x > T(0) ? dout : x < T(0) ? -dout : T(0);
  }
};

// approximate: the tanh form; else the exact 0.5 x (1 + erf(x / sqrt 2)).
struct Gelu {
  struct Attrs {
    bool approximate;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      return Attrs{ctx.Attr<bool>("approximate")};
    }
  };
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    if (a.approximate) {
      const T k = static_cast<T>(0.79788456080286535588);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + std::erf(x * static_cast<T>(M_SQRT1_2)));
  }
  template <typename T>
  static T Backward(T x, T dout, const Attrs& a) {
    if (a.approximate) {
      const T k = static_cast<T>(0.79788456080286535588);
      const T inner = k * (x + T(0.044715) * x * x * x);
      const T t = std::tanh(inner);
      const T d_inner = k * (T(1) + T(3) * T(0.044715) * x * x);
      return dout *
             (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * d_inner);
    }
    const T cdf = T(0.5) * (T(1) + std::erf(x * static_cast<T>(M_SQRT1_2)));
    const T pdf =
        std::exp(T(-0.5) * x * x) * static_cast<T>(0.39894228040143267794);
    return dout * (cdf + x * pdf);
  }
};

struct LeakyRelu {
  struct Attrs {
    double alpha;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      return Attrs{ctx.Attr<float>("alpha")};
    }
  };
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    return x > T(0) ? x : static_cast<T>(a.alpha) * x;
  }
  template <typename T>
  static T Backward(T x, T dout, const Attrs& a) {
    return x > T(0) ? dout : static_cast<T>(a.alpha) * dout;
  }
};

// x * min(max(x + offset, 0), threshold) / scale.
struct HardSwish {
  struct Attrs {
    double threshold, scale, offset;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      Attrs a{ctx.Attr<float>("threshold"), ctx.Attr<float>("scale"),
              ctx.Attr<float>("offset")};
      if (a.scale == 0) return ctx.Error("scale is 0");
      return a;
    }
  };
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    const T shifted = std::min(std::max(x + static_cast<T>(a.offset), T(0)),
                               static_cast<T>(a.threshold));
    return x * shifted / static_cast<T>(a.scale);
  }
  template <typename T>
  static T Backward(T x, T dout, const Attrs& a) {
    const T shifted = x + static_cast<T>(a.offset);
    if (shifted <= T(0)) return T(0);
    if (shifted >= static_cast<T>(a.threshold)) return dout;
    return dout * (T(2) * x + static_cast<T>(a.offset)) /
           static_cast<T>(a.scale);
  }
};

// x * sigmoid(beta x).
struct Swish {
  struct Attrs {
    double beta;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      return Attrs{ctx.Attr<float>("beta")};
    }
  };
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    return x / (T(1) + std::exp(-static_cast<T>(a.beta) * x));
  }
  template <typename T>
  static T Backward(T x, T dout, const Attrs& a) {
    const T b = static_cast<T>(a.beta);
    const T sig = T(1) / (T(1) + std::exp(-b * x));
    return dout * (sig + b * x * sig * (T(1) - sig));
  }
};

// min(max(x, min), max); the gradient passes where min < x < max.
struct Clip {
  struct Attrs {
    double min, max;
    static StatusOr<Attrs> Read(const KernelContext& ctx) {
      Attrs a{ctx.Attr<float>("min"), ctx.Attr<float>("max")};
      for (auto [slot, value] :
           {std::pair<const char*, double*>{"Min", &a.min}, {"Max", &a.max}}) {
        if (const Tensor* t = ctx.Input(slot)) {
          if (t->numel() != 1 ||
              (t->dtype() != DType::kFP32 && t->dtype() != DType::kFP64)) {
            return ctx.Error(std::string(slot) + " must be one float");
          }
          *value = t->dtype() == DType::kFP32 ? t->data<float>()[0]
                                              : t->data<double>()[0];
        }
      }
      if (!(a.min <= a.max)) {
        return ctx.Error("min " + std::to_string(a.min) + " is above max " +
                         std::to_string(a.max));
      }
      return a;
    }
  };
  static constexpr const char* kSource = "X";
  template <typename T>
  static T Forward(T x, const Attrs& a) {
    return std::min(std::max(x, static_cast<T>(a.min)), static_cast<T>(a.max));
  }
  template <typename T>
  static T Backward(T x, T dout, const Attrs& a) {
    return x > static_cast<T>(a.min) && x < static_cast<T>(a.max) ? dout : T(0);
  }
};

}  // namespace

void RegisterActivationKernels(KernelRegistry* r) {
  RegisterActivation<Relu>(r, "relu");
  RegisterActivation<Sigmoid>(r, "sigmoid");
  RegisterActivation<Tanh>(r, "tanh");
  RegisterActivation<Square>(r, "square");
  RegisterActivation<Exp>(r, "exp");
  RegisterActivation<Log>(r, "log");
  RegisterActivation<Abs>(r, "abs");
  RegisterActivation<Gelu>(r, "gelu");
  RegisterActivation<LeakyRelu>(r, "leaky_relu");
  RegisterActivation<HardSwish>(r, "hard_swish");
  RegisterActivation<Swish>(r, "swish");
  RegisterActivation<Clip>(r, "clip");
}

}  // namespace parex
