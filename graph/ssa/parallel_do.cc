#include "graph/ssa/parallel_do.h"

#include <algorithm>
#include <set>
#include <utility>

#include "graph/builder/backward.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/validate.h"
#include "graph/ssa/multi_device_builder.h"

namespace parex {
namespace {

constexpr char kParallelDo[] = "parallel_do";
constexpr char kParallelDoGrad[] = "parallel_do_grad";

bool WritesVar(const OpDesc& op, const std::string& name) {
  const std::vector<std::string> outs = op.OutputArgumentNames();
  return std::find(outs.begin(), outs.end(), name) != outs.end();
}

// ---- FlattenParallelDo ------------------------------------------------------

// The block a parallel_do / parallel_do_grad op runs: its BLOCK attribute
// `sub_block`, a block other than block 0 that exists.
StatusOr<int> SubBlockOf(const Program& program, const OpDesc& op) {
  const proto::OpDesc::Attr* attr = op.FindAttr("sub_block");
  if (attr == nullptr) {
    return InvalidArgument(op.Label() + ": attribute 'sub_block' is missing");
  }
  if (attr->type() != proto::BLOCK) {
    return InvalidArgument(op.Label() + ": attribute 'sub_block' has type " +
                           AttrTypeName(attr->type()) + ", expected BLOCK");
  }
  const int idx = attr->block_idx();
  if (idx <= 0 || idx >= program.num_blocks()) {
    return InvalidArgument(op.Label() + ": sub_block " + std::to_string(idx) +
                           " is not one of blocks 1.." +
                           std::to_string(program.num_blocks() - 1));
  }
  for (const auto& inner : program.block(idx).ops()) {
    if (inner->type() == kParallelDo || inner->type() == kParallelDoGrad) {
      return Unimplemented(op.Label() + ": nested " + inner->Label() +
                           " is not supported");
    }
  }
  return idx;
}

// One parallel_do of block 0 and what its grad op (if any) adds.
struct ParallelDoRegion {
  int forward_block = -1;
  std::vector<std::string> params;  // Parameters of parallel_do (and _grad)
  std::set<std::string> forward_writes;
};

// An op of the flattened block 0 and where it came from.
struct FlatOp {
  proto::OpDesc desc;
  enum Origin { kBlock0, kForward, kBackward } origin = kBlock0;
  int region = -1;  // for forward/backward ops: index into the regions
};

Status CheckDeclared(const Program& program, const OpDesc& op,
                     const std::string& slot, int sub_block) {
  for (const std::string& name : op.Input(slot)) {
    if (program.global_block().FindVar(name) == nullptr &&
        (sub_block < 0 || program.block(sub_block).FindVar(name) == nullptr)) {
      return NotFound(op.Label() + ": " + slot + " entry '" + name +
                      "' is not a declared variable");
    }
  }
  return Status::Ok();
}

// Like AppendBackward, for each parameter in turn: the last op of a
// backward region writing `param`@GRAD gets op_role Backward and [param,
// grad] put in front of its op_role_var (pairs naming these parameters that
// the region's ops carried are dropped first).
void MarkGradProducers(Block& block, const std::vector<int>& region_ops,
                       const std::vector<std::string>& params) {
  const std::set<std::string> named(params.begin(), params.end());
  for (int i : region_ops) {
    const std::vector<std::string> old = OpRoleVar(block.op(i));
    std::vector<std::string> kept;
    for (size_t k = 0; k + 1 < old.size(); k += 2) {
      if (!named.count(old[k])) kept.insert(kept.end(), {old[k], old[k + 1]});
    }
    if (kept.size() == old.size()) continue;  // untouched: bytes unchanged
    block.op(i).RemoveAttr("op_role_var");
    if (!kept.empty()) block.op(i).SetAttr("op_role_var", kept);
  }
  for (const std::string& param : params) {
    const std::string grad = GradVarName(param);
    int last = -1;
    for (int i : region_ops) {
      if (WritesVar(block.op(i), grad)) last = i;
    }
    if (last < 0) continue;  // a parameter the backward block does not train
    OpDesc& producer = block.op(last);
    std::vector<std::string> value = {param, grad};
    for (std::string& v : OpRoleVar(producer)) value.push_back(std::move(v));
    producer.SetAttr<int>("op_role", kOpRoleBackward);
    producer.SetAttr("op_role_var", value);
  }
}

// Block 0's ops with each parallel_do replaced by its forward block's ops
// and each parallel_do_grad by its backward block's (allreduce dropped),
// remembering the regions and the blocks consumed.
struct Flattening {
  const Program& program;
  std::vector<ParallelDoRegion> regions;
  std::vector<FlatOp> flat;
  std::vector<int> consumed;

