#include "kernels/op_runner.h"

#include <map>

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
  Dims InputDims(std::string_view slot, int i) const override {
    const Tensor* t = ctx_.Input(slot, i);
    return t ? t->dims() : Dims{};
  }
  DType InputDType(std::string_view slot, int i) const override {
    const Tensor* t = ctx_.Input(slot, i);
    return t ? t->dtype() : DType::kUndefined;
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
  const KernelContext& ctx_;
  std::map<std::pair<std::string, int>, Pending> pending_;
};

}  // namespace

Status BindVariables(const OpDesc& op, Scope* scope, KernelContext* ctx) {
  for (const auto& slot : op.proto().inputs()) {
    std::vector<Variable*> vars;
    for (const std::string& name : slot.arguments()) {
      if (name.empty()) {
        vars.push_back(nullptr);
        continue;
      }
      Variable* v = scope->FindVar(name);
      if (v == nullptr || v->IsEmpty()) {
        return NotFound(op.Label() + ": input '" + slot.parameter() +
                        "' reads variable '" + name +
                        "', which holds no value (not fed, loaded or "
                        "computed before)");
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

StatusOr<DType> KernelDType(const OpSchema& schema, const KernelContext& ctx) {
  switch (schema.kernel_dtype_rule()) {
    case KernelDTypeRule::kAny:
      return DType::kUndefined;
    case KernelDTypeRule::kFromAttr: {
      int value = ctx.Attr<int>(schema.kernel_dtype_source());
      if (!IsElementType(value)) {
        return ctx.Error("attribute '" + schema.kernel_dtype_source() +
                         "' = " + std::to_string(value) +
                         " is no element type");
      }
      return static_cast<DType>(value);
    }
    case KernelDTypeRule::kFromInput: {
      const Tensor* t = ctx.Input(schema.kernel_dtype_source());
      if (t != nullptr && t->defined()) return t->dtype();
      for (const SlotSpec& slot : schema.inputs()) {
        const Tensor* u = ctx.Input(slot.name);
        if (u != nullptr && u->defined()) return u->dtype();
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
  for (const auto& [key, pending] : shapes.pending()) {
    if (!pending.has_dims) continue;
    for (int64_t d : pending.dims) {
      if (d < 0) {
        return ctx.Error("output '" + key.first + "' inferred with unknown "
                         "extent " + DimsToString(pending.dims));
      }
    }
    DType dtype =
        pending.dtype != DType::kUndefined ? pending.dtype : kernel_dtype;
    if (dtype == DType::kUndefined) {
      return ctx.Error("output '" + key.first + "' has no dtype");
    }
    ctx.Output(key.first, key.second)->Allocate(dtype, pending.dims,
                                                ctx.place());
  }
  return Status::Ok();
}

Status RunOp(const OpDesc& op, Scope* scope, DeviceContext* device_context) {
  StatusOr<const OpSchema*> schema = OpSchemaRegistry::Global().Get(op.type());
  if (!schema.ok()) return schema.status().WithContext(op.Label());
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
