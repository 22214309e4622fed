// Control flow, as Paddle's `paddle.jit.to_static` and `paddle.static.nn`
// write it (their semantics: kernels/control_flow.h, which runs them):
//  - conditional_block: runs `sub_block` in a child scope when Cond holds
//    (one bool element with is_scalar_condition, else every Cond non-empty);
//    the child scope is kept in `Scope` for conditional_block_grad.
//  - conditional_block_grad: runs the gradient block in that scope and hands
//    the gradients of `Input` out (zeros when the branch did not run).
//  - while: runs `sub_block` while Condition (one bool) holds, a step scope
//    per iteration kept in `StepScopes` (one reused with is_test);
//    while_grad runs the gradient block in those scopes, last first.
//  - select_input: Out = X[Mask]; select_output: Out[Mask] = X (each the
//    other's gradient).
// None has a kernel or run-time shape inference: the outputs are whatever
// the sub-block or the chosen input writes. At compile time each checks its
// sub-block attribute names a child block of the op's block.
#include <string>

#include "graph/ir/ops/op_groups.h"

namespace parex {
namespace {

Status CheckSubBlock(ShapeContext& ctx) {
  if (ctx.IsRuntime()) return Status::Ok();
  return ctx.op().SubBlock("sub_block").status();
}

}  // namespace

void RegisterControlFlowOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("conditional_block")
             .Input("Cond", kDuplicable)
             .Input("Input", kOptional | kDuplicable)
             .Output("Out", kOptional | kDuplicable)
             .Output("Scope")
             .RequiredAttr("sub_block", proto::BLOCK)
             .Attr("is_scalar_condition", false)
             .KernelDTypeAny()
             .ControlFlow()
             .InferShape(CheckSubBlock));
  r->Add(OpSchema("conditional_block_grad")
             .Input("Cond", kDuplicable)
             .Input("Input", kOptional | kDuplicable)
             .Input("Out", kOptional | kDuplicable)
             .Input("Out@GRAD", kOptional | kDuplicable)
             .Input("Scope")
             .Output("Input@GRAD", kOptional | kDuplicable)
             .RequiredAttr("sub_block", proto::BLOCK)
             .Attr("is_scalar_condition", false)
             .KernelDTypeAny()
             .ControlFlow()
             .InferShape(CheckSubBlock));
  r->Add(OpSchema("while")
             .Input("X", kOptional | kDuplicable)
             .Input("Condition")
             .Output("Out", kOptional | kDuplicable)
             .Output("StepScopes")
             .Inplace("X", "Out")
             .RequiredAttr("sub_block", proto::BLOCK)
             .Attr("is_test", false)
             .KernelDTypeAny()
             .ControlFlow()
             .InferShape(CheckSubBlock));
  r->Add(OpSchema("while_grad")
             .Input("X", kOptional | kDuplicable)
             .Input("Out", kOptional | kDuplicable)
             .Input("Out@GRAD", kOptional | kDuplicable)
             .Input("StepScopes")
             .Output("X@GRAD", kOptional | kDuplicable)
             .Inplace("Out@GRAD", "X@GRAD")
             .RequiredAttr("sub_block", proto::BLOCK)
             .Attr("original_output_grad", std::vector<std::string>{})
             .Attr("is_test", false)
             .KernelDTypeAny()
             .ControlFlow()
             .InferShape(CheckSubBlock));
  r->Add(OpSchema("select_input")
             .Input("X", kDuplicable)
             .Input("Mask")
             .Output("Out")
             .KernelDTypeAny()
             .ControlFlow());
  r->Add(OpSchema("select_output")
             .Input("X")
             .Input("Mask")
             .Output("Out", kDuplicable)
             .KernelDTypeAny()
             .ControlFlow());
}

}  // namespace parex
