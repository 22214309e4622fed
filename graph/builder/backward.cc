#include "graph/builder/backward.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "graph/builder/grad_maker.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"

namespace parex {
namespace {

using backward_internal::DescribeOp;
using backward_internal::EndsWith;
using backward_internal::GradKind;
using backward_internal::GradOpPlanner;
using backward_internal::NameSet;
using backward_internal::OpInfo;
using backward_internal::StripGradSuffix;

constexpr std::string_view kRenameInfix = "@RENAME@";

// A var that can carry a gradient: a tensor of a floating-point (or not yet
// known) element type.
bool IsFloatTensor(const VarDesc& v) {
  if (!v.is_tensor()) return false;
  switch (v.dtype()) {
    case DType::kFP16:
    case DType::kFP32:
    case DType::kFP64:
    case DType::kBF16:
    case DType::kUndefined:
      return true;
    default:
      return false;
  }
}

std::vector<std::string> DiffInputs(const OpDesc& op, const OpInfo& info) {
  std::vector<std::string> names;
  for (const std::string& slot : info.diff_slots) {
    for (const std::string& arg : op.Input(slot)) {
      if (!arg.empty()) names.push_back(arg);
    }
  }
  return names;
}

// Which vars get gradients, and which forward ops are differentiated.
struct Analysis {
  NameSet needs;          // vars that get a gradient var
  std::vector<int> path;  // forward op indices, in reverse program order
};

// The vars that depend on a var that may have a gradient (a trainable
// parameter or another leaf that is not stop_gradient), through
// differentiable slots.
NameSet ForwardReach(const Block& block, const std::set<std::string>& no_grad,
                     const std::vector<OpInfo>& infos) {
  auto may_have_grad = [&](const std::string& name) {
    if (name.empty() || no_grad.count(name) > 0) return false;
    const VarDesc* v = block.FindVar(name);
    return v != nullptr && !v->stop_gradient() && IsFloatTensor(*v);
  };
  NameSet produced;
  for (const auto& op : block.ops()) {
    for (const std::string& out : op->OutputArgumentNames()) {
      produced.insert(out);
    }
  }
  NameSet forward;
  for (const auto& v : block.vars()) {
    if (produced.count(v->name()) == 0 && may_have_grad(v->name()) &&
        (!v->persistable() || v->is_parameter())) {
      forward.insert(v->name());
    }
  }
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    bool reached = false;
    for (const std::string& in : DiffInputs(op, infos[i])) {
      reached |= forward.count(in) > 0;
    }
    if (!reached) continue;
    for (const std::string& out : op.OutputArgumentNames()) {
      if (may_have_grad(out)) forward.insert(out);
    }
  }
  return forward;
}

// Op i, on the gradient path, has a gradient op and is the only writer of
// each of its outputs the loss depends on (`writer`: who wrote them).
Status CheckOnPath(const Block& block, int i, const OpInfo& info,
                   const std::string& loss, const NameSet& backward,
                   std::unordered_map<std::string, int>* writer) {
  const OpDesc& op = block.op(i);
  if (info.kind == GradKind::kMissing) {
    return InvalidArgument("append_backward: " + op.Label() +
                           " lies on the gradient path to loss '" + loss +
                           "' but has no gradient op");
  }
  for (const std::string& out : op.OutputArgumentNames()) {
    if (backward.count(out) == 0) continue;
    auto [it, first] = writer->emplace(out, i);
    if (!first && it->second != i) {
      return Unimplemented(
          "append_backward: '" + out + "' is written by " + op.Label() +
          " and by " + block.op(it->second).Label() +
          "; gradients through overwritten variables are not supported");
    }
  }
  return Status::Ok();
}

// A var needs a gradient when it depends on a var that may have one and the
// loss depends on it, both through differentiable slots.
StatusOr<Analysis> Analyze(const Block& block, const std::string& loss,
                           const std::set<std::string>& no_grad,
                           const std::vector<OpInfo>& infos) {
  const NameSet forward = ForwardReach(block, no_grad, infos);
  Analysis a;
  NameSet backward;  // the loss depends on it
  if (forward.count(loss) > 0) backward.insert(loss);
  std::unordered_map<std::string, int> writer;
  for (int i = block.num_ops() - 1; i >= 0; --i) {
    const OpDesc& op = block.op(i);
    if (infos[i].kind == GradKind::kNone) continue;
    bool reaches = false;
    for (const std::string& out : op.OutputArgumentNames()) {
      reaches |= backward.count(out) > 0;
    }
    if (!reaches) continue;
    std::vector<std::string> inputs;
    for (const std::string& in : DiffInputs(op, infos[i])) {
      if (forward.count(in) > 0) inputs.push_back(in);
    }
    if (inputs.empty()) continue;
    PAREX_RETURN_IF_ERROR(
        CheckOnPath(block, i, infos[i], loss, backward, &writer));
    a.path.push_back(i);
    backward.insert(inputs.begin(), inputs.end());
  }
  for (const std::string& name : backward) {
    if (forward.count(name) > 0) a.needs.insert(name);
  }
  return a;
}

// ---- accumulation, roles, materialisation -----------------------------------

// A var written by several ops gets each contribution as
// "name@RENAME@<k>" (k in write order) and a sum op writing "name" right
// after the last contribution.
std::vector<proto::OpDesc> AccumulateGradients(std::vector<proto::OpDesc> ops) {
  struct Write {
    size_t op;
    int slot;
    int arg;
  };
  std::map<std::string, std::vector<Write>> writes;
  std::vector<std::string> order;  // names in first-write order
  for (size_t i = 0; i < ops.size(); ++i) {
    NameSet inputs;
    for (const auto& slot : ops[i].inputs()) {
      inputs.insert(slot.arguments().begin(), slot.arguments().end());
    }
    for (int s = 0; s < ops[i].outputs_size(); ++s) {
      const auto& args = ops[i].outputs(s).arguments();
      for (int a = 0; a < args.size(); ++a) {
        const std::string& name = args.Get(a);
        if (name.empty() || inputs.count(name) > 0) continue;  // in place
        auto& w = writes[name];
        if (w.empty()) order.push_back(name);
        w.push_back({i, s, a});
      }
    }
  }
  std::vector<std::vector<proto::OpDesc>> sums_after(ops.size());
  for (const std::string& name : order) {
    const auto& w = writes[name];
    if (w.size() < 2) continue;
    std::vector<std::string> parts;
    for (size_t k = 0; k < w.size(); ++k) {
      parts.push_back(name + std::string(kRenameInfix) + std::to_string(k));
      ops[w[k].op].mutable_outputs(w[k].slot)->set_arguments(w[k].arg,
                                                             parts.back());
    }
    proto::OpDesc sum;
    sum.set_type("sum");
    OpDesc view(&sum, 0, -1);
    view.SetInput("X", parts);
    view.SetOutput("Out", {name});
    view.SetAttr<bool>("use_mkldnn", false);
    view.SetAttr<int>("op_role", kOpRoleBackward);
    sums_after[w.back().op].push_back(std::move(sum));
  }
  std::vector<proto::OpDesc> result;
  for (size_t i = 0; i < ops.size(); ++i) {
    result.push_back(std::move(ops[i]));
    for (auto& sum : sums_after[i]) result.push_back(std::move(sum));
  }
  return result;
}

bool Writes(const proto::OpDesc& op, const std::string& name) {
  for (const auto& slot : op.outputs()) {
    for (const auto& arg : slot.arguments()) {
      if (arg == name) return true;
    }
  }
  return false;
}

// Fluid: the last op writing a parameter's gradient carries
// op_role_var = [param, grad] + what it had (so an op producing several
// parameters' gradients lists the last parameter first).
void SetOpRoleVars(std::vector<proto::OpDesc>* ops,
                   const std::vector<ParamGrad>& pairs) {
  for (const ParamGrad& pg : pairs) {
    for (auto it = ops->rbegin(); it != ops->rend(); ++it) {
      if (!Writes(*it, pg.grad)) continue;
      OpDesc op(&*it, 0, -1);
      std::vector<std::string> value = {pg.param, pg.grad};
      if (const auto* attr = op.FindAttr("op_role_var")) {
        StatusOr<std::vector<std::string>> old =
            ReadAttr<std::vector<std::string>>(*attr);
        if (old.ok()) value.insert(value.end(), old->begin(), old->end());
      }
      op.SetAttr<std::vector<std::string>>("op_role_var", value);
      break;
    }
  }
}

// Declares the vars the backward ops write (dtype and dims of the forward
// var) and appends the ops to `block`; with `validate`, checks each op.
Status Materialize(Block* block, const std::vector<proto::OpDesc>& ops,
                   bool validate) {
  for (const proto::OpDesc& op : ops) {
    for (const auto& slot : op.outputs()) {
      for (const std::string& name : slot.arguments()) {
        if (name.empty() || block->FindVar(name) != nullptr) continue;
        const VarDesc* forward = block->FindVar(StripGradSuffix(name));
        VarDesc* v = block->Var(name);
        if (forward == nullptr) continue;
        if (forward->dtype() != DType::kUndefined) {
          v->SetDType(forward->dtype());
        }
        v->SetDims(forward->dims());
      }
    }
  }
  for (const proto::OpDesc& desc : ops) {
    OpDesc* op = block->AppendOp(desc.type());
    *op->mutable_proto() = desc;
    PAREX_RETURN_IF_ERROR(FillDefaultAttrs(op));
    if (validate) PAREX_RETURN_IF_ERROR(ValidateOp(*op, *block));
  }
  return Status::Ok();
}

std::string NoGradientReason(const VarDesc& v,
                             const std::set<std::string>& no_grad) {
  if (no_grad.count(v.name()) > 0) return " (it is in no_grad_set)";
  if (v.stop_gradient()) return " (it is stop_gradient)";
  if (!IsFloatTensor(v)) return " (it is no floating-point tensor)";
  return "";
}

}  // namespace

