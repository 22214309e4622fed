#include "apps/train/pserver_run.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "graph/ir/op_role.h"
#include "graph/ir/place_group.h"
#include "graph/ssa/optimizer_slices.h"
#include "graph/ssa/placed_exchanges.h"

namespace parex::train {

bool HasPservers(const Topology& topology) {
  for (const TopologyNode& n : topology.nodes) {
    if (n.pserver) return true;
  }
  return false;
}

Status PserverRun::SetRoles(const Topology& topology, const std::string& node,
                            PlacementOptions* options) {
  rank_ = topology.Rank(node);
  if (rank_ < 0) return NotFound(topology.path + ": no node '" + node + "'");
  node_ = node;
  pserver_ = topology.nodes[rank_].pserver;
  for (size_t r = 0; r < topology.nodes.size(); ++r) {
    const TopologyNode& n = topology.nodes[r];
    (n.pserver ? options->pservers : options->trainers).push_back(n.name);
    if (!n.pserver) trainers_.push_back(static_cast<int>(r));
  }
  if (topology.nodes[0].pserver || options->trainers.empty()) {
    return InvalidArgument(
        topology.path + ": node '" + topology.nodes[0].name +
        "' is a pserver; the first node must be a trainer (it writes the "
        "model, the metrics and the checkpoints)");
  }
  if (pserver_ && !topology.nodes[rank_].places[0].is_cpu()) {
    return InvalidArgument(topology.path + ": pserver '" + node +
                           "': a pserver runs on a CPU place, not " +
                           topology.nodes[rank_].places_text);
  }
  return Status::Ok();
}

void PserverRun::MapShards(const Block& block, const Topology& topology,
                           const PlacementOptions& options) {
  for (const PlacementReport::Shard& s : report_.shards) {
    PserverShard shard;
    const std::vector<std::string>& nodes =
        s.group.nodes.empty() ? options.pservers : s.group.nodes;
    for (const std::string& n : nodes) shard.ranks.push_back(topology.Rank(n));
    shard.param = s.param;
    shard.rows = block.FindVar(s.param)->dim(0);
    shard.dims = block.FindVar(s.param)->dims();
    shards_[s.param] = shard;
  }
  // A parameter's gradient goes where the parameter lives.
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    if ((OpRole(op) & kOpRoleBackward) == 0) continue;
    const std::vector<std::string> role_var = OpRoleVar(op);
    for (size_t k = 0; k + 1 < role_var.size(); k += 2) {
      const auto it = shards_.find(role_var[k]);
      if (it != shards_.end()) shards_[role_var[k + 1]] = it->second;
    }
  }
}

