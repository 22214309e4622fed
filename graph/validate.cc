#include "graph/validate.h"

#include "graph/op_schema.h"

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
      if (arg.empty()) continue;
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
      return InvalidArgument(op.Label() + ": required attribute '" +
                             spec.name + "' is missing");
    }
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
    if (b > 0 && (block.parent_idx() < 0 || block.parent_idx() >= b)) {
      return InvalidArgument("block " + std::to_string(b) +
                             " has a bad parent_idx " +
                             std::to_string(block.parent_idx()));
    }
    for (const auto& op : block.ops()) {
      PAREX_RETURN_IF_ERROR(ValidateOp(*op, block));
    }
  }
  return Status::Ok();
}

}  // namespace parex
