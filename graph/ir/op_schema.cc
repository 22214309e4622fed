#include "graph/ir/op_schema.h"

#include <mutex>

namespace parex {

// ---- ShapeContext -----------------------------------------------------------

Status ShapeContext::CheckSameDType(
    std::initializer_list<const char*> slots) const {
  if (!IsRuntime()) return Status::Ok();
  const char* first = nullptr;
  DType want = DType::kUndefined;
  for (const char* slot : slots) {
    const DType got = HasInput(slot) ? InputDType(slot) : DType::kUndefined;
    if (got == DType::kUndefined) continue;
    if (first == nullptr) {
      first = slot;
      want = got;
    } else if (got != want) {
      return Error(std::string(slot) + " is " + DTypeName(got) + ", " + first +
                   " is " + DTypeName(want));
    }
  }
  return Status::Ok();
}

Status ShapeContext::CheckGradDims(std::string_view slot,
                                   const Dims& want) const {
  Dims got = InputDims(slot);
  if (SameDims(*this, got, want) || IsUnknown(got)) return Status::Ok();
  return Error(std::string(slot) + " has dims " + DimsToString(got) +
               ", expected " + DimsToString(want));
}

bool SameDims(const ShapeContext& ctx, const Dims& a, const Dims& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (ctx.IsRuntime() ? a[i] != b[i] : !ExtentsAgree(a[i], b[i])) {
      return false;
    }
  }
  return true;
}

// ---- OpSchema ---------------------------------------------------------------

OpSchema& OpSchema::Input(std::string name, unsigned flags) {
  inputs_.push_back({std::move(name), flags});
  return *this;
}

OpSchema& OpSchema::Output(std::string name, unsigned flags) {
  outputs_.push_back({std::move(name), flags});
  return *this;
}

template <typename T>
OpSchema& OpSchema::Attr(std::string name, const T& default_value) {
  AttrSpec spec;
  spec.name = name;
  spec.type = AttrTypeOf<T>();
  spec.default_value.set_name(name);
  WriteAttr<T>(&spec.default_value, default_value);
  attrs_.push_back(std::move(spec));
  return *this;
}

template OpSchema& OpSchema::Attr<int>(std::string, const int&);
template OpSchema& OpSchema::Attr<int64_t>(std::string, const int64_t&);
template OpSchema& OpSchema::Attr<bool>(std::string, const bool&);
template OpSchema& OpSchema::Attr<float>(std::string, const float&);
template OpSchema& OpSchema::Attr<double>(std::string, const double&);
template OpSchema& OpSchema::Attr<std::string>(std::string, const std::string&);
template OpSchema& OpSchema::Attr<std::vector<int>>(std::string,
                                                    const std::vector<int>&);
template OpSchema& OpSchema::Attr<std::vector<int64_t>>(
    std::string, const std::vector<int64_t>&);
template OpSchema& OpSchema::Attr<std::vector<float>>(
    std::string, const std::vector<float>&);
template OpSchema& OpSchema::Attr<std::vector<std::string>>(
    std::string, const std::vector<std::string>&);
template OpSchema& OpSchema::Attr<std::vector<bool>>(std::string,
                                                     const std::vector<bool>&);

OpSchema& OpSchema::RequiredAttr(std::string name, AttrType type) {
  AttrSpec spec;
  spec.name = std::move(name);
  spec.type = type;
  spec.required = true;
  attrs_.push_back(std::move(spec));
  return *this;
}

