#include "graph/builder/placement.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "graph/ir/op_role.h"

namespace parex {
namespace {

bool IsUpdateOp(const OpDesc& op) {
  return (OpRole(op) & kOpRoleOptimize) != 0 && op.Input("Param").size() == 1;
}

bool IsPserverSide(const OpDesc& op) {
  return (OpRole(op) & (kOpRoleOptimize | kOpRoleLRSched)) != 0;
}

class Placer {
 public:
  Placer(Program* program, const PlacementOptions& options)
      : block_(program->global_block()),
        options_(options),
        ops_(block_.num_ops()) {}

  StatusOr<PlacementReport> Run() {
    if (options_.pservers.empty()) {
      return InvalidArgument("placement: no pserver to place the optimizer on");
    }
    PAREX_RETURN_IF_ERROR(ReadProgramsGroups());
    PAREX_RETURN_IF_ERROR(PlaceParameters());
    if (report_.shards.empty()) {
      return InvalidArgument(
          "placement: the program updates no parameter (no op with "
          "op_role Optimize and a Param input): not a training program");
    }
    PAREX_RETURN_IF_ERROR(PlaceOps());
    PAREX_RETURN_IF_ERROR(PlaceVars());
    return report_;
  }

 private:
  // The groups the program already has, each checked against the cluster.
  Status ReadProgramsGroups() {
    for (int i = 0; i < block_.num_ops(); ++i) {
      StatusOr<std::optional<PlaceGroup>> g = PlaceGroupOf(block_.op(i));
      if (!g.ok()) return g.status();
      if (g->has_value()) {
        PAREX_RETURN_IF_ERROR(CheckNodes(**g, block_.op(i).Label()));
        ops_[i] = *g;
        ++report_.user_placed;
      }
    }
    for (const auto& var : block_.vars()) {
      StatusOr<std::optional<PlaceGroup>> g = PlaceGroupOf(*var);
      if (!g.ok()) return g.status();
      if (g->has_value()) {
        PAREX_RETURN_IF_ERROR(
            CheckNodes(**g, "variable '" + var->name() + "'"));
        user_vars_.emplace(var->name(), **g);
        ++report_.user_placed;
      }
    }
    return Status::Ok();
  }

  Status CheckNodes(const PlaceGroup& g, const std::string& label) const {
    const std::vector<std::string>& known =
        g.role == NodeRole::kPserver ? options_.pservers : options_.trainers;
    for (const std::string& node : g.nodes) {
      if (std::find(known.begin(), known.end(), node) == known.end()) {
        return InvalidArgument(label + ": place_group '" + g.ToString() +
                               "' names " + NodeRoleName(g.role) + " '" + node +
                               "', which the cluster has no " +
                               NodeRoleName(g.role) + " of");
      }
    }
    return Status::Ok();
  }

  // Where each updated parameter lives: the program's placement (of the
  // parameter or of its update op), else dealt by size.
  Status PlaceParameters() {
    std::vector<PlacementReport::Shard*> unplaced;
    for (int i = 0; i < block_.num_ops(); ++i) {
      const OpDesc& op = block_.op(i);
      if (!IsUpdateOp(op)) continue;
      const std::string param = op.FirstInput("Param");
      if (shard_of_.count(param) > 0) {
        return InvalidArgument(op.Label() + ": parameter '" + param +
                               "' has a second update op (the first is op #" +
                               std::to_string(update_op_[param]) + ")");
      }
      const VarDesc* var = block_.FindVar(param);
      const int64_t numel =
          var == nullptr ? -1 : static_cast<int64_t>(Numel(var->dims()));
      if (var == nullptr || var->rank() == 0 || numel <= 0) {
        return InvalidArgument(op.Label() + ": parameter '" + param +
                               "' has no known shape to shard by");
      }
      update_op_[param] = i;
      shard_of_[param] = report_.shards.size();
      PlacementReport::Shard shard{param, numel, {}, false};
      PAREX_ASSIGN_OR_RETURN(std::optional<PlaceGroup> user,
                             UserGroupOfParam(op, param));
      if (user.has_value()) {
        shard.group = *user;
        shard.user = true;
      }
      report_.shards.push_back(std::move(shard));
    }
    for (PlacementReport::Shard& s : report_.shards) {
      if (s.user) {
        AddLoad(s);
      } else {
        unplaced.push_back(&s);
      }
    }
    Deal(unplaced);
    for (const PlacementReport::Shard& s : report_.shards) {
      ops_[update_op_[s.param]] = s.group;
    }
    return Status::Ok();
  }

