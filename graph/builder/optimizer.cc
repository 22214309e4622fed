#include "graph/builder/optimizer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "graph/ir/op_schema.h"

namespace parex {
namespace {

// Fluid's name of the step counter of learning-rate schedules.
constexpr char kLrDecayCounter[] = "@LR_DECAY_COUNTER@";

using Slots = std::map<std::string, std::vector<std::string>>;
using AttrSetter = ProgramBuilder::AttrSetter;

// Appends ops to the main program the way Fluid's role guards
// (_optimized_guard, _lr_schedule_guard, name_scope) do: every op gets the
// current op_role, op_role_var (when not empty) and op_namescope besides its
// own attributes; ProgramBuilder::AppendOp validates it and infers its
// output shapes.
class OpWriter {
 public:
  explicit OpWriter(ProgramBuilder* b) : b_(b) {}

  void SetRole(int role, std::vector<std::string> role_var,
               std::string name_scope) {
    role_ = role;
    role_var_ = std::move(role_var);
    name_scope_ = std::move(name_scope);
  }

  Status Write(const std::string& type, const Slots& inputs,
               const Slots& outputs, const AttrSetter& attrs = nullptr) {
    auto set = [&](OpDesc& op) {
      if (!role_var_.empty()) op.SetAttr("op_role_var", role_var_);
      if (!name_scope_.empty()) op.SetAttr("op_namescope", name_scope_);
      if (attrs) attrs(op);
    };
    return b_->AppendOp(type, inputs, outputs, set, role_).status();
  }

