// Program validation: every op has a schema, its slots and attributes match
// it, every argument names a declared variable, and shape inference over the
// declared shapes succeeds. Errors name the op (index, type, block), the slot,
// the attribute or the variable.
#pragma once

#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

Status ValidateOp(const OpDesc& op, const Block& block);
Status ValidateProgram(const Program& program);

}  // namespace parex