OpSchema& OpSchema::InferShape(InferShapeFn fn) {
  infer_shape_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::KernelDTypeFromInput(std::string slot) {
  kernel_dtype_rule_ = KernelDTypeRule::kFromInput;
  kernel_dtype_source_ = std::move(slot);
  return *this;
}

OpSchema& OpSchema::KernelDTypeFromAttr(std::string attr) {
  kernel_dtype_rule_ = KernelDTypeRule::kFromAttr;
  kernel_dtype_source_ = std::move(attr);
  return *this;
}

OpSchema& OpSchema::KernelDTypeAny() {
  kernel_dtype_rule_ = KernelDTypeRule::kAny;
  kernel_dtype_source_.clear();
  return *this;
}

OpSchema& OpSchema::Grad(std::string grad_type, std::vector<std::string> inputs,
                         std::vector<std::string> outputs) {
  grad_type_ = std::move(grad_type);
  grad_inputs_ = std::move(inputs);
  grad_outputs_ = std::move(outputs);
  return *this;
}

OpSchema& OpSchema::ShapeFromValues(std::vector<std::string> slots) {
  shape_from_values_ = true;
  value_slots_ = std::move(slots);
  return *this;
}

bool OpSchema::ShapeFromValuesOf(const OpDesc& op) const {
  if (!shape_from_values_) return false;
  if (value_slots_.empty()) return true;
  for (const std::string& slot : value_slots_) {
    if (op.HasInput(slot)) return true;
  }
  return false;
}

OpSchema& OpSchema::ControlFlow() {
  control_flow_ = true;
  return *this;
}

OpSchema& OpSchema::Inplace(std::string in, std::string out) {
  inplace_.emplace_back(std::move(in), std::move(out));
  return *this;
}

const std::string& OpSchema::kernel_dtype_source() const {
  static const std::string kEmpty;
  if (!kernel_dtype_source_.empty()) return kernel_dtype_source_;
  if (kernel_dtype_rule_ == KernelDTypeRule::kFromInput && !inputs_.empty()) {
    return inputs_.front().name;
  }
  return kEmpty;
}

const AttrSpec* OpSchema::FindAttr(std::string_view name) const {
  for (const auto& a : attrs_) {
    if (a.name == name) return &a;
  }
  return OpSchemaRegistry::Global().FindCommonAttr(name);
}

const SlotSpec* OpSchema::FindInput(std::string_view name) const {
  for (const auto& s : inputs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const SlotSpec* OpSchema::FindOutput(std::string_view name) const {
  for (const auto& s : outputs_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// ---- OpSchemaRegistry -------------------------------------------------------

OpSchemaRegistry::OpSchemaRegistry() {
  auto common = [this](const std::string& name, auto default_value) {
    AttrSpec spec;
    spec.name = name;
    spec.type = AttrTypeOf<decltype(default_value)>();
    spec.default_value.set_name(name);
    WriteAttr(&spec.default_value, default_value);
    common_attrs_.push_back(std::move(spec));
  };
  common("op_role", 0);
  common("op_role_var", std::vector<std::string>{});
  common("op_namescope", std::string());
  common("op_callstack", std::vector<std::string>{});
  common("op_device", std::string());
  common("place_group", std::string());  // graph/ir/place_group.h
}

const OpSchemaRegistry& OpSchemaRegistry::Global() {
  static const OpSchemaRegistry* registry = [] {
    auto* r = new OpSchemaRegistry();
    RegisterAllOpSchemas(r);
    return r;
  }();
  return *registry;
}

void OpSchemaRegistry::AddToGlobalForTesting(OpSchema schema) {
  // Global() is built as a non-const object; only its accessor is const.
  const_cast<OpSchemaRegistry&>(Global()).Add(std::move(schema));
}

void OpSchemaRegistry::Add(OpSchema schema) {
  std::string type = schema.type();
  auto [it, inserted] = schemas_.emplace(type, std::move(schema));
  PAREX_CHECK(inserted, "op schema '" + type + "' registered twice");
}

const OpSchema* OpSchemaRegistry::Find(std::string_view type) const {
  auto it = schemas_.find(type);
  return it == schemas_.end() ? nullptr : &it->second;
}

StatusOr<const OpSchema*> OpSchemaRegistry::Get(std::string_view type) const {
  if (const OpSchema* s = Find(type)) return s;
  return NotFound("unknown op type '" + std::string(type) + "'");
}

std::vector<std::string> OpSchemaRegistry::Types() const {
  std::vector<std::string> types;
  for (const auto& [type, schema] : schemas_) types.push_back(type);
  return types;
}

const AttrSpec* OpSchemaRegistry::FindCommonAttr(std::string_view name) const {
  for (const auto& a : common_attrs_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// ---- compile-time shape inference -------------------------------------------

namespace {

class CompileTimeShapeContext : public ShapeContext {
 public:
  CompileTimeShapeContext(OpDesc& op, Block& block, bool write_back)
      : op_(op), block_(block), write_back_(write_back) {}

  const OpDesc& op() const override { return op_; }
  bool IsRuntime() const override { return false; }
  int InputCount(std::string_view slot) const override {
    return static_cast<int>(op_.Input(slot).size());
  }
  int OutputCount(std::string_view slot) const override {
    return static_cast<int>(op_.Output(slot).size());
  }
  Dims InputDims(std::string_view slot, int i) const override {
    const VarDesc* v = InputVar(slot, i);
    return v ? v->dims() : Dims{};
  }
  DType InputDType(std::string_view slot, int i) const override {
    const VarDesc* v = InputVar(slot, i);
    return v ? v->dtype() : DType::kUndefined;
  }
  void SetOutputDims(std::string_view slot, int i, const Dims& dims) override {
    if (VarDesc* v = OutputVar(slot, i)) v->SetDims(dims);
  }
  void SetOutputDType(std::string_view slot, int i, DType dtype) override {
    if (dtype == DType::kUndefined) return;
    if (VarDesc* v = OutputVar(slot, i)) v->SetDType(dtype);
  }

 private:
  const VarDesc* InputVar(std::string_view slot, int i) const {
    auto args = op_.Input(slot);
    if (i >= static_cast<int>(args.size())) return nullptr;
    return block_.FindVar(args[i]);
  }
  VarDesc* OutputVar(std::string_view slot, int i) {
    if (!write_back_) return nullptr;
    auto args = op_.Output(slot);
    if (i >= static_cast<int>(args.size()) || args[i].empty()) return nullptr;
    VarDesc* v = block_.FindVar(args[i]);
    // Never overwrite the declared shape of a persistable (parameter) var.
    return v && !v->persistable() ? v : nullptr;
  }

  OpDesc& op_;
  Block& block_;
  bool write_back_;
};

}  // namespace

Status InferShapeAtCompileTime(OpDesc& op, Block& block, bool write_back) {
  PAREX_ASSIGN_OR_RETURN(const OpSchema* schema,
                         OpSchemaRegistry::Global().Get(op.type()));
  if (!schema->infer_shape()) return Status::Ok();
  CompileTimeShapeContext ctx(op, block, write_back);
  return schema->infer_shape()(ctx);
}

Status FillDefaultAttrs(OpDesc* op) {
  PAREX_ASSIGN_OR_RETURN(const OpSchema* schema,
                         OpSchemaRegistry::Global().Get(op->type()));
  for (const AttrSpec& spec : schema->attrs()) {
    if (spec.required || op->HasAttr(spec.name)) continue;
    *op->mutable_proto()->add_attrs() = spec.default_value;
  }
  return Status::Ok();
}

std::string GradVarName(std::string_view name) {
  return std::string(name) + std::string(kGradSuffix);
}

Status InferGradShapesFromForwardInputs(ShapeContext& ctx) {
  for (const std::string& slot : ctx.op().OutputSlots()) {
    std::string_view s = slot;
    if (s.size() <= kGradSuffix.size() ||
        s.substr(s.size() - kGradSuffix.size()) != kGradSuffix) {
      continue;
    }
    std::string_view forward = s.substr(0, s.size() - kGradSuffix.size());
    int n = std::min(ctx.InputCount(forward), ctx.OutputCount(s));
    for (int i = 0; i < n; ++i) {
      ctx.SetOutputDims(s, i, ctx.InputDims(forward, i));
      ctx.SetOutputDType(s, i, ctx.InputDType(forward, i));
    }
  }
  return Status::Ok();
}

}  // namespace parex
