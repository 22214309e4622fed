#include "kernels/op_runner.h"

#include <map>
#include <tuple>

#include "kernels/control_flow.h"

namespace parex {
namespace {

// Run-time ShapeContext: input dims are the tensors' dims; output dims and
// dtypes are collected and applied by InferAndAllocateOutputs.
class RuntimeShapeContext : public ShapeContext {
 public:
  explicit RuntimeShapeContext(const KernelContext& ctx) : ctx_(ctx) {}

  const OpDesc& op() const override { return ctx_.op(); }
  bool IsRuntime() const override { return true; }
  int InputCount(std::string_view slot) const override {
    return ctx_.InputCount(slot);
  }
  int OutputCount(std::string_view slot) const override {
    return ctx_.OutputCount(slot);
  }
  // A sparse gradient (SelectedRows) has the dims of the dense tensor it
  // stands for.
  Dims InputDims(std::string_view slot, int i) const override {
    if (const SelectedRows* s = Sparse(slot, i)) return s->dense_dims();
    const Tensor* t = ctx_.Input(slot, i);
    return t ? t->dims() : Dims{};
  }
  bool InputIsSparse(std::string_view slot, int i) const override {
    return Sparse(slot, i) != nullptr;
  }
  DType InputDType(std::string_view slot, int i) const override {
    if (const SelectedRows* s = Sparse(slot, i)) return s->value.dtype();
    const Tensor* t = ctx_.Input(slot, i);
    return t ? t->dtype() : DType::kUndefined;
  }
  StatusOr<std::vector<double>> InputValues(std::string_view slot,
                                            int i) const override {
    const Tensor* t = ctx_.Input(slot, i);
    const std::string what =
        ctx_.op().Label() + ": input '" + std::string(slot) + "'";
    if (t == nullptr || !t->initialized()) {
      return InvalidArgument(what +
                             " holds no tensor; its values give a shape");
    }
    if (!t->place().is_cpu() && !t->place().is_sim()) {
      return Unimplemented(what + " is on " + t->place().ToString() +
                           "; shape values are read from host memory only");
    }
    if (t->numel() > kMaxShapeValues) {
      return InvalidArgument(what + " has " + std::to_string(t->numel()) +
                             " values, more than a shape takes (" +
                             std::to_string(kMaxShapeValues) + ")");
    }
    std::vector<double> values(t->numel());
    for (int64_t k = 0; k < t->numel(); ++k) {
      switch (t->dtype()) {
        case DType::kInt32:
          values[k] = t->data<int32_t>()[k];
          break;
        case DType::kInt64:
          values[k] = static_cast<double>(t->data<int64_t>()[k]);
          break;
        case DType::kFP32:
          values[k] = t->data<float>()[k];
          break;
        case DType::kFP64:
          values[k] = t->data<double>()[k];
          break;
        default:
          return InvalidArgument(what + " is " + DTypeName(t->dtype()) +
                                 ", not a number type a shape is read from");
      }
    }
    return values;
  }
  void SetOutputDims(std::string_view slot, int i, const Dims& dims) override {
    if (ctx_.OutputVar(slot, i) == nullptr) return;
    pending_[{std::string(slot), i}].dims = dims;
    pending_[{std::string(slot), i}].has_dims = true;
  }
  void SetOutputDType(std::string_view slot, int i, DType dtype) override {
    if (ctx_.OutputVar(slot, i) == nullptr) return;
    pending_[{std::string(slot), i}].dtype = dtype;
  }

  struct Pending {
    Dims dims;
    bool has_dims = false;
    DType dtype = DType::kUndefined;
  };
  const std::map<std::pair<std::string, int>, Pending>& pending() const {
    return pending_;
  }

 private:
  const SelectedRows* Sparse(std::string_view slot, int i) const {
    const Variable* v = ctx_.InputVar(slot, i);
    return v != nullptr ? v->GetSelectedRows() : nullptr;
  }

