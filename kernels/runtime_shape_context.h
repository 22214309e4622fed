// RuntimeShapeContext: a ShapeContext over an op's bound tensors (run
// time): the schema's shape inference at run time (op_runner.h applies what
// it sets), and kernels that read the same tensor-valued attributes as the
// shape rules (graph/ir/spec/value_inputs.h) through it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/ir/op_schema.h"
#include "kernels/kernel_context.h"

namespace parex {

// Input dims are the tensors' dims; output dims and dtypes are collected
// (pending()) for InferAndAllocateOutputs to apply.
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
                                            int i) const override;
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

}  // namespace parex
