#include "graph/ir/validate.h"

#include <algorithm>

#include "base/checked_math.h"
#include "graph/ir/op_schema.h"

namespace parex {
namespace {

Status CheckSlots(const OpDesc& op, const Block& block,
                  const std::vector<SlotSpec>& specs, bool inputs) {
  const char* kind = inputs ? "input" : "output";
  const auto slots = inputs ? op.InputSlots() : op.OutputSlots();
  for (const SlotSpec& spec : specs) {
    auto args = inputs ? op.Input(spec.name) : op.Output(spec.name);
    if (args.empty() && !spec.optional()) {
      return InvalidArgument(op.Label() + ": required " + kind + " slot '" +
                             spec.name + "' is missing or empty");
    }
    if (args.size() > 1 && !spec.duplicable()) {
      return InvalidArgument(op.Label() + ": " + kind + " slot '" + spec.name +
                             "' takes one variable, got " +
                             std::to_string(args.size()));
    }
  }
  for (const std::string& slot : slots) {
    bool known = false;
    for (const SlotSpec& spec : specs) known |= spec.name == slot;
    auto args = inputs ? op.Input(slot) : op.Output(slot);
    // Unknown slots are accepted when empty (Paddle versions add optional
    // slots); a non-empty unknown slot means parex would silently ignore data.
    if (!known && !args.empty()) {
      return InvalidArgument(op.Label() + ": unknown " + kind + " slot '" +
                             slot + "'");
    }
    for (const std::string& arg : args) {
      // Paddle's "@EMPTY@": no variable (a gradient nobody needs).
      if (arg.empty() || arg == kEmptyVarName) continue;
      if (block.FindVar(arg) == nullptr) {
        return NotFound(op.Label() + ": " + kind + " '" + slot +
                        "' names undeclared variable '" + arg + "'");
      }
    }
  }
  return Status::Ok();
}

Status CheckAttrs(const OpDesc& op, const OpSchema& schema) {
  for (const auto& attr : op.proto().attrs()) {
    const AttrSpec* spec = schema.FindAttr(attr.name());
    if (spec == nullptr) continue;  // attributes parex does not use
    if (!AttrTypesCompatible(spec->type, attr.type())) {
      return InvalidArgument(op.Label() + ": attribute '" + attr.name() +
                             "' has type " + AttrTypeName(attr.type()) +
                             ", expected " + AttrTypeName(spec->type));
    }
  }
  for (const AttrSpec& spec : schema.attrs()) {
    if (spec.required && !op.HasAttr(spec.name)) {
      return InvalidArgument(op.Label() + ": required attribute '" + spec.name +
                             "' is missing");
    }
  }
  return Status::Ok();
}

// An output that is one of the op's persistable inputs overwrites a
// parameter or optimizer state: only the schema's in-place pairs may.
Status CheckPersistableAliases(const OpDesc& op, const Block& block,
                               const OpSchema& schema) {
  for (const std::string& out_slot : op.OutputSlots()) {
    for (const std::string& arg : op.Output(out_slot)) {
      if (arg.empty()) continue;
      const VarDesc* var = block.FindVar(arg);
      if (var == nullptr || !var->persistable()) continue;
      for (const std::string& in_slot : op.InputSlots()) {
        const auto ins = op.Input(in_slot);
        if (std::find(ins.begin(), ins.end(), arg) == ins.end()) continue;
        bool declared = false;
        for (const auto& [in, out] : schema.inplace()) {
          declared = declared || (in == in_slot && out == out_slot);
        }
        if (!declared) {
          return InvalidArgument(op.Label() + ": output '" + out_slot +
                                 "' writes persistable "
                                 "variable '" +
                                 arg + "', which is also its input '" +
                                 in_slot + "'; '" + op.type() +
                                 "' is not in-place from '" + in_slot +
                                 "' to '" + out_slot + "'");
        }
      }
    }
  }
  return Status::Ok();
}

// Declared shapes: rank at most kMaxRank, extents -1 (unknown) or >= 0, and
// the known extents' product within kMaxNumel, so shape inference over them
// cannot overflow.
Status CheckVarShapes(const Block& block) {
  for (const auto& var : block.vars()) {
    if (!var->is_tensor()) continue;
    Dims known = var->dims();
    for (int64_t& d : known) {
      if (d < -1) {
        return InvalidArgument("block " + std::to_string(block.idx()) +
                               ": variable '" + var->name() + "' has extent " +
                               std::to_string(d) + " in its shape " +
                               DimsToString(var->dims()));
      }
      if (d == -1) d = 1;
    }
    StatusOr<int64_t> numel =
        CheckedNumel(known, "block " + std::to_string(block.idx()) +
                                ": variable '" + var->name() + "'");
    if (!numel.ok()) return InvalidArgument(numel.status().message());
  }
  return Status::Ok();
}

}  // namespace

Status ValidateOp(const OpDesc& op, const Block& block) {
  StatusOr<const OpSchema*> schema = OpSchemaRegistry::Global().Get(op.type());
  if (!schema.ok()) return schema.status().WithContext(op.Label());
  PAREX_RETURN_IF_ERROR(CheckSlots(op, block, (*schema)->inputs(), true));
  PAREX_RETURN_IF_ERROR(CheckSlots(op, block, (*schema)->outputs(), false));
  PAREX_RETURN_IF_ERROR(CheckAttrs(op, **schema));
  PAREX_RETURN_IF_ERROR(CheckPersistableAliases(op, block, **schema));
  // Shape inference reads only; write_back=false leaves the program as it is.
  return InferShapeAtCompileTime(const_cast<OpDesc&>(op),
                                 const_cast<Block&>(block),
                                 /*write_back=*/false);
}

Status ValidateProgram(const Program& program) {
  for (int b = 0; b < program.num_blocks(); ++b) {
    const Block& block = program.block(b);
    if (block.idx() != b) {
      return InvalidArgument("block " + std::to_string(b) + " has idx " +
                             std::to_string(block.idx()));
    }
    // Each block's parent comes before it, so the block tree is acyclic and
    // rooted at block 0, whose parent is -1.
    if (b == 0 && block.parent_idx() != -1) {
      return InvalidArgument("block 0 has parent_idx " +
                             std::to_string(block.parent_idx()) +
                             "; the root block's parent must be -1");
    }
    if (b > 0 && (block.parent_idx() < 0 || block.parent_idx() >= b)) {
      return InvalidArgument("block " + std::to_string(b) +
                             " has a bad parent_idx " +
                             std::to_string(block.parent_idx()));
    }
    PAREX_RETURN_IF_ERROR(CheckVarShapes(block));
    for (const auto& op : block.ops()) {
      PAREX_RETURN_IF_ERROR(ValidateOp(*op, block));
    }
  }
  return Status::Ok();
}

}  // namespace parex
