// The gradient op makers of AppendBackward, internal to
// graph/builder/backward.cc: how a forward op passes gradients to its inputs
// (DescribeOp), and the GradOpPlanner that emits Fluid's gradient ops for it:
// the generic maker from the op schema's Grad spec and the special makers of
// scale, assign, cast, split and sum. Not part of the graph API; callers use
// AppendBackward (graph/builder/backward.h).
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/status.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/program.h"

namespace parex {
namespace backward_internal {

using NameSet = std::unordered_set<std::string>;

bool EndsWith(std::string_view s, std::string_view suffix);

// "x@GRAD" -> "x"; "x@GRAD@RENAME@1" -> "x" (Fluid's _strip_grad_suffix_).
std::string StripGradSuffix(const std::string& name);

// How a forward op passes gradients to its inputs.
enum class GradKind {
  kSchema,  // the gradient op of its schema's Grad spec
  kScale,   // Fluid's grad makers that emit other op types
  kAssign,
  kCast,
  kSplit,
  kSum,
  kNone,     // passes no gradient (initialisers, metrics, feed/fetch, ...)
  kMissing,  // differentiable in principle, but parex has no gradient op
};

struct OpInfo {
  GradKind kind = GradKind::kNone;
  const OpSchema* schema = nullptr;
  std::vector<std::string> diff_slots;  // input slots that receive gradients
};

// The GradKind of `op` and its differentiable input slots. kNone for feed,
// fetch, initialisers, accuracy and ops of role Backward or Optimize.
OpInfo DescribeOp(const OpDesc& op);

// Collects the backward ops, in order, as protobuf OpDescs; every op but the
// loss gradient gets op_role Backward. `block` (the forward block) and
// `needs` (the vars that get a gradient var) must outlive the planner.
class GradOpPlanner {
 public:
  GradOpPlanner(const Block& block, const NameSet& needs)
      : block_(block), needs_(needs) {}

  // fill_constant 1.0 into `loss@GRAD`, op_role Backward|Loss.
  void AddLossGrad(const VarDesc& loss);
  // The gradient ops of forward `op` described by `info` (kind kSchema, or
  // one of the special makers). Errors: a kind with no maker (Internal), a
  // schema gradient that does not read the gradient of an output the loss
  // depends on (Unimplemented), missing attributes of the forward op.
  Status AddGradOps(const OpDesc& op, const OpInfo& info);

  std::vector<proto::OpDesc> Release() { return std::move(ops_); }

 private:
  bool Needs(const std::string& name) const;

  // The gradient var written for forward input `var`; "" when it needs none.
  std::string InputGrad(const std::string& var) const;

  // The gradient of forward output `var` that a gradient op reads. An output
  // the loss does not depend on gets a zero gradient (Fluid's
  // fill_zeros_like): fill_constant when its dims are known, else
  // scale(var, 0).
  std::string OutputGrad(const std::string& var);

  Status Push(proto::OpDesc desc);

  // The gradient op of the schema's Grad spec: it reads forward inputs and
  // outputs by slot and the outputs' gradients ("Out@GRAD"), and writes
  // "X@GRAD" for the inputs that need a gradient. Like Fluid, a slot of one
  // variable that needs none is left empty; a duplicable slot keeps the
  // positions, with "" for inputs that need none.
  Status AddSchemaGrad(const OpDesc& op, const OpSchema& schema);
  // scale's gradient: a scale by the same factor, no bias.
  Status AddScaleGrad(const OpDesc& op);
  // cast's gradient: the cast back.
  Status AddCastGrad(const OpDesc& op);
  // sum's gradient: one scale(1) per input that needs one (as Fluid).
  Status AddSumGrad(const OpDesc& op);

  const Block& block_;
  const NameSet& needs_;
  std::vector<proto::OpDesc> ops_;
  std::set<std::string> zeroed_;  // outputs already given a zero gradient
};

}  // namespace backward_internal
}  // namespace parex