Status PserverRun::FindTableState(const Block& block) {
  PAREX_ASSIGN_OR_RETURN(std::vector<PlacedPrefetch> prefetches,
                         PlanPlacedPrefetches(block, BuildStrategy()));
  for (const PlacedPrefetch& p : prefetches) {
    prefetched_.push_back(p.table);
    table_state_.push_back(p.table);
  }
  // A table's row-shaped optimizer state (moments) lives with it.
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    const std::string param = op.FirstInput("Param");
    if ((OpRole(op) & kOpRoleOptimize) == 0 ||
        std::find(prefetched_.begin(), prefetched_.end(), param) ==
            prefetched_.end()) {
      continue;
    }
    const int64_t rows = block.FindVar(param)->dim(0);
    for (const auto& names :
         {op.InputArgumentNames(), op.OutputArgumentNames()}) {
      for (const std::string& name : names) {
        const VarDesc* var = block.FindVar(name);
        if (var == nullptr || !var->persistable() || var->dims().empty() ||
            var->dim(0) != rows || held_.count(name) == 0 ||
            IsTableState(name)) {
          continue;
        }
        table_state_.push_back(name);
      }
    }
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<PserverRun>> PserverRun::Plan(Program* main,
                                                       const Topology& topology,
                                                       const std::string& node,
                                                       int max_staleness) {
  std::unique_ptr<PserverRun> run(new PserverRun());
  run->max_staleness_ = max_staleness;
  PlacementOptions options;
  PAREX_RETURN_IF_ERROR(run->SetRoles(topology, node, &options));
  PAREX_ASSIGN_OR_RETURN(run->report_, PlaceForParameterServers(main, options));
  const Block& block = main->global_block();
  run->MapShards(block, topology, options);
  PAREX_RETURN_IF_ERROR(run->FindHeld(block, topology));
  PAREX_RETURN_IF_ERROR(run->FindTableState(block));
  return run;
}

bool PserverRun::IsTableState(const std::string& name) const {
  return std::find(table_state_.begin(), table_state_.end(), name) !=
         table_state_.end();
}

std::vector<std::string> PserverRun::InitSkips() const {
  if (!pserver_) return table_state_;
  std::vector<std::string> skips;  // what other pservers hold
  for (const std::string& name : table_state_) {
    if (!RowsHere(held_.at(name)).has_value()) skips.push_back(name);
  }
  return skips;
}

std::vector<std::string> PserverRun::HeldNames() const {
  std::vector<std::string> names;
  for (const auto& [name, held] : held_) names.push_back(name);
  return names;
}

std::optional<std::pair<int64_t, int64_t>> PserverRun::RowsHere(
    const Held& held) const {
  const auto at = std::find(held.ranks.begin(), held.ranks.end(), rank_);
  if (!pserver_ || at == held.ranks.end()) return std::nullopt;
  if (held.rows == 0) return std::make_pair<int64_t, int64_t>(0, 0);
  return RowBlock(held.rows, static_cast<int>(at - held.ranks.begin()),
                  static_cast<int>(held.ranks.size()));
}

Status PserverRun::FindHeld(const Block& block, const Topology& topology) {
  for (const auto& var : block.vars()) {
    if (!var->persistable()) continue;
    PAREX_ASSIGN_OR_RETURN(std::optional<PlaceGroup> group, PlaceGroupOf(*var));
    if (!group.has_value() || group->role != NodeRole::kPserver) continue;
    Held held;
    held.dtype = var->dtype();
    held.dims = var->dims();
    for (const std::string& n : group->nodes) {
      held.ranks.push_back(topology.Rank(n));
    }
    if (held.ranks.empty()) {
      for (size_t r = 0; r < topology.nodes.size(); ++r) {
        if (topology.nodes[r].pserver)
          held.ranks.push_back(static_cast<int>(r));
      }
    }
    held_[var->name()] = held;
  }
  // Row blocks: the parameter and the accumulators an elementwise update
  // reads and writes along with it.
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    if ((OpRole(op) & kOpRoleOptimize) == 0 || op.Input("Param").size() != 1) {
      continue;
    }
    const std::string param = op.FirstInput("Param");
    const auto shard = shards_.find(param);
    if (shard == shards_.end() || shard->second.ranks.size() < 2) continue;
    const OptimizerSlots* slots = SliceableOptimizer(op.type());
    if (slots == nullptr || !CanSliceOptimizer(op)) {
      return InvalidArgument(
          op.Label() + ": updates parameter '" + param +
          "' in row blocks over several pservers, but its update is not "
          "elementwise; place the parameter on one pserver (its "
          "place_group \"pserver/NAME\")");
    }
    for (const auto* list : {&slots->sliced_inputs, &slots->sliced_outputs}) {
      for (const std::string& slot : *list) {
        const bool input = list == &slots->sliced_inputs;
        for (const std::string& name :
             input ? op.Input(slot) : op.Output(slot)) {
          const auto it = held_.find(name);
          if (it != held_.end()) it->second.rows = shard->second.rows;
        }
      }
    }
  }
  return Status::Ok();
}

std::string PserverRun::Describe() const {
  const std::string mode =
      max_staleness_ == 0
          ? ", sync"
          : ", async (staleness " + std::to_string(max_staleness_) + ")";
  if (!pserver_) {
    std::string tables;
    for (const std::string& t : prefetched_) {
      tables += (tables.empty() ? "" : ", ") + ("'" + t + "'");
    }
    return "trainer " + node_ + " sends " +
           std::to_string(report_.shards.size()) + " gradients to " +
           std::to_string(report_.elements.size()) + " pserver(s)" +
           (tables.empty() ? ""
                           : ", prefetches the rows it reads of " + tables) +
           mode;
  }
  int params = 0;
  for (const PlacementReport::Shard& s : report_.shards) {
    params += std::find(shards_.at(s.param).ranks.begin(),
                        shards_.at(s.param).ranks.end(),
                        rank_) != shards_.at(s.param).ranks.end();
  }
  return "pserver " + node_ + " holds " + std::to_string(params) + " of " +
         std::to_string(report_.shards.size()) + " parameters (" +
         std::to_string(report_.elements.at(node_)) + " elements)" + mode;
}

