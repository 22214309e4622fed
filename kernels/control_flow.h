// Control flow: the ops whose schema says ControlFlow (graph/ir/ops/
// control_flow_ops.cc) run here, not through a kernel, because they need the
// scope they run in: Fluid's ParallelExecutor ran such an op as one op
// handle that executes its sub-block on its place, and so does parex.
//
// A sub-block runs op by op in program order (RunOp, so control flow nests)
// in a child scope of the op's scope: the sub-block's own non-persistable
// variables are created there, and every other name resolves to the
// enclosing scopes, which is how a branch or a loop body writes its results
// (`assign` to a variable of the parent block). Paddle 2.x semantics:
//  - conditional_block runs when its condition holds and keeps the child
//    scope in its `Scope` output for conditional_block_grad, which runs the
//    gradient block in that scope and copies each `Input`'s inner gradient
//    out (zeros shaped like the input when the branch did not run);
//  - while runs its body while the one-element bool Condition holds, at
//    most PAREX_MAX_LOOP_ITERATIONS times (then an error naming the op);
//  - select_input copies X[Mask] to Out; select_output copies X to
//    Out[Mask]; Mask is one int32 element in range.
// Conditions and masks are read from host memory: control flow runs on CPU
// places (other places get an error naming the op and the place).
#pragma once

#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/device_context.h"
#include "kernels/scope.h"

namespace parex {

// Runs control-flow op `op` in `scope` with `device_context` (which every
// op of its sub-blocks runs on). Errors name the op, and for a failing op
// of a sub-block, that op too.
Status RunControlFlowOp(const OpDesc& op, Scope* scope,
                        DeviceContext* device_context);

// Creates in `scope` each output variable of `op` that no enclosing scope
// has, so that ops after a branch that did not run find the variable.
void DeclareControlFlowOutputs(const OpDesc& op, Scope* scope);

}  // namespace parex
