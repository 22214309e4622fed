#include "kernels/scope.h"

#include <algorithm>

namespace parex {

Tensor* Variable::GetMutableTensor() {
  if (!IsTensor()) value_ = Tensor();
  return std::get_if<Tensor>(&value_);
}

std::vector<Tensor>* Variable::GetMutableTensorList() {
  if (!IsTensorList()) value_ = std::vector<Tensor>();
  return std::get_if<std::vector<Tensor>>(&value_);
}

SelectedRows* Variable::GetMutableSelectedRows() {
  if (!IsSelectedRows()) value_ = SelectedRows();
  return std::get_if<SelectedRows>(&value_);
}

StepScopes* Variable::GetMutableStepScopes() {
  if (!std::holds_alternative<StepScopes>(value_)) value_ = StepScopes();
  return std::get_if<StepScopes>(&value_);
}

Variable* Scope::Var(const std::string& name) {
  auto& slot = vars_[name];
  if (!slot) slot = std::make_unique<Variable>();
  return slot.get();
}

Variable* Scope::FindLocalVar(const std::string& name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : it->second.get();
}

Variable* Scope::FindVar(const std::string& name) const {
  for (const Scope* s = this; s != nullptr; s = s->parent_) {
    if (Variable* v = s->FindLocalVar(name)) return v;
  }
  return nullptr;
}

Scope* Scope::NewScope() {
  std::lock_guard<std::mutex> lock(kids_mutex_);
  kids_.push_back(std::make_unique<Scope>());
  kids_.back()->parent_ = this;
  return kids_.back().get();
}

void Scope::DropKids() {
  std::lock_guard<std::mutex> lock(kids_mutex_);
  kids_.clear();
}

void Scope::DeleteScope(Scope* kid) {
  std::unique_ptr<Scope> doomed;  // destroyed after the lock is released
  std::lock_guard<std::mutex> lock(kids_mutex_);
  for (auto& s : kids_) {
    if (s.get() == kid) doomed = std::move(s);
  }
  kids_.erase(std::remove_if(
                  kids_.begin(), kids_.end(),
                  [](const std::unique_ptr<Scope>& s) { return s == nullptr; }),
              kids_.end());
}

std::vector<std::string> Scope::LocalVarNames() const {
  std::vector<std::string> names;
  for (const auto& [name, var] : vars_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace parex