Status PserverRun::HoldRows(Scope* scope) {
  if (!pserver_) return Status::Ok();
  for (const auto& [name, held] : held_) {
    const auto at = std::find(held.ranks.begin(), held.ranks.end(), rank_);
    if (held.rows == 0 || at == held.ranks.end()) continue;
    Variable* var = scope->FindVar(name);
    Tensor* t =
        var != nullptr && var->IsTensor() ? var->GetMutableTensor() : nullptr;
    if (t == nullptr || !t->defined() || t->rank() < 1 ||
        t->dim(0) != held.rows) {
      return FailedPrecondition(
          "pserver '" + node_ + "': '" + name + "' is not a tensor of " +
          std::to_string(held.rows) + " rows to hold a block of");
    }
    const auto [begin, end] =
        RowBlock(held.rows, static_cast<int>(at - held.ranks.begin()),
                 static_cast<int>(held.ranks.size()));
    if (IsTableState(name)) {
      // Its block alone: no node gathers a table back whole but the
      // first trainer, from the blocks.
      *t = t->Slice(begin, end).Clone();
      continue;
    }
    whole_[name] = *t;
    *t = whole_[name].Slice(begin, end);
  }
  return Status::Ok();
}

Tensor* PserverRun::Whole(Scope* scope, const std::string& name) {
  const auto it = whole_.find(name);
  if (it != whole_.end()) return &it->second;
  Variable* var = scope->FindVar(name);
  return var != nullptr && var->IsTensor() ? var->GetMutableTensor() : nullptr;
}

Status PserverRun::Gather(Scope* scope, Communicator* cross, bool tables) {
  for (const auto& [name, held] : held_) {
    if (IsTableState(name)) {
      if (tables) PAREX_RETURN_IF_ERROR(GatherTable(scope, cross, name, held));
      continue;
    }
    Tensor* whole = Whole(scope, name);
    if (whole == nullptr || !whole->defined()) {
      return FailedPrecondition("node '" + node_ + "': persistable '" + name +
                                "' is not initialised, so its pserver's "
                                "value cannot replace it");
    }
    if (held.rows == 0) {
      PlaceTensors one{whole};
      PAREX_RETURN_IF_ERROR(cross->Broadcast(name, one, held.ranks[0]));
      continue;
    }
    const int blocks = static_cast<int>(held.ranks.size());
    for (int b = 0; b < blocks; ++b) {
      const auto [begin, end] = RowBlock(held.rows, b, blocks);
      Tensor block = whole->Slice(begin, end);
      if (held.ranks[b] == rank_ && whole_.count(name) != 0) {
        // The update ops may have given the view a buffer of its own.
        const Tensor& mine = *scope->FindVar(name)->GetTensor();
        if (mine.raw_data() != block.raw_data()) {
          if (mine.bytes() != block.bytes()) {
            return Internal("pserver '" + node_ + "': '" + name +
                            "' no longer has its block's size");
          }
          std::memcpy(block.raw_data(), mine.raw_data(), block.bytes());
        }
      }
      PlaceTensors one{&block};
      PAREX_RETURN_IF_ERROR(cross->Broadcast(name, one, held.ranks[b]));
    }
  }
  return Status::Ok();
}

Status PserverRun::GatherTable(Scope* scope, Communicator* cross,
                               const std::string& name, const Held& held) {
  const int writer = trainers_[0];
  const std::string what = "node '" + node_ + "': table '" + name + "'";
  Tensor* whole = nullptr;
  if (rank_ == writer) {
    whole = scope->Var(name)->GetMutableTensor();
    PAREX_RETURN_IF_ERROR(
        whole->TryAllocate(held.dtype, held.dims).WithContext(what));
  }
  const int blocks = held.rows == 0 ? 1 : static_cast<int>(held.ranks.size());
  for (int b = 0; b < blocks; ++b) {
    const auto [begin, end] = held.rows == 0
                                  ? std::make_pair<int64_t, int64_t>(0, 0)
                                  : RowBlock(held.rows, b, blocks);
    if (held.ranks[b] == rank_) {
      const Tensor& mine = *scope->FindVar(name)->GetTensor();
      PAREX_RETURN_IF_ERROR(cross->Send(name, mine, writer).WithContext(what));
    } else if (rank_ == writer) {
      Tensor got;
      PAREX_RETURN_IF_ERROR(
          cross->Recv(name, &got, held.ranks[b]).WithContext(what));
      Tensor into = held.rows == 0 ? *whole : whole->Slice(begin, end);
      if (got.dims() != into.dims() || got.dtype() != into.dtype()) {
        return InvalidArgument(
            what + ": node rank " + std::to_string(held.ranks[b]) + " sent " +
            DimsToString(got.dims()) + " for " + DimsToString(into.dims()));
      }
      if (got.bytes() > 0) {
        std::memcpy(into.raw_data(), got.raw_data(), got.bytes());
      }
    }
  }
  return Status::Ok();
}

void PserverRun::Release(Scope* scope) {
  for (auto& [name, whole] : whole_) {
    Variable* var = scope->FindVar(name);
    if (var != nullptr) *var->GetMutableTensor() = whole;
  }
  whole_.clear();
}

}  // namespace parex::train
