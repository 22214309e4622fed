#include "kernels/kernel_context.h"

namespace parex {

void KernelContext::BindInput(std::string slot, std::vector<Variable*> vars) {
  inputs_.emplace_back(std::move(slot), std::move(vars));
}

void KernelContext::BindOutput(std::string slot, std::vector<Variable*> vars) {
  outputs_.emplace_back(std::move(slot), std::move(vars));
}

const std::vector<Variable*>* KernelContext::Find(
    const std::vector<Binding>& bindings, std::string_view slot) const {
  for (const auto& b : bindings) {
    if (b.first == slot) return &b.second;
  }
  return nullptr;
}

bool KernelContext::HasAttr(std::string_view name) const {
  for (const auto& [kept, has] : has_attr_) {
    if (kept == name) return has;
  }
  const bool has = op_.HasAttr(name);
  has_attr_.emplace_back(std::string(name), has);
  return has;
}

int KernelContext::InputCount(std::string_view slot) const {
  const auto* vars = Find(inputs_, slot);
  return vars ? static_cast<int>(vars->size()) : 0;
}

int KernelContext::OutputCount(std::string_view slot) const {
  const auto* vars = Find(outputs_, slot);
  return vars ? static_cast<int>(vars->size()) : 0;
}

Variable* KernelContext::InputVar(std::string_view slot, int i) const {
  const auto* vars = Find(inputs_, slot);
  if (vars == nullptr || i >= static_cast<int>(vars->size())) return nullptr;
  return (*vars)[i];
}

Variable* KernelContext::OutputVar(std::string_view slot, int i) const {
  const auto* vars = Find(outputs_, slot);
  if (vars == nullptr || i >= static_cast<int>(vars->size())) return nullptr;
  return (*vars)[i];
}

std::string_view KernelContext::InputSlotOf(const Variable* var) const {
  for (const auto& [slot, vars] : inputs_) {
    for (const Variable* v : vars) {
      if (v != nullptr && v == var) return slot;
    }
  }
  return {};
}

const Tensor* KernelContext::Input(std::string_view slot, int i) const {
  Variable* v = InputVar(slot, i);
  return v ? v->GetTensor() : nullptr;
}

std::vector<const Tensor*> KernelContext::Inputs(std::string_view slot) const {
  std::vector<const Tensor*> out;
  for (int i = 0; i < InputCount(slot); ++i) out.push_back(Input(slot, i));
  return out;
}

Tensor* KernelContext::Output(std::string_view slot, int i) const {
  Variable* v = OutputVar(slot, i);
  return v ? v->GetMutableTensor() : nullptr;
}

std::vector<Tensor*> KernelContext::Outputs(std::string_view slot) const {
  std::vector<Tensor*> out;
  for (int i = 0; i < OutputCount(slot); ++i) out.push_back(Output(slot, i));
  return out;
}

Status KernelContext::CheckInputDTypes(std::initializer_list<const char*> slots,
                                       DType dtype) const {
  for (const char* slot : slots) {
    for (int i = 0; i < InputCount(slot); ++i) {
      if (InputVar(slot, i) == nullptr) continue;  // empty argument
      const Tensor* t = Input(slot, i);
      if (t == nullptr) {
        return Error(std::string("input '") + slot + "' holds no tensor");
      }
      if (t->dtype() != dtype) {
        return Error(std::string("input '") + slot + "' is " +
                     DTypeName(t->dtype()) + ", expected " + DTypeName(dtype));
      }
    }
  }
  return Status::Ok();
}

}  // namespace parex
