#include "kernels/prepared_op.h"

#include <utility>

#include "graph/ir/spec/channels_last.h"
#include "kernels/channels_last.h"
#include "kernels/control_flow.h"

namespace parex {

StatusOr<std::unique_ptr<PreparedOp>> PreparedOp::Prepare(
    const OpDesc& op, Scope* scope, DeviceContext* device_context) {
  StatusOr<const OpSchema*> schema = OpSchemaRegistry::Global().Get(op.type());
  if (!schema.ok()) return schema.status().WithContext(op.Label());
  std::unique_ptr<PreparedOp> prepared(
      new PreparedOp(op, *schema, device_context));
  if ((*schema)->control_flow()) {
    // Control flow binds nothing: it looks its variables up at every run
    // (kernels/control_flow.h); its outputs exist from now on.
    prepared->control_flow_scope_ = scope;
    DeclareControlFlowOutputs(op, scope);
    return prepared;
  }
  prepared->shape_from_values_ = (*schema)->ShapeFromValuesOf(op);
  prepared->channels_last_ = ChannelsLastOf(op) != nullptr;
  if (prepared->channels_last_) {
    prepared->native_ = NativeChannelsLastOf(op.type());
  }
  PAREX_RETURN_IF_ERROR(
      BindVariablesDeferred(op, scope, &prepared->ctx_, &prepared->inputs_));
  for (const auto& slot : op.proto().outputs()) {
    for (int i = 0; i < slot.arguments_size(); ++i) {
      Variable* v = prepared->ctx_.OutputVar(slot.parameter(), i);
      if (v != nullptr) prepared->outputs_.push_back(v);
    }
  }
  prepared->input_shapes_.resize(prepared->inputs_.size());
  prepared->output_shapes_.resize(prepared->outputs_.size());
  return prepared;
}

bool PreparedOp::ShapesCached() const {
  if (!cached_ || shape_from_values_) return false;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Tensor* t = inputs_[i].var->GetTensor();
    const Shape& s = input_shapes_[i];
    if (t == nullptr || t->dtype() != s.dtype || t->defined() != s.defined ||
        t->dims() != s.dims) {
      return false;
    }
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    const Tensor* t = outputs_[i]->GetTensor();
    const Shape& s = output_shapes_[i];
    if (t == nullptr || t->dtype() != s.dtype || t->defined() != s.defined ||
        t->dims() != s.dims) {
      return false;
    }
  }
  return true;
}

void PreparedOp::RememberShapes() {
  auto remember = [](const Tensor* t, Shape* s) {
    s->dtype = t != nullptr ? t->dtype() : DType::kUndefined;
    s->defined = t != nullptr && t->defined();
    if (t != nullptr) {
      s->dims.assign(t->dims().begin(), t->dims().end());
    } else {
      s->dims.clear();
    }
  };
  for (size_t i = 0; i < inputs_.size(); ++i) {
    remember(inputs_[i].var->GetTensor(), &input_shapes_[i]);
  }
  for (size_t i = 0; i < outputs_.size(); ++i) {
    remember(outputs_[i]->GetTensor(), &output_shapes_[i]);
  }
  cached_ = true;
}

Status PreparedOp::Run() {
  if (control_flow_scope_ != nullptr) {
    return RunControlFlowOp(op_, control_flow_scope_, ctx_.device_context());
  }
  for (const BoundInput& in : inputs_) {
    if (in.var->IsEmpty()) {
      return NotFound(op_.Label() + ": input '" + *in.slot +
                      "' reads variable '" + *in.name +
                      "', which holds no value (not fed, loaded or "
                      "computed before)");
    }
    if (in.var->IsSelectedRows() && !ReadsSparseRows(op_.type())) {
      return SparseInputError(op_, *in.slot, *in.name);
    }
    if (in.var->IsTensorList() && !ReadsTensorLists(op_.type())) {
      return TensorListInputError(op_, *in.slot, *in.name);
    }
  }
  // An attribute's dtype never changes: read it once.
  DType dtype = kernel_dtype_;
  if (kernel_ == nullptr ||
      schema_->kernel_dtype_rule() != KernelDTypeRule::kFromAttr) {
    PAREX_ASSIGN_OR_RETURN(dtype, KernelDType(*schema_, ctx_));
  }
  if (kernel_ == nullptr || dtype != kernel_dtype_) {
    StatusOr<KernelFn> kernel =
        KernelRegistry::Global().Find({op_.type(), ctx_.place().kind, dtype});
    if (!kernel.ok()) return kernel.status().WithContext(op_.Label());
    kernel_ = *kernel;
    kernel_dtype_ = dtype;
    cached_ = false;
  }
  const bool cached = ShapesCached();
  if (!cached) {
    cached_ = false;
    PAREX_RETURN_IF_ERROR(InferAndAllocateOutputs(*schema_, ctx_, dtype));
  }
  const bool view =
      channels_last_ && (native_ == nullptr || !native_(ctx_, dtype));
  Status status = view ? RunChannelsLast(*schema_, ctx_, kernel_, dtype,
                                         &channels_last_state_)
                       : kernel_(ctx_);
  // After the kernel: what the next run compares against.
  if (status.ok() && !cached) RememberShapes();
  if (!status.ok() && status.message().rfind(op_.Label(), 0) != 0) {
    return status.WithContext(op_.Label());
  }
  return status;
}

}  // namespace parex
