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

}  // namespace parex
