#include "graph/ir/program.h"

#include "graph/ir/op_schema.h"

namespace parex {

// ---- VarDesc ----------------------------------------------------------------

bool VarDesc::is_tensor() const {
  return type() == proto::VarType::LOD_TENSOR ||
         type() == proto::VarType::SELECTED_ROWS;
}

const proto::VarType::TensorDesc* VarDesc::TensorDesc() const {
  const auto& t = desc_->type();
  if (t.type() == proto::VarType::LOD_TENSOR && t.has_lod_tensor()) {
    return &t.lod_tensor().tensor();
  }
  if (t.type() == proto::VarType::SELECTED_ROWS && t.has_selected_rows()) {
    return &t.selected_rows();
  }
  if (t.type() == proto::VarType::LOD_TENSOR_ARRAY && t.has_tensor_array()) {
    return &t.tensor_array().tensor();
  }
  return nullptr;
}

proto::VarType::TensorDesc* VarDesc::MutableTensorDesc() {
  auto* t = desc_->mutable_type();
  if (!t->has_type()) t->set_type(proto::VarType::LOD_TENSOR);
  proto::VarType::TensorDesc* desc = nullptr;
  switch (t->type()) {
    case proto::VarType::SELECTED_ROWS:
      desc = t->mutable_selected_rows();
      break;
    case proto::VarType::LOD_TENSOR_ARRAY:
      desc = t->mutable_tensor_array()->mutable_tensor();
      break;
    default:
      desc = t->mutable_lod_tensor()->mutable_tensor();
      break;
  }
  if (!desc->has_data_type()) desc->set_data_type(proto::VarType::FP32);
  return desc;
}

DType VarDesc::dtype() const {
  const auto* desc = TensorDesc();
  return desc ? static_cast<DType>(desc->data_type()) : DType::kUndefined;
}

Dims VarDesc::dims() const {
  const auto* desc = TensorDesc();
  return desc ? Dims(desc->dims().begin(), desc->dims().end()) : Dims{};
}

int VarDesc::rank() const {
  const auto* desc = TensorDesc();
  return desc ? desc->dims_size() : 0;
}

int64_t VarDesc::dim(int i) const { return TensorDesc()->dims(i); }

void VarDesc::SetType(proto::VarType::Type type) {
  desc_->mutable_type()->set_type(type);
}

void VarDesc::SetDType(DType dtype) {
  MutableTensorDesc()->set_data_type(static_cast<proto::VarType::Type>(dtype));
}

void VarDesc::SetDims(const Dims& dims) {
  auto* desc = MutableTensorDesc();
  desc->clear_dims();
  for (int64_t d : dims) desc->add_dims(d);
}

// ---- OpDesc -----------------------------------------------------------------

namespace {

template <typename Vars>
const proto::OpDesc::Var* FindSlot(const Vars& vars, std::string_view slot) {
  for (const auto& v : vars) {
    if (v.parameter() == slot) return &v;
  }
  return nullptr;
}

template <typename Vars>
std::vector<std::string> Args(const Vars& vars, std::string_view slot) {
  const auto* v = FindSlot(vars, slot);
  if (v == nullptr) return {};
  return std::vector<std::string>(v->arguments().begin(), v->arguments().end());
}

template <typename Vars>
void SetSlot(Vars* vars, const std::string& slot,
             const std::vector<std::string>& args) {
  proto::OpDesc::Var* target = nullptr;
  for (auto& v : *vars) {
    if (v.parameter() == slot) target = &v;
  }
  if (target == nullptr) {
    target = vars->Add();
    target->set_parameter(slot);
  }
  target->clear_arguments();
  for (const auto& a : args) target->add_arguments(a);
}

}  // namespace

std::string OpDesc::Label() const {
  return "op #" + std::to_string(index_) + " '" + type() + "' (block " +
         std::to_string(block_idx_) + ")";
}

StatusOr<const Block*> OpDesc::SubBlock(std::string_view name) const {
  const proto::OpDesc::Attr* attr = FindAttr(name);
  const std::string what = Label() + ": attribute '" + std::string(name) + "'";
  if (attr == nullptr) return InvalidArgument(what + " is missing");
  if (attr->type() != proto::BLOCK) {
    return InvalidArgument(what + " has type " + AttrTypeName(attr->type()) +
                           ", expected BLOCK");
  }
  if (block_ == nullptr) {
    return FailedPrecondition(what + ": the op belongs to no program");
  }
  const Program& program = *block_->program();
  const int idx = attr->block_idx();
  if (idx <= 0 || idx >= program.num_blocks()) {
    return InvalidArgument(what + " names block " + std::to_string(idx) +
                           ", but the program has blocks 0.." +
                           std::to_string(program.num_blocks() - 1) +
                           " and block 0 is nobody's sub-block");
  }
  const Block& sub = program.block(idx);
  // A sub-block is a child of the op's block, so it comes after it: control
  // flow never runs its own block or an ancestor (no unbounded recursion).
  if (sub.parent_idx() != block_idx_) {
    return InvalidArgument(what + " names block " + std::to_string(idx) +
                           ", whose parent is block " +
                           std::to_string(sub.parent_idx()) +
                           ", not the op's "
                           "block " +
                           std::to_string(block_idx_));
  }
  return &sub;
}

std::vector<std::string> OpDesc::Input(std::string_view slot) const {
  return Args(desc_->inputs(), slot);
}
std::vector<std::string> OpDesc::Output(std::string_view slot) const {
  return Args(desc_->outputs(), slot);
}
std::string OpDesc::FirstInput(std::string_view slot) const {
  const auto* v = FindSlot(desc_->inputs(), slot);
  return v && v->arguments_size() > 0 ? v->arguments(0) : std::string();
}
std::string OpDesc::FirstOutput(std::string_view slot) const {
  const auto* v = FindSlot(desc_->outputs(), slot);
  return v && v->arguments_size() > 0 ? v->arguments(0) : std::string();
}

std::vector<std::string> OpDesc::InputSlots() const {
  std::vector<std::string> slots;
  for (const auto& v : desc_->inputs()) slots.push_back(v.parameter());
  return slots;
}
std::vector<std::string> OpDesc::OutputSlots() const {
  std::vector<std::string> slots;
  for (const auto& v : desc_->outputs()) slots.push_back(v.parameter());
  return slots;
}
std::vector<std::string> OpDesc::InputArgumentNames() const {
  std::vector<std::string> names;
  for (const auto& v : desc_->inputs()) {
    for (const std::string& a : v.arguments()) {
      if (a != kEmptyVarName) names.push_back(a);
    }
  }
  return names;
}
std::vector<std::string> OpDesc::OutputArgumentNames() const {
  std::vector<std::string> names;
  for (const auto& v : desc_->outputs()) {
    for (const std::string& a : v.arguments()) {
      if (a != kEmptyVarName) names.push_back(a);
    }
  }
  return names;
}

void OpDesc::SetInput(const std::string& slot,
                      const std::vector<std::string>& args) {
  SetSlot(desc_->mutable_inputs(), slot, args);
}
void OpDesc::SetOutput(const std::string& slot,
                       const std::vector<std::string>& args) {
  SetSlot(desc_->mutable_outputs(), slot, args);
}

const proto::OpDesc::Attr* OpDesc::FindAttr(std::string_view name) const {
  for (const auto& a : desc_->attrs()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::vector<std::string> OpDesc::AttrNames() const {
  std::vector<std::string> names;
  for (const auto& a : desc_->attrs()) names.push_back(a.name());
  return names;
}

proto::OpDesc::Attr* OpDesc::MutableAttr(const std::string& name) {
  for (auto& a : *desc_->mutable_attrs()) {
    if (a.name() == name) return &a;
  }
  auto* a = desc_->add_attrs();
  a->set_name(name);
  a->set_type(proto::INT);
  return a;
}

void OpDesc::RemoveAttr(std::string_view name) {
  auto* attrs = desc_->mutable_attrs();
  for (int i = 0; i < attrs->size(); ++i) {
    if (attrs->Get(i).name() == name) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
  }
}

StatusOr<const proto::OpDesc::Attr*> OpDesc::AttrOrDefault(
    std::string_view name) const {
  if (const auto* a = FindAttr(name)) return a;
  const OpSchema* schema = OpSchemaRegistry::Global().Find(type());
  const AttrSpec* spec = schema ? schema->FindAttr(name) : nullptr;
  if (spec == nullptr || spec->required) {
    return NotFound(Label() + ": attribute '" + std::string(name) +
                    "' is missing");
  }
  return &spec->default_value;
}

template <typename T>
StatusOr<T> OpDesc::GetAttr(std::string_view name) const {
  PAREX_ASSIGN_OR_RETURN(const proto::OpDesc::Attr* attr, AttrOrDefault(name));
  StatusOr<T> value = ReadAttr<T>(*attr);
  if (!value.ok()) return value.status().WithContext(Label());
  return value;
}

template StatusOr<int> OpDesc::GetAttr<int>(std::string_view) const;
template StatusOr<int64_t> OpDesc::GetAttr<int64_t>(std::string_view) const;
template StatusOr<bool> OpDesc::GetAttr<bool>(std::string_view) const;
template StatusOr<float> OpDesc::GetAttr<float>(std::string_view) const;
template StatusOr<double> OpDesc::GetAttr<double>(std::string_view) const;
template StatusOr<std::string> OpDesc::GetAttr<std::string>(
    std::string_view) const;
template StatusOr<std::vector<int>> OpDesc::GetAttr<std::vector<int>>(
    std::string_view) const;
template StatusOr<std::vector<int64_t>> OpDesc::GetAttr<std::vector<int64_t>>(
    std::string_view) const;
template StatusOr<std::vector<bool>> OpDesc::GetAttr<std::vector<bool>>(
    std::string_view) const;
template StatusOr<std::vector<float>> OpDesc::GetAttr<std::vector<float>>(
    std::string_view) const;
template StatusOr<std::vector<double>> OpDesc::GetAttr<std::vector<double>>(
    std::string_view) const;
template StatusOr<std::vector<std::string>>
    OpDesc::GetAttr<std::vector<std::string>>(std::string_view) const;

// ---- Block ------------------------------------------------------------------

Block::Block(Program* program, proto::BlockDesc* desc)
    : program_(program), desc_(desc) {
  for (int i = 0; i < desc_->ops_size(); ++i) {
    ops_.push_back(
        std::make_unique<OpDesc>(desc_->mutable_ops(i), idx(), i, this));
  }
  for (int i = 0; i < desc_->vars_size(); ++i) {
    vars_.push_back(std::make_unique<VarDesc>(desc_->mutable_vars(i)));
    var_index_[vars_.back()->name()] = vars_.back().get();
  }
}

OpDesc* Block::AppendOp(const std::string& type) {
  auto* op = desc_->add_ops();
  op->set_type(type);
  ops_.push_back(std::make_unique<OpDesc>(op, idx(), num_ops(), this));
  return ops_.back().get();
}

VarDesc* Block::FindLocalVar(const std::string& name) const {
  auto it = var_index_.find(name);
  return it == var_index_.end() ? nullptr : it->second;
}

// This block and its parents, at most one visit per block: a crafted
// program whose parent links form a cycle (ValidateProgram rejects it)
// must not make a lookup loop forever. Allocates nothing (steady steps
// look feeds up).
static VarDesc* FindInChain(const Block* b, const Program& program,
                            const std::string& name) {
  int hops = program.num_blocks();
  while (b != nullptr && hops-- > 0) {
    if (VarDesc* v = b->FindLocalVar(name)) return v;
    const int parent = b->parent_idx();
    b = parent >= 0 && parent < program.num_blocks() && parent != b->idx()
            ? &program.block(parent)
            : nullptr;
  }
  return nullptr;
}

VarDesc* Block::FindVar(const std::string& name) const {
  if (VarDesc* v = FindInChain(this, *program_, name)) return v;
  // A gradient block reads the variables of the block it differentiates.
  const int forward = forward_block_idx();
  if (forward >= 0 && forward < program_->num_blocks() && forward != idx()) {
    return FindInChain(&program_->block(forward), *program_, name);
  }
  return nullptr;
}

VarDesc* Block::Var(const std::string& name) {
  if (VarDesc* v = FindLocalVar(name)) return v;
  auto* desc = desc_->add_vars();
  desc->set_name(name);
  desc->mutable_type()->set_type(proto::VarType::LOD_TENSOR);
  vars_.push_back(std::make_unique<VarDesc>(desc));
  var_index_[name] = vars_.back().get();
  return vars_.back().get();
}

// ---- Program ----------------------------------------------------------------

Program::Program() : desc_(std::make_unique<proto::ProgramDesc>()) {
  auto* block = desc_->add_blocks();
  block->set_idx(0);
  block->set_parent_idx(-1);
  BuildViews();
}

Program::Program(proto::ProgramDesc desc)
    : desc_(std::make_unique<proto::ProgramDesc>(std::move(desc))) {
  if (desc_->blocks_size() == 0) {
    auto* block = desc_->add_blocks();
    block->set_idx(0);
    block->set_parent_idx(-1);
  }
  BuildViews();
}

Program::Program(Program&& other) noexcept
    : desc_(std::move(other.desc_)), blocks_(std::move(other.blocks_)) {
  for (auto& b : blocks_) b->program_ = this;
}

Program& Program::operator=(Program&& other) noexcept {
  desc_ = std::move(other.desc_);
  blocks_ = std::move(other.blocks_);
  for (auto& b : blocks_) b->program_ = this;
  return *this;
}

Program& Program::operator=(const Program& other) {
  if (this != &other) *this = Program(other.proto());
  return *this;
}

void Program::BuildViews() {
  blocks_.clear();
  for (int i = 0; i < desc_->blocks_size(); ++i) {
    blocks_.push_back(std::make_unique<Block>(this, desc_->mutable_blocks(i)));
  }
}

Block* Program::AppendBlock(int parent_idx) {
  auto* block = desc_->add_blocks();
  block->set_idx(desc_->blocks_size() - 1);
  block->set_parent_idx(parent_idx);
  blocks_.push_back(std::make_unique<Block>(this, block));
  return blocks_.back().get();
}

StatusOr<Program> Program::Load(const std::string& path) {
  PAREX_ASSIGN_OR_RETURN(proto::ProgramDesc desc, ReadProgramFile(path));
  return Program(std::move(desc));
}

StatusOr<Program> Program::Load(const std::string& path, ProgramFormat format) {
  PAREX_ASSIGN_OR_RETURN(proto::ProgramDesc desc,
                         ReadProgramFile(path, format));
  return Program(std::move(desc));
}

Status Program::Save(const std::string& path, ProgramFormat format) const {
  return WriteProgramFile(path, *desc_, format);
}

std::unordered_set<std::string> VarsWrittenByOps(const Program& program) {
  std::unordered_set<std::string> written;
  for (int b = 0; b < program.num_blocks(); ++b) {
    for (const auto& op : program.block(b).ops()) {
      if (op->type() == "feed") continue;  // the feed itself
      for (const std::string& name : op->OutputArgumentNames()) {
        written.insert(name);
      }
    }
  }
  return written;
}

}  // namespace parex
