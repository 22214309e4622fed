#include "graph/ssa/multi_device_checks.h"

#include <algorithm>
#include <set>
#include <vector>

#include "graph/ir/op_role.h"
#include "graph/ir/op_schema.h"

namespace parex {
namespace {

bool IsLossGradOp(const OpDesc& op) {
  return OpRole(op) == (kOpRoleBackward | kOpRoleLoss);
}

// Every var the op names is declared, and it writes no var twice (two
// unordered writes of one version).
Status CheckNames(const Block& block, const OpDesc& op) {
  std::set<std::string> written;
  for (const std::string& name : op.InputArgumentNames()) {
    if (block.FindVar(name) == nullptr) {
      return InvalidArgument(op.Label() + " reads '" + name +
                             "', which block 0 does not declare");
    }
  }
  for (const std::string& name : op.OutputArgumentNames()) {
    if (block.FindVar(name) == nullptr) {
      return InvalidArgument(op.Label() + " writes '" + name +
                             "', which block 0 does not declare");
    }
    if (!written.insert(name).second) {
      return InvalidArgument(
          op.Label() + " writes '" + name +
          "' in two output slots: two unordered writers of one version");
    }
  }
  return Status::Ok();
}

// op_role_var holds (param, grad) pairs; on a backward op each names a
// persistable parameter and a gradient the op writes.
Status CheckRoleVars(const Block& block, const OpDesc& op) {
  const std::vector<std::string> role_var = OpRoleVar(op);
  if (role_var.size() % 2 != 0) {
    return InvalidArgument(op.Label() +
                           ": op_role_var must hold (param, grad) pairs");
  }
  if ((OpRole(op) & kOpRoleBackward) == 0) return Status::Ok();
  const std::vector<std::string> outs = op.OutputArgumentNames();
  for (size_t k = 0; k < role_var.size(); k += 2) {
    const VarDesc* param = block.FindVar(role_var[k]);
    if (param == nullptr || !param->persistable()) {
      return InvalidArgument(
          op.Label() + ": op_role_var names parameter '" + role_var[k] +
          "', which is not a persistable variable of block 0");
    }
    if (std::find(outs.begin(), outs.end(), role_var[k + 1]) == outs.end()) {
      return InvalidArgument(op.Label() + ": op_role_var names gradient '" +
                             role_var[k + 1] + "' of '" + role_var[k] +
                             "', which the op does not write");
    }
  }
  return Status::Ok();
}

// The loss's gradient op (op_role Backward|Loss, at most one: -1 when
// none) against the first op producing a parameter gradient and the loss:
// there must be one when gradients are produced, and it fills loss@GRAD.
Status CheckLossGrad(const Block& block, const std::string& loss,
                     int loss_grad_op, int first_grad_op) {
  if (first_grad_op >= 0 && loss_grad_op < 0) {
    return InvalidArgument(
        "missing loss: " + block.op(first_grad_op).Label() +
        " produces a parameter gradient but no op has op_role Backward|Loss "
        "(the fill of loss@GRAD that append_backward adds)");
  }
  if (loss_grad_op < 0) return Status::Ok();
  const OpDesc& op = block.op(loss_grad_op);
  if (loss.empty()) {
    return InvalidArgument("missing loss: " + op.Label() + " fills '" +
                           op.FirstOutput("Out") +
                           "' but no loss name was given");
  }
  const std::vector<std::string> outs = op.OutputArgumentNames();
  if (outs.size() != 1 || outs[0] != GradVarName(loss)) {
    return InvalidArgument(
        op.Label() + " (op_role Backward|Loss) must write '" +
        GradVarName(loss) + "', the gradient of the loss '" + loss + "'");
  }
  return Status::Ok();
}

}  // namespace

Status CheckMultiDeviceProgram(const Block& block, const std::string& loss) {
  if (!loss.empty() && block.FindVar(loss) == nullptr) {
    return NotFound("loss '" + loss + "' is not a variable of block 0");
  }
  int loss_grad_op = -1;
  int first_grad_op = -1;
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    PAREX_RETURN_IF_ERROR(CheckNames(block, op));
    if (IsLossGradOp(op)) {
      if (loss_grad_op >= 0) {
        return InvalidArgument(op.Label() + " and " +
                               block.op(loss_grad_op).Label() +
                               " both have op_role Backward|Loss");
      }
      loss_grad_op = i;
    }
    PAREX_RETURN_IF_ERROR(CheckRoleVars(block, op));
    if ((OpRole(op) & kOpRoleBackward) != 0 && !OpRoleVar(op).empty() &&
        first_grad_op < 0) {
      first_grad_op = i;
    }
  }
  return CheckLossGrad(block, loss, loss_grad_op, first_grad_op);
}

}  // namespace parex
