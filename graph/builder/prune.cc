#include "graph/builder/prune.h"

#include <algorithm>
#include <set>

#include "graph/ir/op_role.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"

namespace parex {
namespace {

constexpr char kFeedHolder[] = "feed";
constexpr char kFetchHolder[] = "fetch";

// True for ops that belong to the training half of a program.
StatusOr<bool> IsTrainingOp(const OpDesc& op) {
  PAREX_ASSIGN_OR_RETURN(int role, op.GetAttr<int>("op_role"));
  return (role & (kOpRoleBackward | kOpRoleOptimize | kOpRoleLRSched)) != 0;
}

void AddHolderVar(proto::BlockDesc* block, const std::string& name,
                  proto::VarType::Type type) {
  proto::VarDesc* var = block->add_vars();
  var->set_name(name);
  var->mutable_type()->set_type(type);
  var->set_persistable(true);
}

proto::OpDesc MakeIoOp(const std::string& type, const std::string& in,
                       const std::string& out, int col) {
  proto::OpDesc op;
  op.set_type(type);
  auto* x = op.add_inputs();
  x->set_parameter("X");
  x->add_arguments(in);
  auto* o = op.add_outputs();
  o->set_parameter("Out");
  o->add_arguments(out);
  OpDesc view(&op, 0, 0);
  view.SetAttr<int>("col", col);
  view.SetAttr<int>("op_role", kOpRoleForward);
  return op;
}

// One block; the feeds distinct; every feed and fetch target a tensor
// variable of it.
Status CheckPruneArgs(const Program& program,
                      const std::vector<std::string>& feeds,
                      const std::vector<std::string>& fetches) {
  if (program.num_blocks() != 1) {
    return Unimplemented("prune: the program has " +
                         std::to_string(program.num_blocks()) +
                         " blocks; only one-block programs are pruned");
  }
  if (fetches.empty()) return InvalidArgument("prune: no fetch targets");
  const std::set<std::string> fed(feeds.begin(), feeds.end());
  if (fed.size() != feeds.size()) {
    return InvalidArgument("prune: a feed name is given twice");
  }
  const Block& block = program.global_block();
  for (const auto* names : {&feeds, &fetches}) {
    for (const std::string& name : *names) {
      const VarDesc* var = block.FindLocalVar(name);
      if (var == nullptr || !var->is_tensor()) {
        return NotFound(std::string("prune: ") +
                        (names == &feeds ? "feed" : "fetch target") + " '" +
                        name + "' is no tensor variable of the program");
      }
    }
  }
  return Status::Ok();
}

// The forward ops the fetch targets need, walking backwards from them and
// stopping at the feeds; an error naming a needed variable that is neither
// fed, persistable nor computed.
StatusOr<std::vector<bool>> OpsToKeep(const Block& block,
                                      const std::set<std::string>& fed,
                                      const std::vector<std::string>& fetches) {
  std::set<std::string> needed(fetches.begin(), fetches.end());
  std::set<std::string> produced;
  std::vector<bool> keep(block.num_ops(), false);
  for (int i = block.num_ops() - 1; i >= 0; --i) {
    const OpDesc& op = block.op(i);
    if (op.type() == "feed" || op.type() == "fetch") continue;
    PAREX_ASSIGN_OR_RETURN(bool training, IsTrainingOp(op));
    if (training) continue;
    bool wanted = false;
    for (const std::string& out : op.OutputArgumentNames()) {
      if (needed.count(out) && !fed.count(out)) wanted = true;
    }
    if (!wanted) continue;
    keep[i] = true;
    for (const std::string& out : op.OutputArgumentNames()) {
      produced.insert(out);
    }
    for (const std::string& in : op.InputArgumentNames()) needed.insert(in);
  }
  for (const std::string& name : needed) {
    if (fed.count(name) || produced.count(name)) continue;
    const VarDesc* var = block.FindVar(name);
    if (var != nullptr && var->persistable()) continue;
    return InvalidArgument("prune: the fetch targets depend on '" + name +
                           "', which is neither fed, persistable nor "
                           "computed from the feeds");
  }
  return keep;
}

// The variables of `block` the kept ops, feeds and fetch targets use, into
// `out`, with the feed and fetch holders (an error where the program uses
// a holder's name as a tensor).
Status AddUsedVars(const Block& block, const std::vector<bool>& keep,
                   const std::vector<std::string>& feeds,
                   const std::vector<std::string>& fetches,
                   proto::BlockDesc* out) {
  std::set<std::string> used(feeds.begin(), feeds.end());
  used.insert(fetches.begin(), fetches.end());
  for (int i = 0; i < block.num_ops(); ++i) {
    if (!keep[i]) continue;
    for (const std::string& n : block.op(i).InputArgumentNames()) {
      used.insert(n);
    }
    for (const std::string& n : block.op(i).OutputArgumentNames()) {
      used.insert(n);
    }
  }
  for (const char* holder : {kFeedHolder, kFetchHolder}) {
    if (used.count(holder)) {
      return InvalidArgument(std::string("prune: the program uses '") + holder +
                             "' as a tensor, the name of the " + holder +
                             " holder");
    }
  }
  for (const auto& var : block.vars()) {
    if (used.count(var->name())) *out->add_vars() = var->proto();
  }
  AddHolderVar(out, kFeedHolder, proto::VarType::FEED_MINIBATCH);
  AddHolderVar(out, kFetchHolder, proto::VarType::FETCH_LIST);
  return Status::Ok();
}

// The feed ops, the kept ops in test mode (is_test set wherever the op has
// it), the fetch ops.
void AddOps(const Block& block, const std::vector<bool>& keep,
            const std::vector<std::string>& feeds,
            const std::vector<std::string>& fetches, proto::BlockDesc* out) {
  for (int col = static_cast<int>(feeds.size()) - 1; col >= 0; --col) {
    *out->add_ops() = MakeIoOp("feed", kFeedHolder, feeds[col], col);
  }
  for (int i = 0; i < block.num_ops(); ++i) {
    if (!keep[i]) continue;
    proto::OpDesc* op = out->add_ops();
    *op = block.op(i).proto();
    const OpSchema* schema = OpSchemaRegistry::Global().Find(op->type());
    OpDesc view(op, 0, out->ops_size() - 1);
    if ((schema != nullptr && schema->FindAttr("is_test") != nullptr) ||
        view.HasAttr("is_test")) {
      view.SetAttr<bool>("is_test", true);
    }
  }
  for (size_t col = 0; col < fetches.size(); ++col) {
    *out->add_ops() =
        MakeIoOp("fetch", fetches[col], kFetchHolder, static_cast<int>(col));
  }
}

}  // namespace

StatusOr<Program> Prune(const Program& program,
                        const std::vector<std::string>& feeds,
                        const std::vector<std::string>& fetches) {
  PAREX_RETURN_IF_ERROR(CheckPruneArgs(program, feeds, fetches));
  const Block& block = program.global_block();
  const std::set<std::string> fed(feeds.begin(), feeds.end());
  PAREX_ASSIGN_OR_RETURN(std::vector<bool> keep,
                         OpsToKeep(block, fed, fetches));
  // Assemble the inference program.
  proto::ProgramDesc desc = program.proto();
  desc.clear_blocks();
  proto::BlockDesc* out = desc.add_blocks();
  out->set_idx(0);
  out->set_parent_idx(-1);
  PAREX_RETURN_IF_ERROR(AddUsedVars(block, keep, feeds, fetches, out));
  AddOps(block, keep, feeds, fetches, out);
  Program pruned(std::move(desc));
  Status valid = ValidateProgram(pruned);
  if (!valid.ok()) return valid.WithContext("prune: the pruned program");
  return pruned;
}

Program WithoutOpsMakingOnly(const Program& program,
                             const std::vector<std::string>& names) {
  if (names.empty()) return program;
  proto::ProgramDesc desc = program.proto();
  proto::BlockDesc* block = desc.mutable_blocks(0);
  google::protobuf::RepeatedPtrField<proto::OpDesc> kept;
  for (const proto::OpDesc& op : block->ops()) {
    bool only_names = op.outputs_size() > 0;
    for (const proto::OpDesc::Var& slot : op.outputs()) {
      for (const std::string& arg : slot.arguments()) {
        only_names = only_names &&
                     std::find(names.begin(), names.end(), arg) != names.end();
      }
    }
    if (!only_names) *kept.Add() = op;
  }
  block->mutable_ops()->Swap(&kept);
  return Program(std::move(desc));
}

}  // namespace parex