namespace {

// The loss: a floating-point scalar ([1] or []) variable of block 0.
StatusOr<const VarDesc*> LossVar(const Block& block, const std::string& loss) {
  const VarDesc* loss_var = block.FindLocalVar(loss);
  if (loss_var == nullptr) {
    return NotFound("append_backward: loss '" + loss +
                    "' is not a variable of block 0");
  }
  const Dims loss_dims = loss_var->dims();
  if (!loss_dims.empty() && Numel(loss_dims) != 1) {
    return InvalidArgument("append_backward: loss '" + loss + "' has dims " +
                           DimsToString(loss_dims) +
                           ", not a scalar ([1] or [])");
  }
  if (!IsFloatTensor(*loss_var)) {
    return InvalidArgument("append_backward: loss '" + loss +
                           "' is not a floating-point tensor");
  }
  return loss_var;
}

// The (parameter, gradient) pairs: the listed parameters (each must have a
// gradient path to the loss), or every trainable parameter that has one.
StatusOr<std::vector<ParamGrad>> ParamGrads(
    const Block& block, const std::string& loss,
    const std::set<std::string>& no_grad,
    const std::vector<std::string>& parameter_list, const NameSet& needs) {
  std::set<std::string> listed;
  for (const std::string& name : parameter_list) {
    const VarDesc* v = block.FindVar(name);
    if (v == nullptr) {
      return NotFound("append_backward: parameter '" + name +
                      "' is not a variable of block 0");
    }
    if (needs.count(name) == 0) {
      return InvalidArgument("append_backward: parameter '" + name +
                             "' has no gradient path to loss '" + loss + "'" +
                             NoGradientReason(*v, no_grad));
    }
    listed.insert(name);
  }
  std::vector<ParamGrad> pairs;
  for (const auto& v : block.vars()) {
    const bool wanted =
        parameter_list.empty()
            ? v->is_parameter() && v->persistable() && !v->stop_gradient()
            : listed.count(v->name()) > 0;
    if (wanted && needs.count(v->name()) > 0) {
      pairs.push_back({v->name(), GradVarName(v->name())});
    }
  }
  return pairs;
}

// No gradient op writes a variable the block already has (a backward pass
// appended twice).
Status CheckNewOutputs(const Block& block,
                       const std::vector<proto::OpDesc>& ops) {
  for (const proto::OpDesc& op : ops) {
    for (const auto& slot : op.outputs()) {
      for (const std::string& name : slot.arguments()) {
        if (!name.empty() && block.FindVar(name) != nullptr) {
          return FailedPrecondition(
              "append_backward: variable '" + name +
              "' already exists (was the backward pass appended before?)");
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<ParamGrad>> AppendBackward(
    Program* program, const std::string& loss,
    const std::set<std::string>& no_grad_set,
    const std::vector<std::string>& parameter_list) {
  PAREX_CHECK(program != nullptr, "AppendBackward: null program");
  Block& block = program->global_block();
  PAREX_ASSIGN_OR_RETURN(const VarDesc* loss_var, LossVar(block, loss));
  std::set<std::string> no_grad;
  for (const std::string& name : no_grad_set) {
    no_grad.insert(EndsWith(name, kGradSuffix) ? StripGradSuffix(name) : name);
  }
  std::vector<OpInfo> infos;
  for (const auto& op : block.ops()) infos.push_back(DescribeOp(*op));
  PAREX_ASSIGN_OR_RETURN(Analysis analysis,
                         Analyze(block, loss, no_grad, infos));
  PAREX_ASSIGN_OR_RETURN(
      std::vector<ParamGrad> pairs,
      ParamGrads(block, loss, no_grad, parameter_list, analysis.needs));
  GradOpPlanner planner(block, analysis.needs);
  planner.AddLossGrad(*loss_var);
  for (int i : analysis.path) {
    PAREX_RETURN_IF_ERROR(planner.AddGradOps(block.op(i), infos[i]));
  }
  std::vector<proto::OpDesc> ops = AccumulateGradients(planner.Release());
  SetOpRoleVars(&ops, pairs);
  PAREX_RETURN_IF_ERROR(CheckNewOutputs(block, ops));
  // Check on a copy first, so that an error leaves the program unchanged.
  {
    Program trial(*program);
    PAREX_RETURN_IF_ERROR(
        Materialize(&trial.global_block(), ops, /*validate=*/true));
  }
  // Fluid marks the op computing the loss Forward|Loss.
  for (int i = block.num_ops() - 1; i >= 0; --i) {
    const auto outs = block.op(i).OutputArgumentNames();
    if (std::find(outs.begin(), outs.end(), loss) != outs.end()) {
      block.op(i).SetAttr<int>("op_role", kOpRoleForward | kOpRoleLoss);
      break;
    }
  }
  PAREX_RETURN_IF_ERROR(Materialize(&block, ops, /*validate=*/false));
  return pairs;
}

}  // namespace parex
