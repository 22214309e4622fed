// Running one op: bind its variables from a scope, infer output shapes from
// the actual input tensors (the schema's shape inference at run time),
// allocate outputs, pick the kernel for (op type, place kind, dtype) and run
// it. The reference executor is a loop over this; the actor runtime reuses
// its pieces.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/program.h"
#include "kernels/device_context.h"
#include "kernels/kernel_context.h"
#include "kernels/kernel_registry.h"
#include "kernels/scope.h"

namespace parex {

// Binds every slot of `op` to variables of `scope` (outputs created in
// `scope` itself when no ancestor has them; a missing input is an error
// naming the op and variable).
Status BindVariables(const OpDesc& op, Scope* scope, KernelContext* ctx);

// The dtype that selects the op's kernel (kUndefined for dtype-agnostic ops).
StatusOr<DType> KernelDType(const OpSchema& schema, const KernelContext& ctx);

// Runs the schema's shape inference on the bound tensors and allocates the
// outputs on the context's place.
Status InferAndAllocateOutputs(const OpSchema& schema, KernelContext& ctx,
                               DType kernel_dtype);

// All of the above; errors are prefixed with the op's label.
Status RunOp(const OpDesc& op, Scope* scope, DeviceContext* device_context);

// BindVariables, except that each input argument the scope has is listed in
// `inputs` (when not null) instead of being checked for a value now: a
// PreparedOp checks their values at every run.
struct BoundInput {
  const std::string* slot;
  const std::string* name;
  const Variable* var;
};
Status BindVariablesDeferred(const OpDesc& op, Scope* scope, KernelContext* ctx,
                             std::vector<BoundInput>* inputs);

// Ops whose kernels take a sparse gradient (SelectedRows) as an input, and
// the error for any other op given one.
bool ReadsSparseRows(const std::string& type);
// Ops whose kernels read a tensor array (a variable's tensor list), and the
// error for any other op given one.
bool ReadsTensorLists(const std::string& type);
Status TensorListInputError(const OpDesc& op, const std::string& slot,
                            const std::string& name);
Status SparseInputError(const OpDesc& op, const std::string& slot,
                        const std::string& name);

}  // namespace parex
