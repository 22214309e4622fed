// Op schemas: for every op type parex knows, its slots, attributes with types
// and defaults, shape and dtype inference, how its kernel's dtype is chosen,
// and the Fluid gradient op it pairs with.
//
// Schemas are registered once (RegisterAllOpSchemas in graph/ir/ops/) and then
// read concurrently; the registry is immutable after first use.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/dims.h"
#include "base/dtype.h"
#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

// The shapes and dtypes of one op's variables, either declared (compile time:
// VarDescs, unknown extents are -1) or actual (run time: tensors).
class ShapeContext {
 public:
  virtual ~ShapeContext() = default;

  virtual const OpDesc& op() const = 0;
  virtual bool IsRuntime() const = 0;
  // Number of arguments bound to a slot (0 when absent).
  virtual int InputCount(std::string_view slot) const = 0;
  virtual int OutputCount(std::string_view slot) const = 0;
  // REQUIRES: i < InputCount(slot). Unknown vars give {} / kUndefined.
  virtual Dims InputDims(std::string_view slot, int i = 0) const = 0;
  virtual DType InputDType(std::string_view slot, int i = 0) const = 0;
  // At run time: the input holds sparse rows (SelectedRows), whose dims are
  // those of the dense tensor they stand for.
  virtual bool InputIsSparse(std::string_view slot, int i = 0) const {
    return false;
  }
  // The values of input `slot` argument i, for an op whose output shape
  // depends on them (range's Start/End/Step, a shape given as a tensor):
  // at run time a host tensor of a numeric dtype with at most
  // kMaxShapeValues elements, as doubles (exact for integers up to 2^53);
  // FailedPrecondition at compile time (the shape is then unknown, -1s),
  // or naming the slot when the tensor is absent, on a device, too large or
  // not numeric. The op's schema says ShapeFromValues.
  static constexpr int64_t kMaxShapeValues = 1024;
  virtual StatusOr<std::vector<double>> InputValues(std::string_view slot,
                                                    int i = 0) const {
    (void)i;
    return FailedPrecondition(op().Label() + ": the values of '" +
                              std::string(slot) +
                              "' are known at run time only");
  }
  // No-op when the output slot has no argument i.
  virtual void SetOutputDims(std::string_view slot, int i,
                             const Dims& dims) = 0;
  virtual void SetOutputDType(std::string_view slot, int i, DType dtype) = 0;

  bool HasInput(std::string_view slot) const { return InputCount(slot) > 0; }
  bool HasOutput(std::string_view slot) const { return OutputCount(slot) > 0; }
  void SetOutput(std::string_view slot, const Dims& dims, DType dtype) {
    SetOutputDims(slot, 0, dims);
    SetOutputDType(slot, 0, dtype);
  }
  // Output `out` gets the dims and dtype of input `in` (argument 0 of each).
  void ShareDimsAndDType(std::string_view in, std::string_view out) {
    SetOutput(out, InputDims(in), InputDType(in));
  }
  // REQUIRES: the program was validated (the attribute has the right type).
  template <typename T>
  T Attr(std::string_view name) const {
    auto value = op().GetAttr<T>(name);
    PAREX_CHECK(value.ok(), value.status().ToString());
    return *value;
  }
  // True for the dims of a var declared without a shape (compile time only).
  bool IsUnknown(const Dims& dims) const {
    return !IsRuntime() && dims.empty();
  }
  // At run time every bound slot of `slots` holds the dtype of the first bound
  // one (kernels read them all as the kernel's type).
  Status CheckSameDType(std::initializer_list<const char*> slots) const;
  // Input `slot` (a gradient) has dims `want`; unknown extents agree at
  // compile time.
  Status CheckGradDims(std::string_view slot, const Dims& want) const;

  // An InvalidArgument error that names the op.
  Status Error(const std::string& message) const {
    return InvalidArgument(op().Label() + ": " + message);
  }
};

// Whether `dims` is known: always at run time; at compile time unless the
// var was declared without a shape (ShapeContext::IsUnknown).
inline bool Known(const ShapeContext& ctx, const Dims& dims) {
  return !ctx.IsUnknown(dims);
}

// The same rank and the same extents; at compile time an unknown extent
// (-1) agrees with any (ExtentsAgree).
bool SameDims(const ShapeContext& ctx, const Dims& a, const Dims& b);

using InferShapeFn = std::function<Status(ShapeContext&)>;

enum SlotFlags : unsigned {
  kRequired = 0,
  kOptional = 1u << 0,    // may be absent or empty
  kDuplicable = 1u << 1,  // may bind several variables (sum's X, concat's X)
};

struct SlotSpec {
  std::string name;
  unsigned flags = kRequired;
  bool optional() const { return flags & kOptional; }
  bool duplicable() const { return flags & kDuplicable; }
};

struct AttrSpec {
  std::string name;
  AttrType type;
  bool required = false;  // no default: the op must carry it
  proto::OpDesc::Attr default_value;
};

// How the dtype of an op's kernel is chosen (Paddle's expected kernel type).
enum class KernelDTypeRule {
  kFromInput,  // dtype of the first argument of `kernel_dtype_source` slot
  kFromAttr,   // the int attribute `kernel_dtype_source` (a VarType.Type)
  kAny,        // one kernel for every dtype (feed, fetch)
};

class OpSchema {
 public:
  explicit OpSchema(std::string type) : type_(std::move(type)) {}

