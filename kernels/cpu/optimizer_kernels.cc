// sgd, momentum and adam on CPU, with Fluid's update formulas.
//
// A sparse Grad (SelectedRows, lookup_table's is_sparse), as Fluid applies
// it: sgd subtracts each row's lr * value from its row, one row after the
// other; adam with lazy_mode updates only the rows present, with each row's
// values summed; momentum and adam otherwise update every element, taking
// the rows' dense sum as the gradient (absent rows are zero).
//
// In place: every output may be the same variable as its input (ParamOut is
// Param, VelocityOut is Velocity, Beta1PowOut is Beta1Pow, ...). Each element
// reads all its inputs before writing its outputs, and scalars (learning
// rate, beta powers) are read before anything is written.
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/vector_loops.h"

namespace parex {
namespace {

// The value of a one-element fp32/fp64 input (learning rates and beta powers
// are often fp32 next to fp64 parameters).
Status ReadScalar(const KernelContext& ctx, const char* slot, double* value) {
  const Tensor* t = ctx.Input(slot);
  if (t == nullptr || t->numel() != 1) {
    return ctx.Error(std::string(slot) + " must hold one element");
  }
  switch (t->dtype()) {
    case DType::kFP32:
      *value = t->data<float>()[0];
      return Status::Ok();
    case DType::kFP64:
      *value = t->data<double>()[0];
      return Status::Ok();
    default:
      return ctx.Error(std::string(slot) + " must be fp32 or fp64, got " +
                       DTypeName(t->dtype()));
  }
}

// Writes a one-element fp32/fp64 output.
// REQUIRES: ReadScalar accepted the matching input (same dtype).
void WriteScalar(Tensor* t, double value) {
  if (t->dtype() == DType::kFP32) {
    t->data<float>()[0] = static_cast<float>(value);
  } else {
    t->data<double>()[0] = value;
  }
}

Status CheckSameCount(const KernelContext& ctx, const Tensor& param,
                      std::initializer_list<const char*> slots) {
  for (const char* slot : slots) {
    if (ctx.Input(slot)->numel() != param.numel()) {
      return ctx.Error(std::string(slot) + " " +
                       DimsToString(ctx.Input(slot)->dims()) +
                       " does not match Param " + DimsToString(param.dims()));
    }
  }
  return Status::Ok();
}

// The sparse Grad, or nullptr for a dense one.
const SelectedRows* SparseGrad(const KernelContext& ctx) {
  const Variable* v = ctx.InputVar("Grad");
  return v != nullptr ? v->GetSelectedRows() : nullptr;
}

// Checks a sparse Grad against Param: Param's dims, its dtype, rows in range.
template <typename T>
Status CheckSparseGrad(const KernelContext& ctx, const SelectedRows& g,
                       const Tensor& param) {
  if (g.dense_dims() != param.dims() || g.value.dtype() != DTypeOf<T>()) {
    return ctx.Error("sparse Grad " + std::string(DTypeName(g.value.dtype())) +
                     DimsToString(g.dense_dims()) + " does not match Param " +
                     DTypeName(param.dtype()) + DimsToString(param.dims()));
  }
  if (g.value.dim(0) != static_cast<int64_t>(g.rows.size())) {
    return ctx.Error("sparse Grad has " + std::to_string(g.rows.size()) +
                     " rows and a value of " + DimsToString(g.value.dims()));
  }
  for (int64_t r : g.rows) {
    if (r < 0 || r >= g.height) {
      return ctx.Error("sparse Grad row " + std::to_string(r) +
                       " is outside [0, " + std::to_string(g.height) + ")");
    }
  }
  return Status::Ok();
}

// The rows' dense sum, in a buffer the op keeps between runs.
struct DenseGradState : KernelState {
  Tensor dense;
  std::vector<uint8_t> touched;  // adam lazy_mode: rows present
};

template <typename T>
StatusOr<const Tensor*> DenseGrad(KernelContext& ctx, const SelectedRows& g) {
  DenseGradState* state = ctx.State<DenseGradState>();
  PAREX_RETURN_IF_ERROR(g.ToDense(&state->dense).WithContext(ctx.op().Label()));
  return &state->dense;
}

// Sparse sgd: each row, in order, ParamOut[row] -= lr * value.
template <typename T>
Status SparseSgd(KernelContext& ctx, const SelectedRows& g, T lr) {
  const Tensor* param = ctx.Input("Param");
  PAREX_RETURN_IF_ERROR(CheckSparseGrad<T>(ctx, g, *param));
  T* out = ctx.Output("ParamOut")->data<T>();
  if (out != param->data<T>())
    std::memcpy(out, param->data<T>(), param->bytes());
  const int64_t width = g.height > 0 ? param->numel() / g.height : 0;
  const T* value = g.value.data<T>();
  for (size_t i = 0; i < g.rows.size(); ++i) {
    T* row = out + g.rows[i] * width;
    const T* v = value + static_cast<int64_t>(i) * width;
    for (int64_t j = 0; j < width; ++j) row[j] -= lr * v[j];
  }
  return Status::Ok();
}

// ParamOut = Param - lr * Grad.
template <typename T>
Status SgdKernel(KernelContext& ctx) {
  if (const SelectedRows* g = SparseGrad(ctx)) {
    PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Param"}));
    double lr_value;
    PAREX_RETURN_IF_ERROR(ReadScalar(ctx, "LearningRate", &lr_value));
    return SparseSgd<T>(ctx, *g, static_cast<T>(lr_value));
  }
  PAREX_RETURN_IF_ERROR(ctx.CheckInputs<T>({"Param", "Grad"}));
  const Tensor* param = ctx.Input("Param");
  PAREX_RETURN_IF_ERROR(CheckSameCount(ctx, *param, {"Grad"}));
  double lr_value;
  PAREX_RETURN_IF_ERROR(ReadScalar(ctx, "LearningRate", &lr_value));
  const T lr = static_cast<T>(lr_value);
  const T* p = param->data<T>();
  const T* g = ctx.Input("Grad")->data<T>();
  T* out = ctx.Output("ParamOut")->data<T>();
#pragma GCC ivdep  // in place or disjoint: element i touches index i only
  for (int64_t i = 0, i_end = param->numel(); i < i_end; ++i)
    out[i] = p[i] - lr * g[i];
  return Status::Ok();
}

// g = rescale_grad * Grad (+ regularization_coeff * Param for l2_decay);
// VelocityOut = mu * Velocity + g;
// ParamOut = Param - (g + mu * VelocityOut) * lr   (use_nesterov)
//          = Param - lr * VelocityOut               (otherwise).
template <typename T>
Status MomentumKernel(KernelContext& ctx) {
  const SelectedRows* sparse = SparseGrad(ctx);
  PAREX_RETURN_IF_ERROR(
      sparse ? ctx.CheckInputs<T>({"Param", "Velocity"})
             : ctx.CheckInputs<T>({"Param", "Grad", "Velocity"}));
  const Tensor* param = ctx.Input("Param");
  const Tensor* grad_t = ctx.Input("Grad");
  if (sparse != nullptr) {
    PAREX_RETURN_IF_ERROR(CheckSparseGrad<T>(ctx, *sparse, *param));
    PAREX_ASSIGN_OR_RETURN(grad_t, DenseGrad<T>(ctx, *sparse));
  }
  PAREX_RETURN_IF_ERROR(CheckSameCount(
      ctx, *param,
      sparse ? std::initializer_list<const char*>{"Velocity"}
             : std::initializer_list<const char*>{"Grad", "Velocity"}));
  double lr_value;
  PAREX_RETURN_IF_ERROR(ReadScalar(ctx, "LearningRate", &lr_value));
  const std::string method = ctx.Attr<std::string>("regularization_method");
  if (!method.empty() && method != "l2_decay") {
    return ctx.Error("regularization_method '" + method + "' is not supported");
  }
  const T lr = static_cast<T>(lr_value);
  const T mu = static_cast<T>(ctx.Attr<float>("mu"));
  const T rescale = static_cast<T>(ctx.Attr<float>("rescale_grad"));
  const T l2 = method == "l2_decay"
                   ? static_cast<T>(ctx.Attr<float>("regularization_coeff"))
                   : T(0);
  const bool nesterov = ctx.Attr<bool>("use_nesterov");
  const T* p = param->data<T>();
  const T* grad = grad_t->data<T>();
  const T* v = ctx.Input("Velocity")->data<T>();
  T* p_out = ctx.Output("ParamOut")->data<T>();
  T* v_out = ctx.Output("VelocityOut")->data<T>();
#pragma GCC ivdep  // in place or disjoint: element i touches index i only
  for (int64_t i = 0, i_end = param->numel(); i < i_end; ++i) {
    const T pi = p[i];
    const T g = rescale * grad[i] + l2 * pi;
    const T vi = mu * v[i] + g;
    v_out[i] = vi;
    p_out[i] = nesterov ? pi - (g + mu * vi) * lr : pi - lr * vi;
  }
  return Status::Ok();
}

// adam's lazy_mode over sparse rows: the loop over each row present (once,
// however often it repeats), on that row's elements only. Elements of other
// rows are copied when an output is not its input's variable.
template <typename T>
Status LazyAdamRows(KernelContext& ctx, const SelectedRows& g,
                    const cpu::AdamLoopArgs<T>& all) {
  std::vector<uint8_t>& touched = ctx.State<DenseGradState>()->touched;
  touched.assign(static_cast<size_t>(g.height), 0);
  for (int64_t r : g.rows) touched[r] = 1;
  const int64_t width = g.height > 0 ? all.n / g.height : 0;
  auto copy = [&](T* out, const T* in) {
    if (out != in) std::memcpy(out, in, sizeof(T) * all.n);
  };
  copy(all.param_out, all.param);
  copy(all.m1_out, all.m1);
  copy(all.m2_out, all.m2);
  for (int64_t r = 0; r < g.height; ++r) {
    if (!touched[r]) continue;
    cpu::AdamLoopArgs<T> row = all;
    const int64_t at = r * width;
    row.n = width;
    row.param += at;
    row.grad += at;
    row.m1 += at;
    row.m2 += at;
    row.param_out += at;
    row.m1_out += at;
    row.m2_out += at;
    cpu::AdamLoop(row);
  }
  return Status::Ok();
}

// The GradAddends pointers of one adam op, kept between its runs.
template <typename T>
struct AddendsState : KernelState {
  std::vector<const T*> pointers;
};

// parex's GradAddends (Reduce mode's optimizer slices): other places'
// gradients, added onto Grad in order; null when there are none. Their
// pointers are kept in the op's state (no allocation after step one).
template <typename T>
StatusOr<std::vector<const T*>*> GradAddends(KernelContext& ctx,
                                             const Tensor& param) {
  const int count = ctx.InputCount("GradAddends");
  if (count == 0) return nullptr;
  std::vector<const T*>* addends = &ctx.State<AddendsState<T>>()->pointers;
  addends->clear();  // keeps its capacity
  for (int i = 0; i < count; ++i) {
    const Tensor* t = ctx.Input("GradAddends", i);
    if (t->numel() != param.numel()) {
      return ctx.Error("GradAddends " + DimsToString(t->dims()) +
                       " does not match Param " + DimsToString(param.dims()));
    }
    addends->push_back(t->data<T>());
  }
  return addends;
}

// Adam's scalars: the learning rate, the betas' powers, and beta1, beta2
// and epsilon from their tensors where bound, else the attributes.
struct AdamScalars {
  double lr = 0, beta1_pow = 0, beta2_pow = 0, beta1 = 0, beta2 = 0,
         epsilon = 0;
};

Status ReadAdamScalars(KernelContext& ctx, AdamScalars* s) {
  PAREX_RETURN_IF_ERROR(ReadScalar(ctx, "LearningRate", &s->lr));
  PAREX_RETURN_IF_ERROR(ReadScalar(ctx, "Beta1Pow", &s->beta1_pow));
  PAREX_RETURN_IF_ERROR(ReadScalar(ctx, "Beta2Pow", &s->beta2_pow));
  s->beta1 = ctx.Attr<float>("beta1");
  s->beta2 = ctx.Attr<float>("beta2");
  s->epsilon = ctx.Attr<float>("epsilon");
  const std::pair<const char*, double*> tensors[] = {
      {"Beta1Tensor", &s->beta1},
      {"Beta2Tensor", &s->beta2},
      {"EpsilonTensor", &s->epsilon}};
  for (const auto& [slot, value] : tensors) {
    if (ctx.Input(slot) != nullptr) {
      PAREX_RETURN_IF_ERROR(ReadScalar(ctx, slot, value));
    }
  }
  if (s->beta1_pow == 1.0) {
    return ctx.Error("Beta1Pow is 1: the bias correction divides by zero");
  }
  return Status::Ok();
}

// Fluid's Adam:
//   m1 = beta1 * m1 + (1 - beta1) * g;  m2 = beta2 * m2 + (1 - beta2) * g^2
//   lr_t = lr * sqrt(1 - beta2_pow) / (1 - beta1_pow)
//   param -= lr_t * m1 / (sqrt(m2) + epsilon * sqrt(1 - beta2_pow))
//   beta1_pow *= beta1; beta2_pow *= beta2  (when the outputs are bound and
//   use_global_beta_pow is off)
template <typename T>
Status AdamKernel(KernelContext& ctx) {
  const SelectedRows* sparse = SparseGrad(ctx);
  PAREX_RETURN_IF_ERROR(
      sparse ? ctx.CheckInputs<T>({"Param", "Moment1", "Moment2"})
             : ctx.CheckInputs<T>(
                   {"Param", "Grad", "Moment1", "Moment2", "GradAddends"}));
  const Tensor* param = ctx.Input("Param");
  const Tensor* grad_t = ctx.Input("Grad");
  if (sparse != nullptr) {
    if (ctx.InputCount("GradAddends") > 0) {
      return ctx.Error(
          "GradAddends with a sparse Grad (Reduce mode's sums are dense)");
    }
    PAREX_RETURN_IF_ERROR(CheckSparseGrad<T>(ctx, *sparse, *param));
    PAREX_ASSIGN_OR_RETURN(grad_t, DenseGrad<T>(ctx, *sparse));
  }
  PAREX_RETURN_IF_ERROR(CheckSameCount(ctx, *param, {"Moment1", "Moment2"}));
  if (grad_t->numel() != param->numel()) {
    return ctx.Error("Grad " + DimsToString(grad_t->dims()) +
                     " does not match Param " + DimsToString(param->dims()));
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<const T*> * addends,
                         GradAddends<T>(ctx, *param));
  AdamScalars s;
  PAREX_RETURN_IF_ERROR(ReadAdamScalars(ctx, &s));
  const T lr_t =
      static_cast<T>(s.lr * std::sqrt(1 - s.beta2_pow) / (1 - s.beta1_pow));
  const T eps_t = static_cast<T>(s.epsilon * std::sqrt(1 - s.beta2_pow));
  const cpu::AdamLoopArgs<T> args{
      param->numel(),
      param->data<T>(),
      grad_t->data<T>(),
      ctx.Input("Moment1")->data<T>(),
      ctx.Input("Moment2")->data<T>(),
      ctx.Output("ParamOut")->data<T>(),
      ctx.Output("Moment1Out")->data<T>(),
      ctx.Output("Moment2Out")->data<T>(),
      static_cast<T>(s.beta1),
      static_cast<T>(s.beta2),
      lr_t,
      eps_t,
      addends ? addends->data() : nullptr,
      addends ? static_cast<int>(addends->size()) : 0};
  if (sparse != nullptr && ctx.Attr<bool>("lazy_mode")) {
    // Only the rows present; the others keep their values and moments.
    PAREX_RETURN_IF_ERROR(LazyAdamRows(ctx, *sparse, args));
  } else {
    cpu::AdamLoop(args);
  }
  if (!ctx.Attr<bool>("use_global_beta_pow")) {
    if (Tensor* out = ctx.Output("Beta1PowOut")) {
      WriteScalar(out, s.beta1_pow * s.beta1);
    }
    if (Tensor* out = ctx.Output("Beta2PowOut")) {
      WriteScalar(out, s.beta2_pow * s.beta2);
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterOptimizerKernels(KernelRegistry* r) {
  PAREX_CPU_KERNEL(r, "sgd", SgdKernel, float, double);
  PAREX_CPU_KERNEL(r, "momentum", MomentumKernel, float, double);
  PAREX_CPU_KERNEL(r, "adam", AdamKernel, float, double);
}

}  // namespace parex