 private:
  ProgramBuilder* b_;
  int role_ = kOpRoleOptimize;
  std::vector<std::string> role_var_;
  std::string name_scope_;
};

// A fresh temporary of the main program for the output of an op of `type`
// ("sqrt_0.tmp_0", as Fluid's LayerHelper names it); its dims and dtype come
// from the op's shape inference.
std::string Temporary(ProgramBuilder& b, const std::string& type) {
  return b.CreateTemporary(b.UniqueName(type))->name();
}

// A persistable var of both programs, filled with `value` by the startup
// program.
Status Persistable(ProgramBuilder& b, const std::string& name, const Dims& dims,
                   DType dtype, double value) {
  return b.CreatePersistable(name, dims, dtype, value).status();
}

// The element type of a var of the main program (kUndefined when unknown).
DType VarDType(ProgramBuilder& b, const std::string& name) {
  const VarDesc* var = b.block().FindVar(name);
  return var == nullptr ? DType::kUndefined : var->dtype();
}

AttrSetter FillConstant(const Dims& dims, DType dtype, double value,
                        bool force_cpu = false) {
  return [=](OpDesc& op) {
    op.SetAttr("shape", std::vector<int64_t>(dims.begin(), dims.end()));
    op.SetAttr("dtype", static_cast<int>(dtype));
    op.SetAttr("value", static_cast<float>(value));
    if (force_cpu) op.SetAttr("force_cpu", true);
  };
}

AttrSetter Scale(double scale, double bias = 0) {
  return [=](OpDesc& op) {
    op.SetAttr("scale", static_cast<float>(scale));
    op.SetAttr("bias", static_cast<float>(bias));
    op.SetAttr("bias_after_scale", true);
  };
}

AttrSetter Cast(DType from, DType to) {
  return [=](OpDesc& op) {
    op.SetAttr("in_dtype", static_cast<int>(from));
    op.SetAttr("out_dtype", static_cast<int>(to));
  };
}

// fluid.layers.learning_rate_scheduler._decay_step_counter(begin=0): the
// persistable int64 counter `@LR_DECAY_COUNTER@` (startup value -1),
// incremented by 1 once per run, and its fp32 value. Fluid prepends the
// increment op to the main program; parex appends it here (nothing before
// it reads the counter). A second schedule in the same program shares the
// counter and its increment, as in Fluid.
StatusOr<std::string> StepCounter(ProgramBuilder& b, OpWriter& w) {
  if (b.block().FindVar(kLrDecayCounter) == nullptr) {
    PAREX_RETURN_IF_ERROR(
        Persistable(b, kLrDecayCounter, {1}, DType::kInt64, -1));
    PAREX_RETURN_IF_ERROR(w.Write(
        "increment", {{"X", {kLrDecayCounter}}}, {{"Out", {kLrDecayCounter}}},
        [](OpDesc& op) { op.SetAttr("step", 1.0f); }));
  }
  const std::string step = Temporary(b, "cast");
  PAREX_RETURN_IF_ERROR(w.Write("cast", {{"X", {kLrDecayCounter}}},
                                {{"Out", {step}}},
                                Cast(DType::kInt64, DType::kFP32)));
  return step;
}

// fluid.layers.exponential_decay:
//   lr = value * decay_rate ^ (step / decay_steps)   (floor'd when staircase)
// as cast, scale(1/decay_steps), [floor], fill_constant(decay_rate),
// elementwise_pow, scale(value); the last writes `lr`.
Status ExponentialDecay(ProgramBuilder& b, OpWriter& w, const LearningRate& l,
                        const std::string& step, const std::string& lr) {
  std::string div = Temporary(b, "scale");
  PAREX_RETURN_IF_ERROR(
      w.Write("scale", {{"X", {step}}}, {{"Out", {div}}},
              Scale(1.0 / static_cast<double>(l.decay_steps))));
  if (l.staircase) {
    const std::string floored = Temporary(b, "floor");
    PAREX_RETURN_IF_ERROR(
        w.Write("floor", {{"X", {div}}}, {{"Out", {floored}}}));
    div = floored;
  }
  const std::string rate = Temporary(b, "fill_constant");
  PAREX_RETURN_IF_ERROR(w.Write("fill_constant", {}, {{"Out", {rate}}},
                                FillConstant({1}, DType::kFP32, l.decay_rate)));
  const std::string pow = Temporary(b, "elementwise_pow");
  PAREX_RETURN_IF_ERROR(w.Write("elementwise_pow",
                                {{"X", {rate}}, {"Y", {div}}}, {{"Out", {pow}}},
                                [](OpDesc& op) { op.SetAttr("axis", -1); }));
  return w.Write("scale", {{"X", {pow}}}, {{"Out", {lr}}}, Scale(l.value));
}

// fluid.layers.piecewise_decay: lr = values[i] for the first i with
// step < boundaries[i], else values.back(). Fluid selects with a Switch of
// conditional blocks; parex has no control flow, so the same choice is made
// with exact arithmetic on a 0/1 mask, from the last boundary to the first:
//   acc = values.back()
//   m = cast(less_than(step, boundaries[i]));  acc = m*values[i] + (1-m)*acc
// (each product is a value or 0, so no rounding), writing `lr` last.
Status PiecewiseDecay(ProgramBuilder& b, OpWriter& w, const LearningRate& l,
                      const std::string& step, const std::string& lr) {
  const size_t n = l.boundaries.size();
  std::string acc = n == 0 ? lr : Temporary(b, "fill_constant");
  PAREX_RETURN_IF_ERROR(
      w.Write("fill_constant", {}, {{"Out", {acc}}},
              FillConstant({1}, DType::kFP32, l.values.back())));
  for (size_t k = n; k-- > 0;) {
    const std::string boundary = Temporary(b, "fill_constant");
    PAREX_RETURN_IF_ERROR(
        w.Write("fill_constant", {}, {{"Out", {boundary}}},
                FillConstant({1}, DType::kFP32,
                             static_cast<double>(l.boundaries[k]), true)));
    const std::string less = Temporary(b, "less_than");
    PAREX_RETURN_IF_ERROR(w.Write(
        "less_than", {{"X", {step}}, {"Y", {boundary}}}, {{"Out", {less}}}));
    const std::string mask = Temporary(b, "cast");
    PAREX_RETURN_IF_ERROR(w.Write("cast", {{"X", {less}}}, {{"Out", {mask}}},
                                  Cast(DType::kBool, DType::kFP32)));
    const std::string pick = Temporary(b, "scale");
    PAREX_RETURN_IF_ERROR(w.Write("scale", {{"X", {mask}}}, {{"Out", {pick}}},
                                  Scale(l.values[k])));
    const std::string keep = Temporary(b, "scale");
    PAREX_RETURN_IF_ERROR(
        w.Write("scale", {{"X", {mask}}}, {{"Out", {keep}}}, Scale(-1, 1)));
    const std::string kept = Temporary(b, "elementwise_mul");
    PAREX_RETURN_IF_ERROR(w.Write(
        "elementwise_mul", {{"X", {keep}}, {"Y", {acc}}}, {{"Out", {kept}}}));
    const std::string next = k == 0 ? lr : Temporary(b, "elementwise_add");
    PAREX_RETURN_IF_ERROR(w.Write(
        "elementwise_add", {{"X", {pick}}, {"Y", {kept}}}, {{"Out", {next}}}));
    acc = next;
  }
  return Status::Ok();
}

Status CheckLearningRate(const LearningRate& l) {
  switch (l.kind) {
    case LearningRate::Kind::kConstant:
      return Status::Ok();
    case LearningRate::Kind::kExponentialDecay:
      if (l.decay_steps <= 0) {
        return InvalidArgument("exponential_decay: decay_steps " +
                               std::to_string(l.decay_steps) +
                               " must be positive");
      }
      return Status::Ok();
    case LearningRate::Kind::kPiecewiseDecay:
      if (l.values.size() != l.boundaries.size() + 1) {
        return InvalidArgument(
            "piecewise_decay: " + std::to_string(l.values.size()) +
            " values for " + std::to_string(l.boundaries.size()) +
            " boundaries; len(values) - len(boundaries) must be 1");
      }
      return Status::Ok();
  }
  return InvalidArgument("unknown learning-rate kind");
}

// The learning-rate var of Minimize, with its startup value and (for
// schedules) the LRSched ops that compute it at the start of each run:
//  - constant: "learning_rate_0" (Fluid's unique_name "learning_rate");
//  - exponential_decay: "learning_rate_0" too, written by the schedule
//    (Fluid leaves the decayed rate in a non-persistable temporary);
//  - piecewise_decay: "learning_rate", Fluid's create_global_var name.
// All are persistable fp32 [1].
StatusOr<std::string> BuildLearningRate(ProgramBuilder& b,
                                        const LearningRate& l) {
  PAREX_RETURN_IF_ERROR(CheckLearningRate(l));
  if (l.kind == LearningRate::Kind::kPiecewiseDecay) {
    const std::string lr = "learning_rate";
    if (b.block().FindVar(lr) != nullptr) {
      return InvalidArgument(
          "piecewise_decay: the main program already has a var "
          "'learning_rate'");
    }
    PAREX_RETURN_IF_ERROR(Persistable(b, lr, {1}, DType::kFP32, 0.0));
    OpWriter w(&b);
    w.SetRole(kOpRoleLRSched, {}, "");
    PAREX_ASSIGN_OR_RETURN(std::string step, StepCounter(b, w));
    PAREX_RETURN_IF_ERROR(PiecewiseDecay(b, w, l, step, lr));
    return lr;
  }
  const std::string lr = b.UniqueName("learning_rate");
  PAREX_RETURN_IF_ERROR(Persistable(b, lr, {1}, DType::kFP32, l.value));
  if (l.kind == LearningRate::Kind::kExponentialDecay) {
    OpWriter w(&b);
    w.SetRole(kOpRoleLRSched, {}, "");
    PAREX_ASSIGN_OR_RETURN(std::string step, StepCounter(b, w));
    PAREX_RETURN_IF_ERROR(ExponentialDecay(b, w, l, step, lr));
  }
  return lr;
}

// ClipGradByGlobalNorm._static_clip (Paddle 2.x): per gradient
// squared_l2_norm; sum, sqrt, fill_constant(clip_norm), elementwise_max,
// elementwise_div into the factor clip_norm / max(clip_norm, global_norm);
// then elementwise_mul of every gradient by the factor, in place. All ops
// are Optimize ops; the shared ones carry the last pair's op_role_var, as
// in Fluid.
Status ClipByGlobalNorm(ProgramBuilder& b, const std::vector<ParamGrad>& pgs,
                        double clip_norm) {
  if (pgs.empty()) return Status::Ok();
  OpWriter w(&b);
  const DType dtype = VarDType(b, pgs.front().grad);
  std::vector<std::string> squares;
  for (const ParamGrad& pg : pgs) {
    if (VarDType(b, pg.grad) != dtype) {
      return Unimplemented(
          "clip by global norm: gradient '" + pg.grad + "' is " +
          DTypeName(VarDType(b, pg.grad)) + " but '" + pgs.front().grad +
          "' is " + DTypeName(dtype) + "; mixed dtypes are not supported");
    }
    w.SetRole(kOpRoleOptimize, {pg.param, pg.grad}, "/gradient_clip/");
    squares.push_back(Temporary(b, "squared_l2_norm"));
    PAREX_RETURN_IF_ERROR(w.Write("squared_l2_norm", {{"X", {pg.grad}}},
                                  {{"Out", {squares.back()}}}));
  }
  const ParamGrad& last = pgs.back();
  w.SetRole(kOpRoleOptimize, {last.param, last.grad}, "/gradient_clip/");
  const std::string sum = Temporary(b, "sum");
  PAREX_RETURN_IF_ERROR(w.Write("sum", {{"X", squares}}, {{"Out", {sum}}}));
  const std::string norm = Temporary(b, "sqrt");
  PAREX_RETURN_IF_ERROR(w.Write("sqrt", {{"X", {sum}}}, {{"Out", {norm}}}));
  const std::string max_norm = Temporary(b, "fill_constant");
  PAREX_RETURN_IF_ERROR(w.Write("fill_constant", {}, {{"Out", {max_norm}}},
                                FillConstant({1}, dtype, clip_norm)));
  const std::string larger = Temporary(b, "elementwise_max");
  PAREX_RETURN_IF_ERROR(w.Write("elementwise_max",
                                {{"X", {max_norm}}, {"Y", {norm}}},
                                {{"Out", {larger}}}));
  const std::string factor = Temporary(b, "elementwise_div");
  PAREX_RETURN_IF_ERROR(w.Write("elementwise_div",
                                {{"X", {max_norm}}, {"Y", {larger}}},
                                {{"Out", {factor}}}));
  for (const ParamGrad& pg : pgs) {
    w.SetRole(kOpRoleOptimize, {pg.param, pg.grad}, "/gradient_clip/");
    PAREX_RETURN_IF_ERROR(w.Write("elementwise_mul",
                                  {{"X", {pg.grad}}, {"Y", {factor}}},
                                  {{"Out", {pg.grad}}}));
  }
  return Status::Ok();
}

// L2DecayRegularizer: per parameter, scale(param, coeff) into a fresh
// "_generated_var_<k>" and sum(grad, it) back into grad, Optimize ops with
// op_role_var [param, grad] (Fluid's _optimized_guard).
Status L2Decay(ProgramBuilder& b, const std::vector<ParamGrad>& pgs,
               double coeff) {
  OpWriter w(&b);
  for (const ParamGrad& pg : pgs) {
    w.SetRole(kOpRoleOptimize, {pg.param, pg.grad}, "/regularization/");
    const std::string decay = b.UniqueName("_generated_var");
    PAREX_RETURN_IF_ERROR(w.Write("scale", {{"X", {pg.param}}},
                                  {{"Out", {decay}}}, Scale(coeff)));
    PAREX_RETURN_IF_ERROR(
        w.Write("sum", {{"X", {pg.grad, decay}}}, {{"Out", {pg.grad}}}));
  }
  return Status::Ok();
}

// The dims and dtype of a parameter of the main program.
StatusOr<const VarDesc*> ParamVar(ProgramBuilder& b, const ParamGrad& pg) {
  const VarDesc* var = b.block().FindVar(pg.param);
  if (var == nullptr || var->dtype() == DType::kUndefined) {
    return NotFound("optimizer: parameter '" + pg.param +
                    "' is not a declared tensor of the main program");
  }
  return var;
}

// An accumulator "<param>_<name>_<k>" (Fluid's _add_accumulator): a
// persistable var of the parameter's dtype filled with `value` at startup.
StatusOr<std::string> Accumulator(ProgramBuilder& b, const VarDesc& param,
                                  const std::string& name, const Dims& dims,
                                  double value) {
  const std::string var = b.UniqueName(param.name() + "_" + name);
  PAREX_RETURN_IF_ERROR(Persistable(b, var, dims, param.dtype(), value));
  return var;
}

// Fluid enters name_scope("optimizer") once per update, and a name scope
// entered again gets a suffix: "/optimizer/", "/optimizer_1/", ... (Fluid
// counts per process; parex counts the scopes already in the program).
std::string NextOptimizerScope(const Block& block) {
  std::set<std::string> seen;
  for (const auto& op : block.ops()) {
    const proto::OpDesc::Attr* attr = op->FindAttr("op_namescope");
    if (attr == nullptr) continue;
    const std::string& s = attr->s();
    if (s == "/optimizer/" || s.rfind("/optimizer_", 0) == 0) seen.insert(s);
  }
  if (seen.empty()) return "/optimizer/";
  return "/optimizer_" + std::to_string(seen.size()) + "/";
}

OpWriter UpdateWriter(ProgramBuilder& b, const ParamGrad& pg) {
  OpWriter w(&b);
  w.SetRole(kOpRoleOptimize, {pg.param, pg.grad},
            NextOptimizerScope(b.block()));
  return w;
}

}  // namespace

LearningRate LearningRate::Constant(double value) {
  LearningRate l;
  l.kind = Kind::kConstant;
  l.value = value;
  return l;
}

LearningRate LearningRate::PiecewiseDecay(std::vector<int64_t> boundaries,
                                          std::vector<double> values) {
  LearningRate l;
  l.kind = Kind::kPiecewiseDecay;
  l.boundaries = std::move(boundaries);
  l.values = std::move(values);
  return l;
}

LearningRate LearningRate::ExponentialDecay(double value, int64_t decay_steps,
                                            double decay_rate, bool staircase) {
  LearningRate l;
  l.kind = Kind::kExponentialDecay;
  l.value = value;
  l.decay_steps = decay_steps;
  l.decay_rate = decay_rate;
  l.staircase = staircase;
  return l;
}

// Fluid's Optimizer.minimize: backward, then apply_gradients with the pairs
// sorted by parameter name: gradient clipping, regularisation, then the
// optimization pass (learning rate, accumulators, one update per pair).
StatusOr<std::vector<ParamGrad>> Optimizer::Minimize(
    ProgramBuilder& b, VarDesc* loss,
    const std::set<std::string>& no_grad_set) {
  if (loss == nullptr) return InvalidArgument("Minimize: loss is null");
  PAREX_RETURN_IF_ERROR(CheckLearningRate(lr_));
  if (options_.l2_decay < 0 || options_.clip_global_norm < 0) {
    return InvalidArgument(
        "Minimize: l2_decay and clip_global_norm must "
        "not be negative");
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<ParamGrad> params_grads,
                         AppendBackward(&b.main(), loss->name(), no_grad_set));
  std::vector<ParamGrad> sorted = params_grads;
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const ParamGrad& a, const ParamGrad& c) { return a.param < c.param; });
  for (const ParamGrad& pg : sorted) {
    PAREX_RETURN_IF_ERROR(ParamVar(b, pg).status());
  }
  // A schedule's ops come first (Fluid builds them before minimize); they
  // read nothing of the backward pass.
  PAREX_ASSIGN_OR_RETURN(lr_name_, BuildLearningRate(b, lr_));
  if (options_.clip_global_norm > 0) {
    PAREX_RETURN_IF_ERROR(
        ClipByGlobalNorm(b, sorted, options_.clip_global_norm));
  }
  if (options_.l2_decay > 0) {
    PAREX_RETURN_IF_ERROR(L2Decay(b, sorted, options_.l2_decay));
  }
  for (const ParamGrad& pg : sorted) {
    PAREX_RETURN_IF_ERROR(AppendUpdate(b, pg, lr_name_));
  }
  return params_grads;
}