  OpSchema& Input(std::string name, unsigned flags = kRequired);
  OpSchema& Output(std::string name, unsigned flags = kRequired);
  template <typename T>
  OpSchema& Attr(std::string name, const T& default_value);
  OpSchema& RequiredAttr(std::string name, AttrType type);
  OpSchema& InferShape(InferShapeFn fn);
  // Default: kFromInput with the first declared input slot.
  OpSchema& KernelDTypeFromInput(std::string slot);
  OpSchema& KernelDTypeFromAttr(std::string attr);
  OpSchema& KernelDTypeAny();
  // The Fluid gradient op of this op: its type, the slots it reads (forward
  // inputs and outputs by slot name, output gradients as "Out@GRAD") and the
  // gradient slots it writes ("X@GRAD").
  OpSchema& Grad(std::string grad_type, std::vector<std::string> inputs,
                 std::vector<std::string> outputs);
  // Output slot `out` may be the same variable as input slot `in` (Paddle's
  // in-place pairs: DECLARE_INPLACE_OP_INFERER, optimizers' ParamOut/Param,
  // batch_norm's MeanOut/Mean). Validation rejects any other output that
  // names a persistable input of the op.
  OpSchema& Inplace(std::string in, std::string out);
  // The output shapes depend on input values (ShapeContext::InputValues),
  // so a prepared op infers them on every run, never from its shape cache:
  // always, or (given `slots`) when the op binds one of them (a shape given
  // as a tensor instead of an attribute).
  OpSchema& ShapeFromValues(std::vector<std::string> slots = {});
  // A control-flow op (conditional_block, while, select_input, ...): it runs
  // sub-blocks or picks among inputs some of which hold no value, so no
  // kernel runs it: kernels/control_flow.h does, with the op's scope.
  OpSchema& ControlFlow();

  const std::string& type() const { return type_; }
  const std::vector<SlotSpec>& inputs() const { return inputs_; }
  const std::vector<SlotSpec>& outputs() const { return outputs_; }
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  const AttrSpec* FindAttr(std::string_view name) const;
  const SlotSpec* FindInput(std::string_view name) const;
  const SlotSpec* FindOutput(std::string_view name) const;
  const InferShapeFn& infer_shape() const { return infer_shape_; }
  KernelDTypeRule kernel_dtype_rule() const { return kernel_dtype_rule_; }
  // The slot or attribute named by the rule ("" before any input is declared).
  const std::string& kernel_dtype_source() const;
  bool shape_from_values() const { return shape_from_values_; }
  // Whether `op` (of this type) has a shape that depends on input values.
  bool ShapeFromValuesOf(const OpDesc& op) const;
  bool control_flow() const { return control_flow_; }
  bool has_grad() const { return !grad_type_.empty(); }
  const std::string& grad_type() const { return grad_type_; }
  const std::vector<std::string>& grad_inputs() const { return grad_inputs_; }
  const std::vector<std::string>& grad_outputs() const { return grad_outputs_; }
  const std::vector<std::pair<std::string, std::string>>& inplace() const {
    return inplace_;
  }

 private:
  std::string type_;
  std::vector<SlotSpec> inputs_;
  std::vector<SlotSpec> outputs_;
  std::vector<AttrSpec> attrs_;
  InferShapeFn infer_shape_;
  KernelDTypeRule kernel_dtype_rule_ = KernelDTypeRule::kFromInput;
  std::string kernel_dtype_source_;
  std::string grad_type_;
  std::vector<std::string> grad_inputs_;
  std::vector<std::string> grad_outputs_;
  std::vector<std::pair<std::string, std::string>> inplace_;
  bool shape_from_values_ = false;
  std::vector<std::string> value_slots_;  // empty: every op of the type
  bool control_flow_ = false;
};

class OpSchemaRegistry {
 public:
  // The registry with every schema of graph/ir/ops/, built on first use.
  static const OpSchemaRegistry& Global();

  void Add(OpSchema schema);
  // Tests only: adds a schema to Global() (an op that fails on demand, say).
  // REQUIRES: the type is new; nothing reads the registry concurrently.
  static void AddToGlobalForTesting(OpSchema schema);
  // nullptr for an unknown type.
  const OpSchema* Find(std::string_view type) const;
  // NotFound "unknown op type 'foo'" for an unknown type.
  StatusOr<const OpSchema*> Get(std::string_view type) const;
  std::vector<std::string> Types() const;

  // Attributes every op may carry (op_role, op_role_var, op_namescope, ...):
  // type-checked when present, never required.
  const AttrSpec* FindCommonAttr(std::string_view name) const;

 private:
  OpSchemaRegistry();
  std::map<std::string, OpSchema, std::less<>> schemas_;
  std::vector<AttrSpec> common_attrs_;
};

// Appends every schema of graph/ir/ops/ (defined there).
void RegisterAllOpSchemas(OpSchemaRegistry* registry);

// Writes every attribute of the op's schema that the op lacks, with its
// default, as Fluid's op makers do: PaddlePaddle expects every attribute
// present in the programs it runs. Required attributes are left alone.
Status FillDefaultAttrs(OpDesc* op);

// Runs the schema's shape inference at compile time over the VarDescs of
// `block`, writing inferred dims and dtypes into the output VarDescs when
// `write_back`; errors name the op.
Status InferShapeAtCompileTime(OpDesc& op, Block& block, bool write_back);

// The gradient var name of `name`: "name@GRAD".
std::string GradVarName(std::string_view name);
inline constexpr std::string_view kGradSuffix = "@GRAD";

// Shape inference shared by many gradient ops: each output slot "S@GRAD"
// takes the dims and dtype of input slot S, argument by argument.
Status InferGradShapesFromForwardInputs(ShapeContext& ctx);

}  // namespace parex