  // The group the program gives parameter `param` or its update op `op`
  // (which must agree, and be on pservers), else nullopt.
  StatusOr<std::optional<PlaceGroup>> UserGroupOfParam(
      const OpDesc& op, const std::string& param) const {
    const std::optional<PlaceGroup>& of_op = ops_[op.index()];
    const auto it = user_vars_.find(param);
    const PlaceGroup* of_var = it == user_vars_.end() ? nullptr : &it->second;
    if (of_op.has_value() && of_var != nullptr && *of_op != *of_var) {
      return InvalidArgument(op.Label() + ": placed on '" + of_op->ToString() +
                             "' but its parameter '" + param + "' on '" +
                             of_var->ToString() +
                             "'; an update runs where its parameter lives");
    }
    const PlaceGroup* g = of_op.has_value() ? &*of_op : of_var;
    if (g == nullptr) return std::optional<PlaceGroup>();
    if (g->role != NodeRole::kPserver) {
      return InvalidArgument(op.Label() + ": parameter '" + param +
                             "' is placed on '" + g->ToString() +
                             "'; in parameter-server training parameters "
                             "live on pservers");
    }
    return std::optional<PlaceGroup>(*g);
  }

  void AddLoad(const PlacementReport::Shard& s) {
    const std::vector<std::string>& nodes =
        s.group.nodes.empty() ? options_.pservers : s.group.nodes;
    for (size_t b = 0; b < nodes.size(); ++b) {
      const auto [begin, end] = RowBlock(s.numel, static_cast<int>(b),
                                         static_cast<int>(nodes.size()));
      report_.elements[nodes[b]] += end - begin;
    }
  }

  // Largest first, each to the least loaded pserver (the first of equals);
  // one larger than a fair share goes in row blocks to every pserver.
  void Deal(std::vector<PlacementReport::Shard*> shards) {
    for (const std::string& p : options_.pservers) report_.elements[p] += 0;
    int64_t total = 0;
    for (const PlacementReport::Shard& s : report_.shards) total += s.numel;
    const int64_t count = static_cast<int64_t>(options_.pservers.size());
    std::stable_sort(
        shards.begin(), shards.end(),
        [](const auto* a, const auto* b) { return a->numel > b->numel; });
    for (PlacementReport::Shard* s : shards) {
      s->group.role = NodeRole::kPserver;
      const VarDesc* var = block_.FindVar(s->param);
      if (count > 1 && s->numel * count > total && var->dim(0) >= count) {
        s->group.nodes = options_.pservers;
      } else {
        const std::string* least = &options_.pservers[0];
        for (const std::string& p : options_.pservers) {
          if (report_.elements[p] < report_.elements[*least]) least = &p;
        }
        s->group.nodes = {*least};
      }
      AddLoad(*s);
    }
  }

  // Every other op, last to first: pserver-side ops go where their readers
  // on pservers are, the rest to every trainer.
  Status PlaceOps() {
    for (int i = block_.num_ops() - 1; i >= 0; --i) {
      const OpDesc& op = block_.op(i);
      if (!ops_[i].has_value()) {
        PlaceGroup g;  // every trainer
        if (IsPserverSide(op)) {
          std::optional<PlaceGroup> readers = PserverReaders(op);
          if (readers.has_value()) g = *readers;
        }
        ops_[i] = g;
        SetPlaceGroup(&block_.op(i), g);
      } else if (IsUpdateOp(op)) {
        SetPlaceGroup(&block_.op(i), *ops_[i]);
      }
      (ops_[i]->role == NodeRole::kPserver ? report_.pserver_ops
                                           : report_.trainer_ops)++;
    }
    return Status::Ok();
  }

