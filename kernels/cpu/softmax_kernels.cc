// softmax, cross_entropy, softmax_with_cross_entropy,
// sigmoid_cross_entropy_with_logits and their gradients on CPU. A tensor
// normalised along `axis` is viewed as [outer, n, inner]: the element (o, k, i)
// sits at (o * n + k) * inner + i, and the per-row values (labels, losses) of
// the collapsed [outer, 1, inner] view at o * inner + i.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>

#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

struct AxisView {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};

// REQUIRES: the schema's shape inference accepted `axis` for `dims`.
AxisView SplitAt(const Dims& dims, int axis) {
  const int rank = static_cast<int>(dims.size());
  if (axis < 0) axis += rank;
  AxisView v;
  for (int d = 0; d < rank; ++d) {
    if (d < axis) v.outer *= dims[d];
    if (d == axis) v.n = dims[d];
    if (d > axis) v.inner *= dims[d];
  }
  return v;
}

// Fluid's TolerableValue(log(p)): log clamped to [-1e20, 1e20] so a zero
// probability gives a huge but finite loss.
template <typename T>
T TolerableLog(T p) {
  const T kBound = static_cast<T>(1e20);
  const T v = std::log(p);
  if (std::isnan(v)) return v;
  return std::min(std::max(v, -kBound), kBound);
}

// A hard label tensor (int64 or int32) read as int64.
class HardLabels {
 public:
  explicit HardLabels(const Tensor& t)
      : i64_(t.dtype() == DType::kInt64 ? t.data<int64_t>() : nullptr),
        i32_(t.dtype() == DType::kInt32 ? t.data<int32_t>() : nullptr) {}
  bool valid() const { return i64_ != nullptr || i32_ != nullptr; }
  int64_t operator[](int64_t i) const { return i64_ ? i64_[i] : i32_[i]; }

 private:
  const int64_t* i64_;
  const int32_t* i32_;
};

// Every hard label is in [0, n) or equal to ignore_index.
Status CheckHardLabels(const KernelContext& ctx, const Tensor* label, int64_t n,
                       int64_t ignore_index) {
  if (label == nullptr) return ctx.Error("input Label holds no tensor");
  HardLabels labels(*label);
  if (!labels.valid()) {
    return ctx.Error(std::string("hard Label must be int64 or int32, got ") +
                     DTypeName(label->dtype()));
  }
  for (int64_t i = 0, i_end = label->numel(); i < i_end; ++i) {
    const int64_t l = labels[i];
    if (l != ignore_index && (l < 0 || l >= n)) {
      return ctx.Error("Label " + std::to_string(l) + " at " +
                       std::to_string(i) + " is outside [0, " +
                       std::to_string(n) + ") and is not ignore_index " +
                       std::to_string(ignore_index));
    }
  }
  return Status::Ok();
}

// The Label input: T values when soft, else hard labels in range.
template <typename T>
Status CheckLabel(const KernelContext& ctx, bool soft, int64_t n,
                  int64_t ignore_index) {
  if (!soft) return CheckHardLabels(ctx, ctx.Input("Label"), n, ignore_index);
  if (ctx.Input("Label") == nullptr) {
    return ctx.Error("input Label holds no tensor");
  }
  return ctx.CheckInputs<T>({"Label"});
}

// Calls f(row, base) for every row along the axis: `row` indexes the
// collapsed [outer, 1, inner] view, `base` is the row's first element; the
// row's elements are base + k * inner for k < n.
template <typename F>
void ForEachRow(const AxisView& v, F&& f) {
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t i = 0; i < v.inner; ++i)
      f(o * v.inner + i, o * v.n * v.inner + i);
  }
}

// max_k x and log(sum_k exp(x_k - max)) of one row.
template <typename T>
void RowLogSumExp(const AxisView& v, const T* x, int64_t base, T* max,
                  T* log_sum) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t k = 0; k < v.n; ++k) m = std::max(m, x[base + k * v.inner]);
  T sum = 0;
  for (int64_t k = 0; k < v.n; ++k) sum += std::exp(x[base + k * v.inner] - m);
  *max = m;
  *log_sum = std::log(sum);
}

