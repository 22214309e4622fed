// The program IR: Program / Block / OpDesc / VarDesc, thin C++ views over
// Paddle's ProgramDesc protobuf.
//
// Ownership: a Program owns its protobuf and the view objects. Views stay
// valid while the Program lives (protobuf keeps repeated message elements at
// stable addresses; parex never deletes ops or vars from a block in place).
// Everything a file held, including fields parex does not know, is kept, so a
// program read and written back gives the same bytes.
// Thread-safety: const methods may run concurrently; mutation needs exclusive
// access.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/dims.h"
#include "base/dtype.h"
#include "base/status.h"
#include "graph/ir/attribute.h"
#include "proto/framework.pb.h"
#include "proto/program_io.h"

namespace parex {

class VarDesc {
 public:
  explicit VarDesc(proto::VarDesc* desc) : desc_(desc) {}

  const std::string& name() const { return desc_->name(); }
  // LOD_TENSOR, SELECTED_ROWS, FEED_MINIBATCH, FETCH_LIST, ...
  proto::VarType::Type type() const { return desc_->type().type(); }
  bool is_tensor() const;  // LOD_TENSOR or SELECTED_ROWS
  // Element type and dims of a tensor var; kUndefined / {} otherwise.
  DType dtype() const;
  Dims dims() const;
  // The declared rank and extent i (-1: unknown), without copying the dims.
  int rank() const;
  int64_t dim(int i) const;
  bool persistable() const { return desc_->persistable(); }
  bool stop_gradient() const { return desc_->stop_gradient(); }
  bool is_parameter() const { return desc_->is_parameter(); }

  void SetType(proto::VarType::Type type);
  void SetDType(DType dtype);  // makes the var a LOD_TENSOR if it had no type
  void SetDims(const Dims& dims);
  void SetPersistable(bool v) { desc_->set_persistable(v); }
  void SetStopGradient(bool v) { desc_->set_stop_gradient(v); }
  void SetIsParameter(bool v) { desc_->set_is_parameter(v); }

  const proto::VarDesc& proto() const { return *desc_; }
  proto::VarDesc* mutable_proto() { return desc_; }

 private:
  proto::VarType::TensorDesc* MutableTensorDesc();
  const proto::VarType::TensorDesc* TensorDesc() const;
  proto::VarDesc* desc_;
};

class Block;

// Paddle's argument for "no variable" (a gradient nobody needs, as
// while_grad's X@GRAD of a loop counter writes it).
inline constexpr std::string_view kEmptyVarName = "@EMPTY@";

class OpDesc {
 public:
  // `block`: the block that holds the op (null for an op outside a program,
  // such as a gradient maker's scratch op).
  OpDesc(proto::OpDesc* desc, int block_idx, int index,
         const Block* block = nullptr)
      : desc_(desc), block_idx_(block_idx), index_(index), block_(block) {}

  const std::string& type() const { return desc_->type(); }
  int block_idx() const { return block_idx_; }
  int index() const { return index_; }  // position in its block
  const Block* block() const { return block_; }
  // "op #3 'mul' (block 0)": how errors name this op.
  std::string Label() const;

  // Argument names bound to a slot; empty when the slot is absent or empty.
  std::vector<std::string> Input(std::string_view slot) const;
  std::vector<std::string> Output(std::string_view slot) const;
  // The first argument of a slot, or "" when there is none.
  std::string FirstInput(std::string_view slot) const;
  std::string FirstOutput(std::string_view slot) const;
  bool HasInput(std::string_view slot) const {
    return !FirstInput(slot).empty();
  }
  bool HasOutput(std::string_view slot) const {
    return !FirstOutput(slot).empty();
  }
  std::vector<std::string> InputSlots() const;
  std::vector<std::string> OutputSlots() const;
  // Every var name read / written, in slot order (kEmptyVarName left out).
  std::vector<std::string> InputArgumentNames() const;
  std::vector<std::string> OutputArgumentNames() const;

  void SetInput(const std::string& slot, const std::vector<std::string>& args);
  void SetOutput(const std::string& slot, const std::vector<std::string>& args);