// sgd: ParamOut = Param - lr * Grad.
Status SGDOptimizer::AppendUpdate(ProgramBuilder& b, const ParamGrad& pg,
                                  const std::string& lr) {
  OpWriter w = UpdateWriter(b, pg);
  return w.Write(
      "sgd",
      {{"Param", {pg.param}}, {"Grad", {pg.grad}}, {"LearningRate", {lr}}},
      {{"ParamOut", {pg.param}}});
}

// momentum with the accumulator "<param>_velocity_0" (zeros).
Status MomentumOptimizer::AppendUpdate(ProgramBuilder& b, const ParamGrad& pg,
                                       const std::string& lr) {
  PAREX_ASSIGN_OR_RETURN(const VarDesc* param, ParamVar(b, pg));
  PAREX_ASSIGN_OR_RETURN(
      std::string velocity,
      Accumulator(b, *param, "velocity", param->dims(), 0.0));
  OpWriter w = UpdateWriter(b, pg);
  const float mu = static_cast<float>(momentum_);
  const bool nesterov = use_nesterov_;
  return w.Write("momentum",
                 {{"Param", {pg.param}},
                  {"Grad", {pg.grad}},
                  {"Velocity", {velocity}},
                  {"LearningRate", {lr}}},
                 {{"ParamOut", {pg.param}}, {"VelocityOut", {velocity}}},
                 [mu, nesterov](OpDesc& op) {
                   op.SetAttr("mu", mu);
                   op.SetAttr("use_nesterov", nesterov);
                 });
}

