// Optimizers in Fluid's shape: Minimize(loss) = AppendBackward, then L2
// regularisation and gradient clipping by global norm (ops on the gradients),
// then one update op per parameter (sgd / momentum / adam) with op_role
// Optimize and op_role_var [param, grad]. The learning rate is a persistable
// fp32 [1] variable; schedules compute it with ops of op_role LRSched from a
// global step counter (`@LR_DECAY_COUNTER@`, incremented once per run).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/builder/backward.h"
#include "graph/builder/layers.h"

namespace parex {

struct LearningRate {
  enum class Kind { kConstant, kPiecewiseDecay, kExponentialDecay };
  Kind kind = Kind::kConstant;
  double value = 0.01;  // kConstant, and the base of kExponentialDecay
  std::vector<int64_t> boundaries;  // kPiecewiseDecay: step boundaries
  std::vector<double> values;  // kPiecewiseDecay: boundaries.size()+1 values
  int64_t decay_steps = 1;     // kExponentialDecay
  double decay_rate = 1.0;     // kExponentialDecay
  bool staircase = false;      // kExponentialDecay

  static LearningRate Constant(double value);
  static LearningRate PiecewiseDecay(std::vector<int64_t> boundaries,
                                     std::vector<double> values);
  static LearningRate ExponentialDecay(double value, int64_t decay_steps,
                                       double decay_rate, bool staircase);
};

struct OptimizerOptions {
  double l2_decay = 0;          // L2 regularisation coefficient (0: off)
  double clip_global_norm = 0;  // gradient clipping by global norm (0: off)
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Appends backward, regularisation, clipping, the learning-rate ops and
  // the update ops. Returns the (param, grad) pairs it updates.
  //
  // What it appends, in order, follows Fluid's minimize / apply_gradients:
  //  1. AppendBackward;
  //  2. a schedule's LRSched (0x10) ops: increment of `@LR_DECAY_COUNTER@`
  //     (int64 [1], startup -1, so the first run sees step 0), cast to fp32,
  //     then the schedule's arithmetic, writing the learning-rate var;
  //  3. with the pairs sorted by parameter name, every op below of role
  //     Optimize (0x2) with op_role_var [param, grad]:
  //     clipping by global norm (Paddle 2.x: squared_l2_norm per gradient,
  //     sum, sqrt, fill_constant, elementwise_max, elementwise_div, then
  //     elementwise_mul of each gradient in place; the shared ops carry the
  //     last pair), then L2 (scale(param) into "_generated_var_<k>", sum into
  //     the gradient in place), then one update op per parameter.
  // Startup: the learning rate, then each parameter's accumulators
  // ("<param>_velocity_0", "<param>_moment1_0", "<param>_moment2_0",
  // "<param>_beta1_pow_acc_0", "<param>_beta2_pow_acc_0").
  // Errors: a null loss, a bad schedule (piecewise values not one more than
  // boundaries, decay_steps <= 0), negative options, AppendBackward's.
  StatusOr<std::vector<ParamGrad>> Minimize(
      ProgramBuilder& b, VarDesc* loss,
      const std::set<std::string>& no_grad_set = {});
  // The learning-rate var (valid after Minimize): persistable fp32 [1],
  // "learning_rate_0" (constant, exponential decay) or "learning_rate"
  // (piecewise decay, Fluid's name).
  const std::string& learning_rate_name() const { return lr_name_; }

 protected:
  Optimizer(LearningRate lr, OptimizerOptions options)
      : lr_(std::move(lr)), options_(options) {}
  // Appends the update op(s) of one parameter.
  virtual Status AppendUpdate(ProgramBuilder& b, const ParamGrad& pg,
                              const std::string& lr) = 0;

  LearningRate lr_;
  OptimizerOptions options_;
  std::string lr_name_;
};

class SGDOptimizer : public Optimizer {
 public:
  explicit SGDOptimizer(LearningRate lr, OptimizerOptions options = {})
      : Optimizer(std::move(lr), options) {}

 protected:
  Status AppendUpdate(ProgramBuilder& b, const ParamGrad& pg,
                      const std::string& lr) override;
};

class MomentumOptimizer : public Optimizer {
 public:
  MomentumOptimizer(LearningRate lr, double momentum, bool use_nesterov = false,
                    OptimizerOptions options = {})
      : Optimizer(std::move(lr), options),
        momentum_(momentum),
        use_nesterov_(use_nesterov) {}

 protected:
  Status AppendUpdate(ProgramBuilder& b, const ParamGrad& pg,
                      const std::string& lr) override;

 private:
  double momentum_;
  bool use_nesterov_;
};

class AdamOptimizer : public Optimizer {
 public:
  explicit AdamOptimizer(LearningRate lr, double beta1 = 0.9,
                         double beta2 = 0.999, double epsilon = 1e-8,
                         OptimizerOptions options = {})
      : Optimizer(std::move(lr), options),
        beta1_(beta1),
        beta2_(beta2),
        epsilon_(epsilon) {}

 protected:
  Status AppendUpdate(ProgramBuilder& b, const ParamGrad& pg,
                      const std::string& lr) override;

 private:
  double beta1_, beta2_, epsilon_;
};

}  // namespace parex
