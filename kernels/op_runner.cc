#include "kernels/op_runner.h"

#include <map>
#include <tuple>

#include "graph/ir/spec/channels_last.h"
#include "kernels/channels_last.h"
#include "kernels/control_flow.h"
#include "kernels/runtime_shape_context.h"

namespace parex {

bool ReadsSparseRows(const std::string& type) {
  // A prefetched table's rows (SelectedRows W) are read by lookups.
  return type == "sgd" || type == "momentum" || type == "adam" ||
         type == "sum" || type == "lookup_table" || type == "lookup_table_v2" ||
         type == "lookup_table_grad" || type == "lookup_table_v2_grad";
}

bool ReadsTensorLists(const std::string& type) {
  return type == "feed" || type == "read_from_array" ||
         type == "lod_array_length" || type == "tensor_array_to_tensor";
}

Status TensorListInputError(const OpDesc& op, const std::string& slot,
                            const std::string& name) {
  return Unimplemented(
      op.Label() + ": input '" + slot + "' reads '" + name +
      "', a tensor array (a list of tensors); parex reads arrays in "
      "read_from_array, lod_array_length and tensor_array_to_tensor only "
      "(no op takes an array's gradient yet)");
}

Status SparseInputError(const OpDesc& op, const std::string& slot,
                        const std::string& name) {
  return Unimplemented(op.Label() + ": input '" + slot + "' reads '" + name +
                       "', a sparse gradient (SelectedRows, lookup_table's "
                       "is_sparse); parex applies those with sgd, momentum, "
                       "adam and sum only");
}

namespace {

// Whether `name` is declared as a tensor array where `op` runs.
bool IsArrayVar(const OpDesc& op, const std::string& name) {
  const VarDesc* var =
      op.block() == nullptr ? nullptr : op.block()->FindVar(name);
  return var != nullptr && var->type() == proto::VarType::LOD_TENSOR_ARRAY;
}

}  // namespace

Status BindVariablesDeferred(const OpDesc& op, Scope* scope, KernelContext* ctx,
                             std::vector<BoundInput>* inputs) {
  for (const auto& slot : op.proto().inputs()) {
    std::vector<Variable*> vars;
    for (const std::string& name : slot.arguments()) {
      if (name.empty()) {
        vars.push_back(nullptr);
        continue;
      }
      Variable* v = scope->FindVar(name);
      if ((v == nullptr || v->IsEmpty()) && IsArrayVar(op, name)) {
        // A tensor array nothing wrote yet is an empty one (as in Paddle).
        if (v == nullptr) v = scope->Var(name);
        v->GetMutableTensorList();
      }
      if (inputs != nullptr && v != nullptr) {
        inputs->push_back({&slot.parameter(), &name, v});
      } else if (v == nullptr || v->IsEmpty()) {
        return NotFound(op.Label() + ": input '" + slot.parameter() +
                        "' reads variable '" + name +
                        "', which holds no value (not fed, loaded or "
                        "computed before)");
      } else if (v->IsSelectedRows() && !ReadsSparseRows(op.type())) {
        return SparseInputError(op, slot.parameter(), name);
      } else if (v->IsTensorList() && !ReadsTensorLists(op.type())) {
        return TensorListInputError(op, slot.parameter(), name);
      }
      vars.push_back(v);
    }
    ctx->BindInput(slot.parameter(), std::move(vars));
  }
  for (const auto& slot : op.proto().outputs()) {
    std::vector<Variable*> vars;
    for (const std::string& name : slot.arguments()) {
      if (name.empty()) {
        vars.push_back(nullptr);
        continue;
      }
      Variable* v = scope->FindVar(name);
      vars.push_back(v ? v : scope->Var(name));
    }
    ctx->BindOutput(slot.parameter(), std::move(vars));
  }
  return Status::Ok();
}

Status BindVariables(const OpDesc& op, Scope* scope, KernelContext* ctx) {
  return BindVariablesDeferred(op, scope, ctx, nullptr);
}

StatusOr<DType> KernelDType(const OpSchema& schema, const KernelContext& ctx) {
  switch (schema.kernel_dtype_rule()) {
    case KernelDTypeRule::kAny:
      return DType::kUndefined;
    case KernelDTypeRule::kFromAttr: {
      int value = ctx.Attr<int>(schema.kernel_dtype_source());
      if (!IsElementType(value)) {
        return ctx.Error("attribute '" + schema.kernel_dtype_source() + "' = " +
                         std::to_string(value) + " is no element type");
      }
      return static_cast<DType>(value);
    }
    case KernelDTypeRule::kFromInput: {
      // A tensor's dtype, or sparse rows' (SelectedRows) value's.
      auto dtype_of = [&ctx](const std::string& slot) {
        const Variable* v = ctx.InputVar(slot);
        const Tensor* t = v == nullptr ? nullptr
                          : v->GetSelectedRows() != nullptr
                              ? &v->GetSelectedRows()->value
                              : v->GetTensor();
        return t != nullptr && t->defined() ? t->dtype() : DType::kUndefined;
      };
      if (DType t = dtype_of(schema.kernel_dtype_source());
          t != DType::kUndefined)
        return t;
      for (const SlotSpec& slot : schema.inputs()) {
        if (DType t = dtype_of(slot.name); t != DType::kUndefined) return t;
      }
      return ctx.Error("cannot choose a kernel dtype: input '" +
                       schema.kernel_dtype_source() + "' holds no tensor");
    }
  }
  return Internal("unknown kernel dtype rule");
}

namespace {

// The variable output slot `slot`'s i-th name names ("" past them).
std::string OutputVarName(const KernelContext& ctx, const std::string& slot,
                          int i) {
  const auto names = ctx.op().Output(slot);
  return i < static_cast<int>(names.size()) ? names[i] : std::string();
}

// What an output becomes: its variable, dtype and shape.
struct OutputTarget {
  const std::pair<std::string, int>* key;
  Variable* var;
  DType dtype;
  const Dims* dims;
};

// An output that is also an input (in place) or another output keeps one
// dtype and shape, or the kernel would read a tensor another slot has
// just reshaped (a crafted program's top_k writing Indices over X).
Status CheckOutputTarget(KernelContext& ctx,
                         const std::vector<OutputTarget>& before,
                         const OutputTarget& target) {
  const std::string& slot = target.key->first;
  auto what = [&] {
    return DTypeName(target.dtype) + DimsToString(*target.dims);
  };
  for (const OutputTarget& t : before) {
    if (t.var == target.var &&
        (t.dtype != target.dtype || *t.dims != *target.dims)) {
      return ctx.Error("outputs '" + t.key->first + "' and '" + slot +
                       "' both write variable '" +
                       OutputVarName(ctx, slot, target.key->second) + "', as " +
                       DTypeName(t.dtype) + DimsToString(*t.dims) + " and " +
                       what());
    }
  }
  const std::string_view in_slot = ctx.InputSlotOf(target.var);
  const Tensor* in = target.var->GetTensor();
  if (!in_slot.empty() && in != nullptr && in->defined() &&
      (in->dtype() != target.dtype || in->dims() != *target.dims)) {
    return ctx.Error("output '" + slot + "' writes variable '" +
                     OutputVarName(ctx, slot, target.key->second) +
                     "' in place of its input '" + std::string(in_slot) +
                     "' (" + DTypeName(in->dtype()) + DimsToString(in->dims()) +
                     ") as " + what());
  }
  return Status::Ok();
}

}  // namespace

Status InferAndAllocateOutputs(const OpSchema& schema, KernelContext& ctx,
                               DType kernel_dtype) {
  if (!schema.infer_shape()) return Status::Ok();
  RuntimeShapeContext shapes(ctx);
  PAREX_RETURN_IF_ERROR(schema.infer_shape()(shapes));
  // Every output checked before anything is allocated.
  std::vector<OutputTarget> targets;
  for (const auto& [key, pending] : shapes.pending()) {
    if (!pending.has_dims) continue;
    for (int64_t d : pending.dims) {
      if (d < 0) {
        return ctx.Error("output '" + key.first +
                         "' inferred with unknown extent " +
                         DimsToString(pending.dims));
      }
    }
    const DType dtype =
        pending.dtype != DType::kUndefined ? pending.dtype : kernel_dtype;
    if (dtype == DType::kUndefined) {
      return ctx.Error("output '" + key.first + "' has no dtype");
    }
    const OutputTarget target{&key, ctx.OutputVar(key.first, key.second), dtype,
                              &pending.dims};
    PAREX_RETURN_IF_ERROR(CheckOutputTarget(ctx, targets, target));
    targets.push_back(target);
  }
  for (const OutputTarget& t : targets) {
    Status allocated =
        t.var->GetMutableTensor()->TryAllocate(t.dtype, *t.dims, ctx.place());
    if (!allocated.ok()) {
      return Status(allocated.code(),
                    ctx.op().Label() + ": output '" + t.key->first +
                        "' (var '" +
                        OutputVarName(ctx, t.key->first, t.key->second) +
                        "'): " + allocated.message());
    }
  }
  return Status::Ok();
}

Status RunOp(const OpDesc& op, Scope* scope, DeviceContext* device_context) {
  StatusOr<const OpSchema*> schema = OpSchemaRegistry::Global().Get(op.type());
  if (!schema.ok()) return schema.status().WithContext(op.Label());
  if ((*schema)->control_flow()) {
    return RunControlFlowOp(op, scope, device_context);
  }
  KernelContext ctx(op, device_context);
  PAREX_RETURN_IF_ERROR(BindVariables(op, scope, &ctx));
  PAREX_ASSIGN_OR_RETURN(DType dtype, KernelDType(**schema, ctx));
  StatusOr<KernelFn> kernel = KernelRegistry::Global().Find(
      {op.type(), device_context->place().kind, dtype});
  if (!kernel.ok()) return kernel.status().WithContext(op.Label());
  PAREX_RETURN_IF_ERROR(InferAndAllocateOutputs(**schema, ctx, dtype));
  Status status;
  if (ChannelsLastOf(op) != nullptr && !RunsChannelsLastNatively(ctx, dtype)) {
    ChannelsLastStatePtr state;
    status = RunChannelsLast(**schema, ctx, *kernel, dtype, &state);
  } else {
    status = (*kernel)(ctx);
  }
  if (!status.ok() && status.message().rfind(op.Label(), 0) != 0) {
    return status.WithContext(op.Label());
  }
  return status;
}

}  // namespace parex