// y = softmax(x) along the axis; y may be x.
template <typename T>
void Softmax(const AxisView& v, const T* x, T* y) {
  ForEachRow(v, [&](int64_t, int64_t base) {
    T max;
    T log_sum;
    RowLogSumExp(v, x, base, &max, &log_sum);
    for (int64_t k = 0; k < v.n; ++k) {
      const int64_t e = base + k * v.inner;
      y[e] = std::exp(x[e] - max - log_sum);
    }
  });
}

template <typename T>
Status SoftmaxKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  Tensor* out = ctx.Output("Out");
  Softmax(SplitAt(x->dims(), ctx.Attr<int>("axis")), x->data<T>(),
          out->data<T>());
  return Status::Ok();
}

// dX = Out * (dOut - sum_k(dOut * Out)) along the axis.
template <typename T>
Status SoftmaxGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out", "Out@GRAD"}));
  const Tensor* out = ctx.Input("Out");
  const Tensor* dout = ctx.Input("Out@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  const AxisView v = SplitAt(out->dims(), ctx.Attr<int>("axis"));
  const T* y = out->data<T>();
  const T* dy = dout->data<T>();
  T* g = dx->data<T>();
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t i = 0; i < v.inner; ++i) {
      const int64_t base = o * v.n * v.inner + i;
      T dot = 0;
      for (int64_t k = 0; k < v.n; ++k) {
        dot += dy[base + k * v.inner] * y[base + k * v.inner];
      }
      for (int64_t k = 0; k < v.n; ++k) {
        const int64_t e = base + k * v.inner;
        g[e] = y[e] * (dy[e] - dot);
      }
    }
  }
  return Status::Ok();
}

// log_softmax: Out = x - max - log(sum(exp(x - max))) along the axis.
template <typename T>
Status LogSoftmaxKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  const AxisView v = SplitAt(x->dims(), ctx.Attr<int>("axis"));
  const T* xd = x->data<T>();
  T* y = ctx.Output("Out")->data<T>();
  ForEachRow(v, [&](int64_t, int64_t base) {
    T max;
    T log_sum;
    RowLogSumExp(v, xd, base, &max, &log_sum);
    for (int64_t k = 0; k < v.n; ++k) {
      const int64_t e = base + k * v.inner;
      y[e] = xd[e] - max - log_sum;
    }
  });
  return Status::Ok();
}

// dX = dOut - exp(Out) * sum_k(dOut) along the axis.
template <typename T>
Status LogSoftmaxGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Out", "Out@GRAD"}));
  const Tensor* out = ctx.Input("Out");
  const AxisView v = SplitAt(out->dims(), ctx.Attr<int>("axis"));
  const T* y = out->data<T>();
  const T* dy = ctx.Input("Out@GRAD")->data<T>();
  T* g = ctx.Output("X@GRAD")->data<T>();
  ForEachRow(v, [&](int64_t, int64_t base) {
    T sum = 0;
    for (int64_t k = 0; k < v.n; ++k) sum += dy[base + k * v.inner];
    for (int64_t k = 0; k < v.n; ++k) {
      const int64_t e = base + k * v.inner;
      g[e] = dy[e] - std::exp(y[e]) * sum;
    }
  });
  return Status::Ok();
}

// Y = -log(X[label]) (hard; 0 where label == ignore_index) or
// -sum(label * log(X)) (soft), along the last dim.
template <typename T>
Status CrossEntropyKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* label = ctx.Input("Label");
  Tensor* y = ctx.Output("Y");
  const AxisView v = SplitAt(x->dims(), -1);
  const bool soft = ctx.Attr<bool>("soft_label");
  const int64_t ignore = ctx.Attr<int>("ignore_index");
  PAREX_RETURN_IF_ERROR(CheckLabel<T>(ctx, soft, v.n, ignore));
  const T* xd = x->data<T>();
  T* yd = y->data<T>();
  if (soft) {
    const T* ld = label->data<T>();
    for (int64_t r = 0; r < v.outer; ++r) {
      T loss = 0;
      for (int64_t k = 0; k < v.n; ++k) {
        loss -= ld[r * v.n + k] * TolerableLog(xd[r * v.n + k]);
      }
      yd[r] = loss;
    }
    return Status::Ok();
  }
  HardLabels labels(*label);
  for (int64_t r = 0; r < v.outer; ++r) {
    const int64_t l = labels[r];
    yd[r] = l == ignore ? T(0) : -TolerableLog(xd[r * v.n + l]);
  }
  return Status::Ok();
}

