#include "graph/ir/op_role.h"

namespace parex {

int OpRole(const OpDesc& op) {
  if (!op.HasAttr("op_role")) return kOpRoleForward;
  StatusOr<int> role = op.GetAttr<int>("op_role");
  return role.ok() ? *role : kOpRoleForward;
}

std::vector<std::string> OpRoleVar(const OpDesc& op) {
  if (!op.HasAttr("op_role_var")) return {};
  StatusOr<std::vector<std::string>> v =
      op.GetAttr<std::vector<std::string>>("op_role_var");
  return v.ok() ? *v : std::vector<std::string>{};
}

std::vector<std::string> MarkedLosses(const Block& block) {
  std::vector<std::string> losses;
  for (const auto& op : block.ops()) {
    const int role = OpRole(*op);
    if ((role & kOpRoleLoss) == 0 || (role & kOpRoleBackward) != 0) continue;
    for (const std::string& out : op->OutputArgumentNames()) {
      if (!out.empty()) {
        losses.push_back(out);
        break;
      }
    }
  }
  return losses;
}

bool HasBackwardOps(const Block& block) {
  for (const auto& op : block.ops()) {
    if ((OpRole(*op) & kOpRoleBackward) != 0) return true;
  }
  return false;
}

}  // namespace parex