// adam with the accumulators "<param>_moment1_0", "<param>_moment2_0"
// (zeros) and "<param>_beta1_pow_acc_0", "<param>_beta2_pow_acc_0" ([1],
// beta1 and beta2), all updated in place by the op.
Status AdamOptimizer::AppendUpdate(ProgramBuilder& b, const ParamGrad& pg,
                                   const std::string& lr) {
  PAREX_ASSIGN_OR_RETURN(const VarDesc* param, ParamVar(b, pg));
  PAREX_ASSIGN_OR_RETURN(std::string moment1,
                         Accumulator(b, *param, "moment1", param->dims(), 0.0));
  PAREX_ASSIGN_OR_RETURN(std::string moment2,
                         Accumulator(b, *param, "moment2", param->dims(), 0.0));
  PAREX_ASSIGN_OR_RETURN(std::string beta1_pow,
                         Accumulator(b, *param, "beta1_pow_acc", {1}, beta1_));
  PAREX_ASSIGN_OR_RETURN(std::string beta2_pow,
                         Accumulator(b, *param, "beta2_pow_acc", {1}, beta2_));
  OpWriter w = UpdateWriter(b, pg);
  const float beta1 = static_cast<float>(beta1_);
  const float beta2 = static_cast<float>(beta2_);
  const float epsilon = static_cast<float>(epsilon_);
  return w.Write("adam",
                 {{"Param", {pg.param}},
                  {"Grad", {pg.grad}},
                  {"LearningRate", {lr}},
                  {"Moment1", {moment1}},
                  {"Moment2", {moment2}},
                  {"Beta1Pow", {beta1_pow}},
                  {"Beta2Pow", {beta2_pow}}},
                 {{"ParamOut", {pg.param}},
                  {"Moment1Out", {moment1}},
                  {"Moment2Out", {moment2}},
                  {"Beta1PowOut", {beta1_pow}},
                  {"Beta2PowOut", {beta2_pow}}},
                 [beta1, beta2, epsilon](OpDesc& op) {
                   op.SetAttr("beta1", beta1);
                   op.SetAttr("beta2", beta2);
                   op.SetAttr("epsilon", epsilon);
                   op.SetAttr("lazy_mode", false);
                   op.SetAttr("min_row_size_to_use_multithread", int64_t{1000});
                 });
}

}  // namespace parex