template <typename T>
Status CrossEntropyGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Y@GRAD"}));
  const Tensor* x = ctx.Input("X");
  const Tensor* label = ctx.Input("Label");
  const Tensor* dy = ctx.Input("Y@GRAD");
  Tensor* dx = ctx.Output("X@GRAD");
  const AxisView v = SplitAt(x->dims(), -1);
  const bool soft = ctx.Attr<bool>("soft_label");
  const int64_t ignore = ctx.Attr<int>("ignore_index");
  PAREX_RETURN_IF_ERROR(CheckLabel<T>(ctx, soft, v.n, ignore));
  const T* xd = x->data<T>();
  const T* dyd = dy->data<T>();
  T* g = dx->data<T>();
  if (soft) {
    const T* ld = label->data<T>();
    for (int64_t e = 0, e_end = x->numel(); e < e_end; ++e) {
      g[e] = -dyd[e / v.n] * ld[e] / xd[e];
    }
    return Status::Ok();
  }
  HardLabels labels(*label);
  std::fill(g, g + x->numel(), T(0));
  for (int64_t r = 0; r < v.outer; ++r) {
    const int64_t l = labels[r];
    if (l != ignore) g[r * v.n + l] = -dyd[r] / xd[r * v.n + l];
  }
  return Status::Ok();
}

// Softmax = softmax(Logits); Loss = -log_softmax(Logits)[label] (hard; 0
// where label == ignore_index) or -sum(label * log_softmax(Logits)) (soft).
// The loss comes from the shifted logits, so it stays finite where the
// softmax underflows. Each row is read whole before it is written.
template <typename T>
Status SoftmaxWithCrossEntropyKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Logits"}));
  const Tensor* logits = ctx.Input("Logits");
  const Tensor* label = ctx.Input("Label");
  Tensor* softmax = ctx.Output("Softmax");
  Tensor* loss = ctx.Output("Loss");
  const AxisView v = SplitAt(logits->dims(), ctx.Attr<int>("axis"));
  const bool soft = ctx.Attr<bool>("soft_label");
  const int64_t ignore = ctx.Attr<int>("ignore_index");
  PAREX_RETURN_IF_ERROR(CheckLabel<T>(ctx, soft, v.n, ignore));
  const T* x = logits->data<T>();
  const T* lab = soft ? label->data<T>() : nullptr;
  HardLabels labels(*label);
  T* y = softmax->data<T>();
  T* ld = loss->data<T>();
  ForEachRow(v, [&](int64_t row, int64_t base) {
    T max;
    T log_sum;
    RowLogSumExp(v, x, base, &max, &log_sum);
    T l = 0;
    if (soft) {
      for (int64_t k = 0; k < v.n; ++k) {
        const int64_t e = base + k * v.inner;
        l -= lab[e] * (x[e] - max - log_sum);
      }
    } else if (labels[row] != ignore) {
      l = -(x[base + labels[row] * v.inner] - max - log_sum);
    }
    for (int64_t k = 0; k < v.n; ++k) {
      const int64_t e = base + k * v.inner;
      y[e] = std::exp(x[e] - max - log_sum);
    }
    ld[row] = l;
  });
  return Status::Ok();
}

// Logits@GRAD = (Softmax - onehot(label)) * Loss@GRAD (hard; 0 on ignored
// rows) or (Softmax - label) * Loss@GRAD (soft), as in Fluid.
template <typename T>
Status SoftmaxWithCrossEntropyGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Softmax", "Loss@GRAD"}));
  const Tensor* label = ctx.Input("Label");
  const Tensor* softmax = ctx.Input("Softmax");
  const Tensor* dloss = ctx.Input("Loss@GRAD");
  Tensor* dlogits = ctx.Output("Logits@GRAD");
  const AxisView v = SplitAt(softmax->dims(), ctx.Attr<int>("axis"));
  const bool soft = ctx.Attr<bool>("soft_label");
  const int64_t ignore = ctx.Attr<int>("ignore_index");
  PAREX_RETURN_IF_ERROR(CheckLabel<T>(ctx, soft, v.n, ignore));
  const T* sd = softmax->data<T>();
  const T* dl = dloss->data<T>();
  T* g = dlogits->data<T>();
  const T* lab = soft ? label->data<T>() : nullptr;
  HardLabels labels(*label);
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t k = 0; k < v.n; ++k) {
      for (int64_t i = 0; i < v.inner; ++i) {
        const int64_t e = (o * v.n + k) * v.inner + i;
        const int64_t r = o * v.inner + i;
        if (soft) {
          g[e] = (sd[e] - lab[e]) * dl[r];
        } else if (labels[r] == ignore) {
          g[e] = T(0);
        } else {
          g[e] = (sd[e] - (k == labels[r] ? T(1) : T(0))) * dl[r];
        }
      }
    }
  }
  return Status::Ok();
}