  // The attribute as stored, or nullptr.
  const proto::OpDesc::Attr* FindAttr(std::string_view name) const;
  bool HasAttr(std::string_view name) const {
    return FindAttr(name) != nullptr;
  }
  std::vector<std::string> AttrNames() const;

  // The attribute read as T; when the op does not store it, the default of
  // the op's schema. Errors name the op and the attribute.
  template <typename T>
  StatusOr<T> GetAttr(std::string_view name) const;

  template <typename T>
  void SetAttr(const std::string& name, const T& value) {
    WriteAttr<T>(MutableAttr(name), value);
  }
  void RemoveAttr(std::string_view name);
  // A BLOCK attribute (control flow's `sub_block`): the block it names,
  // checked to exist and to be a child of this op's block. Errors name the
  // op, the attribute and the index.
  StatusOr<const Block*> SubBlock(std::string_view name) const;

  const proto::OpDesc& proto() const { return *desc_; }
  proto::OpDesc* mutable_proto() { return desc_; }

 private:
  proto::OpDesc::Attr* MutableAttr(const std::string& name);
  // The stored attribute, else the schema default, else an error.
  StatusOr<const proto::OpDesc::Attr*> AttrOrDefault(
      std::string_view name) const;

  proto::OpDesc* desc_;
  int block_idx_;
  int index_;
  const Block* block_;
};

class Program;

class Block {
 public:
  Block(Program* program, proto::BlockDesc* desc);

  int idx() const { return desc_->idx(); }
  int parent_idx() const { return desc_->parent_idx(); }
  // The block a gradient block differentiates (-1 for other blocks).
  int forward_block_idx() const { return desc_->forward_block_idx(); }
  Program* program() const { return program_; }

  int num_ops() const { return static_cast<int>(ops_.size()); }
  OpDesc& op(int i) { return *ops_[i]; }
  const OpDesc& op(int i) const { return *ops_[i]; }
  const std::vector<std::unique_ptr<OpDesc>>& ops() const { return ops_; }
  OpDesc* AppendOp(const std::string& type);

  // Vars declared in this block, in declaration order.
  const std::vector<std::unique_ptr<VarDesc>>& vars() const { return vars_; }
  // This block's var, or nullptr.
  VarDesc* FindLocalVar(const std::string& name) const;
  // This block's var, its forward block's or an ancestor block's, or
  // nullptr.
  VarDesc* FindVar(const std::string& name) const;
  // This block's var, declared (as a LOD_TENSOR) if missing.
  VarDesc* Var(const std::string& name);

  const proto::BlockDesc& proto() const { return *desc_; }

 private:
  friend class Program;
  Program* program_;
  proto::BlockDesc* desc_;
  std::vector<std::unique_ptr<OpDesc>> ops_;
  std::vector<std::unique_ptr<VarDesc>> vars_;
  std::unordered_map<std::string, VarDesc*> var_index_;
};

class Program {
 public:
  // An empty program with block 0.
  Program();
  explicit Program(proto::ProgramDesc desc);
  Program(const Program& other) : Program(other.proto()) {}
  Program& operator=(const Program& other);
  Program(Program&& other) noexcept;
  Program& operator=(Program&& other) noexcept;

  // Reads a binary or text (.pbtxt/.txt) program file.
  static StatusOr<Program> Load(const std::string& path);
  static StatusOr<Program> Load(const std::string& path, ProgramFormat format);
  Status Save(const std::string& path,
              ProgramFormat format = ProgramFormat::kBinary) const;

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  Block& block(int i) { return *blocks_[i]; }
  const Block& block(int i) const { return *blocks_[i]; }
  Block& global_block() { return *blocks_[0]; }
  const Block& global_block() const { return *blocks_[0]; }
  Block* AppendBlock(int parent_idx);

  const proto::ProgramDesc& proto() const { return *desc_; }

 private:
  void BuildViews();

  std::unique_ptr<proto::ProgramDesc> desc_;
  std::vector<std::unique_ptr<Block>> blocks_;
};

// Every variable some op of `program` (any block) writes. Executors feed by
// sharing the caller's buffer; a fed variable in this set is copied instead,
// or the program would write into the caller's tensor (a to_static loop
// that carries its input, `h = x ... x = tanh(h)`).
std::unordered_set<std::string> VarsWrittenByOps(const Program& program);

}  // namespace parex
