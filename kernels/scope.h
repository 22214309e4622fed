// Scope and Variable: where an executor keeps the values of a program's
// variables. A Variable holds a Tensor, a list of tensors (the `feed` and
// `fetch` holders) or SelectedRows (a sparse gradient). Scopes nest: a lookup
// that misses goes to the parent, so an execution scope of temporaries can sit
// under a scope of persistables. Thread-safety: creating variables needs
// exclusive access; once created, distinct variables may be used concurrently.
// Kids may be made and deleted concurrently (control-flow ops of one place
// run at once, each in scopes of its own).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "kernels/selected_rows.h"
#include "kernels/tensor.h"

namespace parex {

class Scope;

// The scopes a control-flow op ran its sub-block in (conditional_block's
// `Scope`, while's `StepScopes`), kept for its gradient op: kids of the
// scope the op ran in, which the op deletes before its next run.
struct StepScopes {
  std::vector<Scope*> scopes;
};

class Variable {
 public:
  bool IsTensor() const { return std::holds_alternative<Tensor>(value_); }
  bool IsTensorList() const {
    return std::holds_alternative<std::vector<Tensor>>(value_);
  }
  bool IsEmpty() const {
    return std::holds_alternative<std::monostate>(value_);
  }
  // Makes the variable hold a tensor (kept if it already does).
  Tensor* GetMutableTensor();
  // nullptr unless the variable holds a tensor.
  const Tensor* GetTensor() const { return std::get_if<Tensor>(&value_); }
  std::vector<Tensor>* GetMutableTensorList();
  const std::vector<Tensor>* GetTensorList() const {
    return std::get_if<std::vector<Tensor>>(&value_);
  }
  bool IsSelectedRows() const {
    return std::holds_alternative<SelectedRows>(value_);
  }
  // Makes the variable hold SelectedRows (kept if it already does).
  SelectedRows* GetMutableSelectedRows();
  const SelectedRows* GetSelectedRows() const {
    return std::get_if<SelectedRows>(&value_);
  }
  // Makes the variable hold step scopes (kept if it already does).
  StepScopes* GetMutableStepScopes();
  const StepScopes* GetStepScopes() const {
    return std::get_if<StepScopes>(&value_);
  }

 private:
  std::variant<std::monostate, Tensor, std::vector<Tensor>, SelectedRows,
               StepScopes>
      value_;
};

class Scope {
 public:
  Scope() = default;
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  // This scope's variable `name`, created if missing.
  Variable* Var(const std::string& name);
  // The variable in this scope or the nearest ancestor, or nullptr.
  Variable* FindVar(const std::string& name) const;
  Variable* FindLocalVar(const std::string& name) const;
  // A child scope, owned by this scope until DropKids.
  Scope* NewScope();
  void DropKids();
  // Destroys one kid (and its kids); other kids are untouched. No-op when
  // `kid` is not a kid of this scope.
  void DeleteScope(Scope* kid);
  const Scope* parent() const { return parent_; }
  std::vector<std::string> LocalVarNames() const;

 private:
  const Scope* parent_ = nullptr;
  std::unordered_map<std::string, std::unique_ptr<Variable>> vars_;
  std::mutex kids_mutex_;  // guards kids_
  std::vector<std::unique_ptr<Scope>> kids_;
};

}  // namespace parex
