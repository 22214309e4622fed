// Automatic differentiation: AppendBackward adds the gradient ops of a loss to
// block 0 of a program exactly as Fluid's append_backward does:
//  - a fill_constant of 1.0 into `loss@GRAD` with op_role Backward|Loss
//  (0x101);
//  - the gradient op of every forward op on a path from a parameter (or any
//    var not stop_gradient and not in no_grad_set) to the loss, in reverse
//    program order, op_role Backward (0x1), with Fluid's op types, slots and
//    attributes (mul_grad: X, Y, Out@GRAD -> X@GRAD, Y@GRAD, ...);
//  - a var that receives several gradient contributions gets them as
//    `name@GRAD@RENAME@<k>` copies summed by a `sum` op into `name@GRAD`;
//  - op_role_var = [param, param@GRAD] on every op that produces a
//    parameter's final gradient.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "graph/ir/op_role.h"
#include "graph/ir/program.h"

namespace parex {

struct ParamGrad {
  std::string param;
  std::string grad;
};

// Returns the (param, grad) pairs of the trainable parameters (persistable,
// is_parameter, not stop_gradient) that the loss depends on, in program
// order of the parameters' declaration. When `parameter_list` is non-empty,
// only those, and one without a gradient path is an error naming it.
// Errors: unknown loss var, a loss that is not a scalar ([1] or []), an op on
// the path with no gradient op.
//
// Details (parex's choices where Fluid leaves room):
//  - the path: a var gets a gradient when it depends, through differentiable
//    input slots (those with an "X@GRAD" in the Grad spec; never
//    cross_entropy's Label), on a leaf var (written by no op) that is a
//    floating-point tensor, not stop_gradient, not in `no_grad_set`, and a
//    parameter if persistable, and the loss depends on it the same way;
//    outputs that are stop_gradient, in `no_grad_set` or integer carry no
//    gradient either. `no_grad_set` takes var names (a trailing "@GRAD" is
//    accepted). Ops off the path are skipped; so are feed, fetch,
//    fill_constant, uniform_random, gaussian_random, accuracy and ops of
//    role Backward or Optimize;
//  - a forward output whose gradient a gradient op reads but that the loss
//    does not depend on gets zeros (Fluid's fill_zeros_like): fill_constant
//    when its dims are static, else scale(var, 0);
//  - the `sum` of renamed contributions comes right after the last one;
//  - the op computing the loss gets op_role Forward|Loss (0x100), as in
//    Fluid;
//  - gradient ops are validated (ValidateOp) on a copy first: on any error
//    the program is left unchanged. A second call on the same program fails
//    (FailedPrecondition: the gradient vars exist).
StatusOr<std::vector<ParamGrad>> AppendBackward(
    Program* program, const std::string& loss,
    const std::set<std::string>& no_grad_set = {},
    const std::vector<std::string>& parameter_list = {});

}  // namespace parex
