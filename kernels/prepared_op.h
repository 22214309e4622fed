// PreparedOp: an op prepared once and run step after step.
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "kernels/channels_last.h"
#include "kernels/op_runner.h"

namespace parex {

// An op bound once to the variables of a scope, for an executor that runs
// it step after step (the actor runtime's plan, DESIGN.md §3.3): the schema
// and the variables are looked up once and the kernel once per kernel dtype;
// Run checks the inputs hold values, infers the output shapes from the
// actual inputs, allocates and runs the kernel, as RunOp does, with the
// same errors. Shape inference is a function of the inputs' dims and dtypes
// (and the op's attributes, which do not change), so Run remembers the
// inputs' and outputs' dims and dtypes after it allocated, and the next run
// whose inputs match and whose outputs still hold what it allocated skips
// inference and allocation: a steady step allocates nothing (issue 12). The
// op, the scope's variables and the device context must outlive it. Not
// thread-safe; distinct PreparedOps may run concurrently.
class PreparedOp {
 public:
  static StatusOr<std::unique_ptr<PreparedOp>> Prepare(
      const OpDesc& op, Scope* scope, DeviceContext* device_context);
  Status Run();

 private:
  PreparedOp(const OpDesc& op, const OpSchema* schema,
             DeviceContext* device_context)
      : op_(op), schema_(schema), ctx_(op, device_context) {}

  // What the last inference saw and produced (the shape cache).
  struct Shape {
    DType dtype = DType::kUndefined;
    Dims dims;
    bool defined = false;
  };
  // Whether the bound tensors match the cache (no allocation).
  bool ShapesCached() const;
  void RememberShapes();

  const OpDesc& op_;
  const OpSchema* schema_;
  KernelContext ctx_;
  std::vector<BoundInput> inputs_;
  std::vector<Variable*> outputs_;  // every bound output variable
  DType kernel_dtype_ = DType::kUndefined;
  KernelFn kernel_ = nullptr;  // for kernel_dtype_, once looked up
  bool cached_ = false;
  bool shape_from_values_ = false;         // infer at every run (input values)
  bool channels_last_ = false;             // NHWC: kernels/channels_last.h
  NativeChannelsLastFn native_ = nullptr;  // its kernel's predicate, if any
  ChannelsLastStatePtr channels_last_state_;
  Scope* control_flow_scope_ = nullptr;  // a control-flow op's scope
  std::vector<Shape> input_shapes_;      // per inputs_ entry
  std::vector<Shape> output_shapes_;     // per outputs_ entry
};

}  // namespace parex