  Status AddForward(const OpDesc& op) {
    PAREX_ASSIGN_OR_RETURN(int fwd, SubBlockOf(program, op));
    PAREX_RETURN_IF_ERROR(CheckDeclared(program, op, "Inputs", -1));
    PAREX_RETURN_IF_ERROR(CheckDeclared(program, op, "Parameters", fwd));
    ParallelDoRegion& region = regions.emplace_back();
    region.forward_block = fwd;
    region.params = op.Input("Parameters");
    for (const auto& inner : program.block(fwd).ops()) {
      for (const std::string& n : inner->OutputArgumentNames()) {
        region.forward_writes.insert(n);
      }
      flat.push_back({inner->proto(), FlatOp::kForward,
                      static_cast<int>(regions.size()) - 1});
    }
    for (const std::string& out : op.Output("Outputs")) {
      if (!region.forward_writes.count(out)) {
        return InvalidArgument(op.Label() + ": Outputs entry '" + out +
                               "' is not written by its sub_block " +
                               std::to_string(fwd));
      }
    }
    consumed.push_back(fwd);
    return Status::Ok();
  }

  Status AddBackward(const OpDesc& op) {
    PAREX_ASSIGN_OR_RETURN(int bwd, SubBlockOf(program, op));
    int paired = -1;
    const int parent = program.block(bwd).parent_idx();
    for (int r = 0; r < static_cast<int>(regions.size()); ++r) {
      if (regions[r].forward_block == parent) paired = r;
    }
    if (paired < 0) paired = static_cast<int>(regions.size()) - 1;
    if (paired < 0) {
      return FailedPrecondition(op.Label() +
                                ": no parallel_do before it to pair with");
    }
    PAREX_RETURN_IF_ERROR(CheckDeclared(program, op, "Parameters",
                                        regions[paired].forward_block));
    auto& params = regions[paired].params;
    for (const std::string& p : op.Input("Parameters")) {
      if (!std::count(params.begin(), params.end(), p)) params.push_back(p);
    }
    consumed.push_back(bwd);
    for (const auto& inner : program.block(bwd).ops()) {
      if (inner->type() == "allreduce") continue;
      flat.push_back({inner->proto(), FlatOp::kBackward, paired});
    }
    return Status::Ok();
  }

  // The flattened program: block 0's ops replaced, sub-block vars hoisted,
  // the consumed blocks emptied.
  Program Assemble() const {
    proto::ProgramDesc desc = program.proto();
    proto::BlockDesc* top = desc.mutable_blocks(0);
    top->clear_ops();
    for (const FlatOp& f : flat) *top->add_ops() = f.desc;
    std::set<std::string> declared;
    for (const auto& v : top->vars()) declared.insert(v.name());
    for (int b : consumed) {
      for (const auto& v : desc.blocks(b).vars()) {
        if (declared.insert(v.name()).second) *top->add_vars() = v;
      }
    }
    for (int b : consumed) {  // after hoisting: a block may be consumed twice
      desc.mutable_blocks(b)->clear_ops();
      desc.mutable_blocks(b)->clear_vars();
    }
    return Program(std::move(desc));
  }

