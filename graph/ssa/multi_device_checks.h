// What the multi-device pass (multi_device_builder.h) checks of block 0
// before it builds: every var an op names is declared and written once per
// op; op_role_var holds (persistable parameter, gradient the op writes)
// pairs; at most one op of role Backward|Loss, present when gradients are,
// writing the loss's gradient (`loss` given then). Errors name the op, var
// and loss.
#pragma once

#include <string>

#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

Status CheckMultiDeviceProgram(const Block& block, const std::string& loss);

}  // namespace parex