  // The pservers of the ops after `op` that read what it writes (their
  // union, in topology order), or nullopt when none runs on a pserver.
  std::optional<PlaceGroup> PserverReaders(const OpDesc& op) const {
    std::set<std::string> writes;
    for (const std::string& name : op.OutputArgumentNames()) {
      writes.insert(name);
    }
    std::set<std::string> nodes;
    bool any = false;
    for (int j = op.index() + 1; j < block_.num_ops(); ++j) {
      const std::optional<PlaceGroup>& g = ops_[j];
      if (!g.has_value() || g->role != NodeRole::kPserver) continue;
      if (!ReadsAny(block_.op(j), writes)) continue;
      any = true;
      const std::vector<std::string>& of =
          g->nodes.empty() ? options_.pservers : g->nodes;
      nodes.insert(of.begin(), of.end());
    }
    if (!any) return std::nullopt;
    return OnPservers(nodes);
  }

  static bool ReadsAny(const OpDesc& op, const std::set<std::string>& names) {
    for (const std::string& name : op.InputArgumentNames()) {
      if (names.count(name) > 0) return true;
    }
    return false;
  }

  PlaceGroup OnPservers(const std::set<std::string>& nodes) const {
    PlaceGroup g;
    g.role = NodeRole::kPserver;
    for (const std::string& p : options_.pservers) {
      if (nodes.count(p) > 0) g.nodes.push_back(p);
    }
    return g;
  }

  // A variable lives with its writers (which must share one role), else
  // with its readers when all run on pservers, else on the trainers.
  Status PlaceVars() {
    std::map<std::string, std::vector<int>> writers, readers;
    for (int i = 0; i < block_.num_ops(); ++i) {
      for (const std::string& n : block_.op(i).OutputArgumentNames()) {
        writers[n].push_back(i);
      }
      for (const std::string& n : block_.op(i).InputArgumentNames()) {
        readers[n].push_back(i);
      }
    }
    for (const auto& var : block_.vars()) {
      if (user_vars_.count(var->name()) > 0) continue;
      const auto w = writers.find(var->name());
      const auto r = readers.find(var->name());
      PAREX_ASSIGN_OR_RETURN(
          PlaceGroup g,
          w != writers.end()
              ? GroupOfOps(w->second, *var, "written")
              : (r != readers.end() ? ReadersGroup(r->second) : PlaceGroup()));
      SetPlaceGroup(var.get(), g);
    }
    return Status::Ok();
  }

  StatusOr<PlaceGroup> GroupOfOps(const std::vector<int>& ops,
                                  const VarDesc& var, const char* how) const {
    const PlaceGroup& first = *ops_[ops[0]];
    for (int i : ops) {
      if (ops_[i]->role != first.role) {
        return InvalidArgument(
            "variable '" + var.name() + "' is " + how + " on " +
            NodeRoleName(first.role) + "s (" + block_.op(ops[0]).Label() +
            ") and on " + NodeRoleName(ops_[i]->role) + "s (" +
            block_.op(i).Label() + "); place it, or those ops, in the program");
      }
    }
    if (first.role == NodeRole::kTrainer) return first;
    std::set<std::string> nodes;
    for (int i : ops) {
      const PlaceGroup& g = *ops_[i];
      if (g.nodes.empty()) return g;
      nodes.insert(g.nodes.begin(), g.nodes.end());
    }
    if (ops.size() == 1) return first;  // keeps a row-block order
    return OnPservers(nodes);
  }

  StatusOr<PlaceGroup> ReadersGroup(const std::vector<int>& ops) const {
    std::set<std::string> nodes;
    for (int i : ops) {
      const PlaceGroup& g = *ops_[i];
      if (g.role != NodeRole::kPserver) return PlaceGroup();
      const std::vector<std::string>& of =
          g.nodes.empty() ? options_.pservers : g.nodes;
      nodes.insert(of.begin(), of.end());
    }
    return OnPservers(nodes);
  }

  Block& block_;
  const PlacementOptions& options_;
  std::vector<std::optional<PlaceGroup>> ops_;  // by op index
  std::map<std::string, PlaceGroup> user_vars_;
  std::map<std::string, size_t> shard_of_;
  std::map<std::string, int> update_op_;
  PlacementReport report_;
};

}  // namespace

StatusOr<PlacementReport> PlaceForParameterServers(
    Program* program, const PlacementOptions& options) {
  return Placer(program, options).Run();
}

}  // namespace parex