  // Roles, the gradient producers and the fill of loss@GRAD, on the
  // assembled block 0.
  void MarkRoles(Block& out) const {
    bool has_loss_fill = false;
    std::vector<std::vector<int>> backward_ops(regions.size());
    for (int i = 0; i < out.num_ops(); ++i) {
      OpDesc& op = out.op(i);
      const FlatOp& f = flat[i];
      if (f.origin == FlatOp::kForward && !op.HasAttr("op_role")) {
        op.SetAttr<int>("op_role", kOpRoleForward);
      }
      if (f.origin == FlatOp::kBackward) {
        if (!op.HasAttr("op_role")) op.SetAttr<int>("op_role", kOpRoleBackward);
        backward_ops[f.region].push_back(i);
      }
      has_loss_fill |= OpRole(op) == (kOpRoleBackward | kOpRoleLoss);
    }
    for (size_t r = 0; r < regions.size(); ++r) {
      MarkGradProducers(out, backward_ops[r], regions[r].params);
      if (has_loss_fill || backward_ops[r].empty()) continue;
      OpDesc& first = out.op(backward_ops[r].front());
      bool of_forward = false;  // writes <v>@GRAD for a forward var v
      for (const std::string& v : regions[r].forward_writes) {
        of_forward |= GradVarName(v) == first.FirstOutput("Out");
      }
      if (first.type() == "fill_constant" && of_forward) {
        first.SetAttr<int>("op_role", kOpRoleBackward | kOpRoleLoss);
      }
    }
  }
};

}  // namespace

// Details beyond the header: a parallel_do_grad pairs with the parallel_do
// whose sub_block is its sub_block's parent, else the nearest one before it,
// and adds its own Parameters. Ops without op_role get Forward (forward
// block) or Backward (backward block). With no Backward|Loss op anywhere,
// the first op of a backward block gets that role if it is a fill_constant
// of `<v>@GRAD` for a var v of its forward block (the fill of loss@GRAD).
// `get_places` ops feeding only Places are dropped. The consumed blocks are
// left empty; the block list and other blocks are unchanged.
// Errors: a parallel_do(_grad) nested in a sub_block; a missing, mistyped
// or out-of-range sub_block; an undeclared Inputs or Parameters entry; an
// Outputs entry its forward block does not write; a parallel_do_grad with
// no parallel_do before it.
StatusOr<Program> FlattenParallelDo(const Program& program) {
  const Block& block0 = program.global_block();
  std::set<std::string> place_vars;
  for (const auto& op : block0.ops()) {  // parallel_do(_grad)'s Places
    for (const std::string& p : op->Input("Places")) place_vars.insert(p);
  }
  Flattening f{program, {}, {}, {}};
  for (const auto& op_ptr : block0.ops()) {
    const OpDesc& op = *op_ptr;
    const auto outs = op.OutputArgumentNames();
    if (op.type() == "get_places" && !outs.empty() &&
        std::all_of(outs.begin(), outs.end(), [&](const std::string& n) {
          return place_vars.count(n);
        })) {
      continue;
    }
    if (op.type() == kParallelDo) {
      PAREX_RETURN_IF_ERROR(f.AddForward(op));
    } else if (op.type() == kParallelDoGrad) {
      PAREX_RETURN_IF_ERROR(f.AddBackward(op));
    } else {
      f.flat.push_back({op.proto(), FlatOp::kBlock0, -1});
    }
  }
  if (f.regions.empty()) return Program(program);
  Program result = f.Assemble();
  f.MarkRoles(result.global_block());
  return result;
}

StatusOr<SsaGraph> BuildParallelDoGraph(const Program& program,
                                        const std::vector<Place>& places,
                                        const std::string& loss_name,
                                        const BuildStrategy& strategy) {
  PAREX_ASSIGN_OR_RETURN(Program flat, FlattenParallelDo(program));
  return BuildMultiDeviceGraph(flat, places, loss_name, strategy);
}

}  // namespace parex