  const KernelContext& ctx_;
  std::map<std::pair<std::string, int>, Pending> pending_;
};

}  // namespace

bool ReadsSparseRows(const std::string& type) {
  return type == "sgd" || type == "momentum" || type == "adam" || type == "sum";
}

Status SparseInputError(const OpDesc& op, const std::string& slot,
                        const std::string& name) {
  return Unimplemented(op.Label() + ": input '" + slot + "' reads '" + name +
                       "', a sparse gradient (SelectedRows, lookup_table's "
                       "is_sparse); parex applies those with sgd, momentum, "
                       "adam and sum only");
}

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
      if (inputs != nullptr && v != nullptr) {
        inputs->push_back({&slot.parameter(), &name, v});
      } else if (v == nullptr || v->IsEmpty()) {
        return NotFound(op.Label() + ": input '" + slot.parameter() +
                        "' reads variable '" + name +
                        "', which holds no value (not fed, loaded or "
                        "computed before)");
      } else if (v->IsSelectedRows() && !ReadsSparseRows(op.type())) {
        return SparseInputError(op, slot.parameter(), name);
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

Status InferAndAllocateOutputs(const OpSchema& schema, KernelContext& ctx,
                               DType kernel_dtype) {
  if (!schema.infer_shape()) return Status::Ok();
  RuntimeShapeContext shapes(ctx);
  PAREX_RETURN_IF_ERROR(schema.infer_shape()(shapes));
  auto var_name = [&ctx](const std::string& slot, int i) {
    const auto names = ctx.op().Output(slot);
    return i < static_cast<int>(names.size()) ? names[i] : std::string();
  };
  // What each output becomes, checked before anything is allocated: an
  // output that is also an input (in place) or another output keeps one
  // dtype and shape, or the kernel would read a tensor another slot has
  // just reshaped (a crafted program's top_k writing Indices over X).
  struct Target {
    const std::pair<std::string, int>* key;
    Variable* var;
    DType dtype;
    const Dims* dims;
  };
  std::vector<Target> targets;
  for (const auto& [key, pending] : shapes.pending()) {
    if (!pending.has_dims) continue;
    for (int64_t d : pending.dims) {
      if (d < 0) {
        return ctx.Error("output '" + key.first +
                         "' inferred with unknown "
                         "extent " +
                         DimsToString(pending.dims));
      }
    }
    DType dtype =
        pending.dtype != DType::kUndefined ? pending.dtype : kernel_dtype;
    if (dtype == DType::kUndefined) {
      return ctx.Error("output '" + key.first + "' has no dtype");
    }
    Variable* var = ctx.OutputVar(key.first, key.second);
    const std::string what = DTypeName(dtype) + DimsToString(pending.dims);
    for (const Target& t : targets) {
      if (t.var == var && (t.dtype != dtype || *t.dims != pending.dims)) {
        return ctx.Error("outputs '" + t.key->first + "' and '" + key.first +
                         "' both write variable '" +
                         var_name(key.first, key.second) + "', as " +
                         DTypeName(t.dtype) + DimsToString(*t.dims) + " and " +
                         what);
      }
    }
    const std::string_view in_slot = ctx.InputSlotOf(var);
    const Tensor* in = var->GetTensor();
    if (!in_slot.empty() && in != nullptr && in->defined() &&
        (in->dtype() != dtype || in->dims() != pending.dims)) {
      return ctx.Error("output '" + key.first + "' writes variable '" +
                       var_name(key.first, key.second) +
                       "' in place of its input '" + std::string(in_slot) +
                       "' (" + DTypeName(in->dtype()) +
                       DimsToString(in->dims()) + ") as " + what);
    }
    targets.push_back({&key, var, dtype, &pending.dims});
  }
  for (const Target& t : targets) {
    Status allocated =
        t.var->GetMutableTensor()->TryAllocate(t.dtype, *t.dims, ctx.place());
    if (!allocated.ok()) {
      return Status(allocated.code(),
                    ctx.op().Label() + ": output '" + t.key->first +
                        "' (var '" + var_name(t.key->first, t.key->second) +
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
  Status status = (*kernel)(ctx);
  if (!status.ok() && status.message().rfind(op.Label(), 0) != 0) {
    return status.WithContext(op.Label());
  }
  return status;
}

}  // namespace parex
