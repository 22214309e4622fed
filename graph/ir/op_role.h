// Op roles: Fluid's OpRole bit mask and the op_role / op_role_var attributes
// every op may carry. The builder, autodiff, the multi-device pass and the
// executors read roles through these, never the attributes directly.
#pragma once

#include <string>
#include <vector>

#include "graph/ir/program.h"

namespace parex {

inline constexpr int kOpRoleForward = 0x0;
inline constexpr int kOpRoleBackward = 0x1;
inline constexpr int kOpRoleOptimize = 0x2;
inline constexpr int kOpRoleLRSched = 0x10;
inline constexpr int kOpRoleLoss = 0x100;

// The op's op_role; Forward when it carries none or an unreadable one (as
// in Fluid, where op_role defaults to Forward).
int OpRole(const OpDesc& op);
// The op's op_role_var ([param, grad, ...]); empty when it carries none.
std::vector<std::string> OpRoleVar(const OpDesc& op);

// The variables Fluid marks as the loss in `block`: the first output of each
// forward op whose op_role carries Loss (append_backward marks the op that
// computes the loss so), in op order.
std::vector<std::string> MarkedLosses(const Block& block);
// Whether `block` holds backward ops (a training program).
bool HasBackwardOps(const Block& block);

}  // namespace parex