// ---- sigmoid_cross_entropy_with_logits --------------------------------------
// Formulas: graph/ir/ops/softmax_ops.cc.

template <typename T>
bool Ignored(T label, int ignore_index) {
  return static_cast<int>(label) == ignore_index;
}

// What normalize divides by: Paddle's count of labels farther than 1e-6
// from ignore_index (1 without normalize).
template <typename T>
T SigmoidCrossEntropyNorm(const KernelContext& ctx, const T* label, int64_t n) {
  if (!ctx.Attr<bool>("normalize")) return T(1);
  const T ignore = static_cast<T>(ctx.Attr<int>("ignore_index"));
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T diff = label[i] - ignore;
    if (diff < T(-1e-6) || diff > T(1e-6)) ++count;
  }
  return static_cast<T>(count);
}

template <typename T>
Status SigmoidCrossEntropyKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Label"}));
  const Tensor& x_t = *ctx.Input("X");
  const T* x = x_t.data<T>();
  const T* label = ctx.Input("Label")->data<T>();
  T* out = ctx.Output("Out")->data<T>();
  const int64_t n = x_t.numel();
  const int ignore_index = ctx.Attr<int>("ignore_index");
  const T norm = SigmoidCrossEntropyNorm(ctx, label, n);
  for (int64_t i = 0; i < n; ++i) {
    const T v = x[i];
    const T loss = Ignored(label[i], ignore_index)
                       ? T(0)
                       : std::max(v, T(0)) - v * label[i] +
                             std::log1p(std::exp(-std::abs(v)));
    out[i] = loss / norm;
  }
  return Status::Ok();
}

// X@GRAD = (sigmoid(X) - Label) * Out@GRAD, 0 where ignored, over the
// forward's norm.
template <typename T>
Status SigmoidCrossEntropyGradKernel(KernelContext& ctx) {
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"X", "Label", "Out@GRAD"}));
  const Tensor& x_t = *ctx.Input("X");
  const T* x = x_t.data<T>();
  const T* label = ctx.Input("Label")->data<T>();
  const T* dout = ctx.Input("Out@GRAD")->data<T>();
  T* dx = ctx.Output("X@GRAD")->data<T>();
  const int64_t n = x_t.numel();
  const int ignore_index = ctx.Attr<int>("ignore_index");
  const T norm = SigmoidCrossEntropyNorm(ctx, label, n);
  for (int64_t i = 0; i < n; ++i) {
    const T sigmoid = T(1) / (T(1) + std::exp(-x[i]));
    dx[i] = (Ignored(label[i], ignore_index) ? T(0)
                                             : (sigmoid - label[i]) * dout[i]) /
            norm;
  }
  return Status::Ok();
}

}  // namespace

void RegisterSoftmaxKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "log_softmax", LogSoftmaxKernel, float, double);
  PAREX_CPU_KERNEL(r, "log_softmax_grad", LogSoftmaxGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "softmax", SoftmaxKernel, float, double);
  PAREX_CPU_KERNEL(r, "softmax_grad", SoftmaxGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "cross_entropy", CrossEntropyKernel, float, double);
  PAREX_CPU_KERNEL(r, "cross_entropy_grad", CrossEntropyGradKernel, float,
                   double);
  PAREX_CPU_KERNEL(r, "softmax_with_cross_entropy",
                   SoftmaxWithCrossEntropyKernel, float, double);
  PAREX_CPU_KERNEL(r, "softmax_with_cross_entropy_grad",
                   SoftmaxWithCrossEntropyGradKernel, float, double);
  PAREX_CPU_KERNEL(r, "sigmoid_cross_entropy_with_logits",
                   SigmoidCrossEntropyKernel, float, double);
  PAREX_CPU_KERNEL(r, "sigmoid_cross_entropy_with_logits_grad",
                   SigmoidCrossEntropyGradKernel, float, double);
}

}  // namespace parex
