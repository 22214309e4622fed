#include "graph/ssa/placed_exchanges.h"

#include <algorithm>
#include <optional>

#include "base/dims.h"
#include "base/dtype.h"
#include "graph/ir/op_role.h"
#include "graph/ir/place_group.h"

namespace parex {
namespace {

// Whether `param`'s update changes only the rows its gradient touches.
bool UpdatesTouchedRowsOnly(const Block& block, const std::string& param) {
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    if ((OpRole(op) & kOpRoleOptimize) == 0 ||
        op.FirstInput("Param") != param) {
      continue;
    }
    if (op.type() == "sgd") return true;
    if (op.type() != "adam" || !op.HasAttr("lazy_mode")) return false;
    StatusOr<bool> lazy = op.GetAttr<bool>("lazy_mode");
    return lazy.ok() && *lazy;
  }
  return false;
}

bool IsLookup(const std::string& type) {
  return type == "lookup_table" || type == "lookup_table_v2";
}

bool IsLookupGrad(const std::string& type) {
  return type == "lookup_table_grad" || type == "lookup_table_v2_grad";
}

bool Mentions(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Every prefetched table of the program (see PlacedPrefetch), all nodes'.
StatusOr<std::vector<PlacedPrefetch>> AllPrefetches(const Block& block) {
  std::vector<PlacedPrefetch> out;
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    if ((OpRole(op) & kOpRoleBackward) == 0) continue;
    const std::vector<std::string> role_var = OpRoleVar(op);
    for (size_t k = 0; k + 1 < role_var.size(); k += 2) {
      const std::string& table = role_var[k];
      const VarDesc* var = block.FindVar(table);
      if (var == nullptr || !IsSparseGradient(op, role_var[k + 1]) ||
          std::any_of(out.begin(), out.end(), [&](const PlacedPrefetch& p) {
            return p.table == table;
          })) {
        continue;
      }
      PAREX_ASSIGN_OR_RETURN(std::optional<PlaceGroup> held,
                             PlaceGroupOf(*var));
      if (!held.has_value() || held->role != NodeRole::kPserver) continue;
      PlacedPrefetch p;
      p.table = table;
      bool by_lookups = true;
      for (int j = 0; j < block.num_ops() && by_lookups; ++j) {
        const OpDesc& reader = block.op(j);
        PAREX_ASSIGN_OR_RETURN(std::optional<PlaceGroup> group,
                               PlaceGroupOf(reader));
        if (!group.has_value() || group->role != NodeRole::kTrainer) continue;
        const bool reads = Mentions(reader.InputArgumentNames(), table);
        if (Mentions(reader.OutputArgumentNames(), table)) by_lookups = false;
        if (!reads) continue;
        if (IsLookup(reader.type()) && reader.FirstInput("W") == table) {
          if (p.before < 0) p.before = j;
          if (!Mentions(p.ids, reader.FirstInput("Ids"))) {
            p.ids.push_back(reader.FirstInput("Ids"));
          }
        } else if (!IsLookupGrad(reader.type()) ||
                   reader.FirstInput("W") != table) {
          by_lookups = false;
        }
      }
      // The ids must be made before the first lookup.
      for (int j = std::max(p.before, 0); j < block.num_ops() && by_lookups;
           ++j) {
        for (const std::string& id : p.ids) {
          if (Mentions(block.op(j).OutputArgumentNames(), id)) {
            by_lookups = false;
          }
        }
      }
      if (by_lookups && p.before >= 0) out.push_back(std::move(p));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const PlacedPrefetch& a, const PlacedPrefetch& b) {
              return a.before < b.before;
            });
  return out;
}

struct Gradient {
  std::string param, grad;
  int producer = -1;
  bool sparse = false;
  DType dtype = DType::kUndefined;
  int64_t bytes = 0;
  bool here = false;  // a pserver: it holds (rows of) the parameter
};

StatusOr<std::vector<Gradient>> PlacedGradients(const Block& block,
                                                const BuildStrategy& s) {
  std::vector<Gradient> grads;
  for (int i = 0; i < block.num_ops(); ++i) {
    const OpDesc& op = block.op(i);
    if ((OpRole(op) & kOpRoleBackward) == 0) continue;
    const std::vector<std::string> role_var = OpRoleVar(op);
    for (size_t k = 0; k + 1 < role_var.size(); k += 2) {
      const VarDesc* var = block.FindVar(role_var[k]);
      if (var == nullptr) continue;
      PAREX_ASSIGN_OR_RETURN(std::optional<PlaceGroup> group,
                             PlaceGroupOf(*var));
      if (!group.has_value() || group->role != NodeRole::kPserver) {
        if (s.placed_pserver) continue;
        return Unimplemented(
            "parameter '" + role_var[k] + "' is updated on the trainers (" +
            op.Label() +
            " makes its gradient); in parameter-server training every "
            "trained parameter lives on a pserver");
      }
      Gradient g;
      g.param = role_var[k];
      g.grad = role_var[k + 1];
      g.producer = i;
      g.sparse = IsSparseGradient(op, g.grad);
      g.dtype = var->dtype();
      const Dims dims = var->dims();
      g.bytes = Numel(dims) * static_cast<int64_t>(SizeOf(var->dtype()));
      g.here = !s.placed_pserver ||
               group->Includes(NodeRole::kPserver, s.placed_node);
      grads.push_back(std::move(g));
    }
  }
  return grads;
}

}  // namespace

