// KernelContext: what a kernel sees of the op it runs: its input and output
// variables by slot, its attributes and its DeviceContext. Outputs arrive
// allocated to the shapes the op's schema inferred (except for ops whose
// schema has no shape inference, e.g. feed and fetch, which shape their own).
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"
#include "kernels/device_context.h"
#include "kernels/scope.h"
#include "kernels/tensor.h"

namespace parex {

// What a kernel keeps across runs of one op (a prepared library primitive,
// cached per shape): owned by the op's KernelContext, which a PreparedOp
// keeps for the executor's lifetime (a one-off RunOp starts without one).
class KernelState {
 public:
  virtual ~KernelState() = default;
};

class KernelContext {
 public:
  KernelContext(const OpDesc& op, DeviceContext* device_context)
      : op_(op), device_context_(device_context) {}

  // Binds a slot to its variables (nullptr entries for empty argument names).
  void BindInput(std::string slot, std::vector<Variable*> vars);
  void BindOutput(std::string slot, std::vector<Variable*> vars);

  const OpDesc& op() const { return op_; }
  DeviceContext* device_context() const { return device_context_; }
  Place place() const { return device_context_->place(); }

  int InputCount(std::string_view slot) const;
  int OutputCount(std::string_view slot) const;
  // The tensor of argument i of an input slot; nullptr when absent or when
  // the variable holds no tensor.
  const Tensor* Input(std::string_view slot, int i = 0) const;
  std::vector<const Tensor*> Inputs(std::string_view slot) const;
  // The tensor of argument i of an output slot; nullptr when absent.
  Tensor* Output(std::string_view slot, int i = 0) const;
  std::vector<Tensor*> Outputs(std::string_view slot) const;
  Variable* InputVar(std::string_view slot, int i = 0) const;
  Variable* OutputVar(std::string_view slot, int i = 0) const;
  // The first input slot bound to `var`; empty when `var` is no input (an
  // output that is also an input is written in place).
  std::string_view InputSlotOf(const Variable* var) const;

  // The attribute (or its schema default), read from the op once per
  // context and name and kept: a program's attributes do not change once
  // its ops are prepared, and a kernel that reads its attributes on every
  // run (a PreparedOp's context lives as long as the executor) then costs
  // no search of the op's attributes, no schema lookup for a default and no
  // allocation for a list. The reference lives as long as this context.
  // REQUIRES: the program was validated, so the attribute has a usable type.
  template <typename T>
  const T& Attr(std::string_view name) const {
    for (const CachedAttr& c : attrs_) {
      if (c.name == name && *c.type == typeid(T)) {
        return *static_cast<const T*>(c.value.get());
      }
    }
    auto value = op_.GetAttr<T>(name);
    PAREX_CHECK(value.ok(), value.status().ToString());
    auto kept = std::make_shared<const T>(std::move(*value));
    const T& ref = *kept;
    attrs_.push_back({std::string(name), &typeid(T), std::move(kept)});
    return ref;
  }

  // Whether the op itself carries the attribute (a schema default does not
  // count), kept as Attr's values are: the optional attributes of fused
  // forms (fuse_activation, constant_filter) cost no search after the first.
  bool HasAttr(std::string_view name) const;

  // Every tensor bound to `slots` is present and of `dtype`, as a kernel
  // reads them (empty arguments are skipped: the schema enforced required
  // slots). Errors name the op, slot and dtypes.
  Status CheckInputDTypes(std::initializer_list<const char*> slots,
                          DType dtype) const;
  template <typename T>
  Status CheckInputs(std::initializer_list<const char*> slots) const {
    return CheckInputDTypes(slots, DTypeOf<T>());
  }

  // This op's state of kernel type S, made on first use (or when another
  // kernel's state is there, e.g. after a dtype change).
  template <typename S>
  S* State() {
    S* state = dynamic_cast<S*>(state_.get());
    if (state == nullptr) {
      auto made = std::make_unique<S>();
      state = made.get();
      state_ = std::move(made);
    }
    return state;
  }

  // An InvalidArgument error prefixed with the op's label.
  Status Error(const std::string& message) const {
    return InvalidArgument(op_.Label() + ": " + message);
  }

 private:
  using Binding = std::pair<std::string, std::vector<Variable*>>;
  const std::vector<Variable*>* Find(const std::vector<Binding>& bindings,
                                     std::string_view slot) const;

  // An attribute read as one type (the pointee never moves: references
  // handed out stay valid as the list grows).
  struct CachedAttr {
    std::string name;
    const std::type_info* type;
    std::shared_ptr<const void> value;
  };

  const OpDesc& op_;
  DeviceContext* device_context_;
  mutable std::vector<CachedAttr> attrs_;
  mutable std::vector<std::pair<std::string, bool>> has_attr_;
  std::vector<Binding> inputs_;
  std::vector<Binding> outputs_;
  std::unique_ptr<KernelState> state_;
};

}  // namespace parex