bool IsSparseGradient(const OpDesc& op, const std::string& grad) {
  const VarDesc* g = op.block()->FindVar(grad);
  bool sparse = g != nullptr && g->type() == proto::VarType::SELECTED_ROWS;
  if ((op.type() == "lookup_table_grad" ||
       op.type() == "lookup_table_v2_grad") &&
      op.HasAttr("is_sparse")) {
    StatusOr<bool> attr = op.GetAttr<bool>("is_sparse");
    sparse = sparse || (attr.ok() && *attr);
  }
  return sparse;
}

StatusOr<bool> RunsOnPlacedNode(const OpDesc& op,
                                const BuildStrategy& strategy) {
  PAREX_ASSIGN_OR_RETURN(std::optional<PlaceGroup> group, PlaceGroupOf(op));
  if (!group.has_value()) {
    return InvalidArgument(op.Label() +
                           " has no place_group: a parameter-server program "
                           "is placed first (parex place)");
  }
  return group->Includes(
      strategy.placed_pserver ? NodeRole::kPserver : NodeRole::kTrainer,
      strategy.placed_node);
}

StatusOr<std::vector<PlacedPrefetch>> PlanPlacedPrefetches(
    const Block& block, const BuildStrategy& strategy) {
  PAREX_ASSIGN_OR_RETURN(std::vector<PlacedPrefetch> all, AllPrefetches(block));
  if (!strategy.placed_pserver) return all;
  std::vector<PlacedPrefetch> mine;
  for (PlacedPrefetch& p : all) {
    PAREX_ASSIGN_OR_RETURN(std::optional<PlaceGroup> held,
                           PlaceGroupOf(*block.FindVar(p.table)));
    if (held->Includes(NodeRole::kPserver, strategy.placed_node)) {
      mine.push_back(std::move(p));
    }
  }
  return mine;
}

StatusOr<std::vector<PlacedExchange>> PlanPlacedExchanges(
    const Block& block, const BuildStrategy& strategy) {
  PAREX_ASSIGN_OR_RETURN(std::vector<Gradient> grads,
                         PlacedGradients(block, strategy));
  PAREX_ASSIGN_OR_RETURN(std::vector<PlacedPrefetch> prefetched,
                         AllPrefetches(block));
  std::vector<PlacedExchange> out;
  PlacedExchange open;  // the dense bucket being filled (every node's)
  int64_t open_bytes = 0;
  DType open_dtype = DType::kUndefined;
  bool open_any = false;
  auto flush = [&] {
    if (open_any && !open.grads.empty()) out.push_back(open);
    open = PlacedExchange();
    open_bytes = 0;
    open_any = false;
  };
  for (const Gradient& g : grads) {
    if (g.sparse) {
      if (!g.here) continue;
      PlacedExchange e;
      e.sparse = true;
      e.prefetched = std::any_of(
          prefetched.begin(), prefetched.end(),
          [&](const PlacedPrefetch& p) { return p.table == g.param; });
      e.rows_back = !e.prefetched && UpdatesTouchedRowsOnly(block, g.param);
      e.params = {g.param};
      e.grads = {g.grad};
      e.producer = g.producer;
      out.push_back(std::move(e));
      continue;
    }
    if (!strategy.fuse_all_reduce_ops ||
        (open_any && (open_bytes + g.bytes > strategy.fuse_bucket_bytes ||
                      g.dtype != open_dtype))) {
      flush();
    }
    open_any = true;
    open_bytes += g.bytes;
    open_dtype = g.dtype;
    open.producer = g.producer;
    if (g.here) {
      open.params.push_back(g.param);
      open.grads.push_back(g.grad);
    }
  }
  flush();
  // In the order a trainer issues them: after the op that makes the last
  // gradient (a sparse one may come between a bucket's members).
  std::stable_sort(out.begin(), out.end(),
                   [](const PlacedExchange& a, const PlacedExchange& b) {
                     return a.producer < b.producer;
                   });
  return out;
}

}  // namespace parex
