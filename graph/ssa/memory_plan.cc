#include "graph/ssa/memory_plan.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/dims.h"
#include "base/dtype.h"
#include "graph/ssa/ssa_graph.h"

namespace parex {
namespace {

// The facts PlanMemory and CheckMemoryPlan both derive from the graph alone
// (never from a plan): which storages are temporaries, their sizes, and the
// ops that access them.
class StorageFacts {
 public:
  explicit StorageFacts(const SsaGraph& graph) : graph_(graph) {
    for (const SsaOp& op : graph.ops()) {
      if (op.kind != SsaOpKind::kFetch) continue;
      for (int v : op.inputs) {
        const SsaVar& var = graph.var(v);
        if (!var.is_control()) fetched_.emplace(var.name, var.place);
      }
    }
  }

  // Why storage (name, place) may not be planned, or "" when it is a
  // temporary whose size is known; then *bytes holds its size with -1
  // extents taken as `batch`.
  std::string Exclusion(const std::string& name, int place, int64_t batch,
                        int64_t* bytes) const {
    const std::vector<int>& versions = graph_.Versions(name, place);
    if (versions.empty()) return "not a var of the graph on that place";
    const VarDesc* desc = graph_.FindVarDesc(name);
    if (desc == nullptr) return "not declared in block 0";
    if (desc->type() != proto::VarType::LOD_TENSOR) return "not a LOD_TENSOR";
    if (desc->persistable()) return "persistable";
    if (graph_.var(versions.front()).generator < 0) {
      return "an input of the graph (a feed: version 0 has no generator)";
    }
    if (fetched_.count({name, place}) > 0) return "a fetch target";
    if (graph_.IsSharedStorage(name)) return "shared by every place";
    const size_t elem = SizeOf(desc->dtype());
    if (elem == 0) return "of unknown element type";
    const Dims dims = desc->dims();
    if (dims.empty()) return "of unknown shape";
    int64_t numel = 1;
    for (int64_t d : dims) {
      if (d == -1) d = batch;
      // A 0 extent is how programs declare a var whose size only the kernel
      // knows (batch_norm's ReserveSpace is [0]): left to the runtime.
      if (d <= 0) return "of unknown shape " + DimsToString(dims);
      numel *= d;
    }
    *bytes = numel * static_cast<int64_t>(elem);
    return "";
  }

  // Every op that writes or reads a version of (name, place), ascending,
  // without duplicates.
  std::vector<int> Accesses(const std::string& name, int place) const {
    std::vector<int> ops;
    for (int id : graph_.Versions(name, place)) {
      if (graph_.removed(id)) continue;
      const SsaVar& v = graph_.var(id);
      if (v.generator >= 0) ops.push_back(v.generator);
      ops.insert(ops.end(), v.readers.begin(), v.readers.end());
    }
    std::sort(ops.begin(), ops.end());
    ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
    return ops;
  }

 private:
  const SsaGraph& graph_;
  std::set<std::pair<std::string, int>> fetched_;
};

// The accesses of `ops` no other one of them reaches (last = true), or that
// no other one reaches (last = false). Every access is ordered before (after)
// one of these or is one of them, so "A before B" reduces to last(A) x
// first(B).
std::vector<int> Frontier(const SsaReachability& reach,
                          const std::vector<int>& ops, bool last) {
  std::vector<int> out;
  for (int a : ops) {
    bool extreme = true;
    for (int b : ops) {
      if (a != b && (last ? reach.Reaches(a, b) : reach.Reaches(b, a))) {
        extreme = false;
        break;
      }
    }
    if (extreme) out.push_back(a);
  }
  return out;
}

bool AllReach(const SsaReachability& reach, const std::vector<int>& from,
              const std::vector<int>& to) {
  for (int a : from) {
    for (int b : to) {
      if (!reach.Reaches(a, b)) return false;
    }
  }
  return true;
}

struct Storage {
  std::string name;
  int place = 0;
  int64_t bytes = 0;
  int first_position = 0;  // of its earliest generator in topological order
  std::vector<int> first;  // accesses no other access of it precedes
  std::vector<int> last;   // accesses that precede no other access of it
};

struct Buffer {
  int place = 0;
  int64_t bytes = 0;
  // The last-accesses of its newest occupant. Occupants form a chain (each
  // one wholly after the previous), so a storage wholly after these is
  // wholly after every occupant.
  std::vector<int> tail;
};

// Every storage the plan may place (facts.Exclusion says which), with its
// first generator's position in `order` and its first and last accesses.
std::vector<Storage> CollectStorages(const SsaGraph& graph,
                                     const SsaReachability& reach,
                                     const StorageFacts& facts,
                                     const std::vector<int>& order,
                                     int64_t batch_per_place) {
  std::vector<int> position(graph.ops().size(), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = static_cast<int>(i);
  }
  std::vector<Storage> storages;
  for (const std::string& name : graph.VarNames()) {
    for (int place = 0; place < graph.num_places(); ++place) {
      Storage s;
      if (!facts.Exclusion(name, place, batch_per_place, &s.bytes).empty()) {
        continue;
      }
      s.name = name;
      s.place = place;
      s.first_position = static_cast<int>(order.size());
      for (int id : graph.Versions(name, place)) {
        const int g = graph.var(id).generator;
        if (!graph.removed(id) && g >= 0) {
          s.first_position = std::min(s.first_position, position[g]);
        }
      }
      const std::vector<int> accesses = facts.Accesses(name, place);
      s.first = Frontier(reach, accesses, /*last=*/false);
      s.last = Frontier(reach, accesses, /*last=*/true);
      storages.push_back(std::move(s));
    }
  }
  // By first generator: a storage wholly before another is then always
  // placed first, which is what lets a buffer remember only its newest
  // occupant.
  std::stable_sort(storages.begin(), storages.end(),
                   [](const Storage& a, const Storage& b) {
                     return a.first_position < b.first_position;
                   });
  return storages;
}

// The buffer s goes to: best fit among the buffers free for s (the
// smallest one that holds it, else the largest one, grown), else a new one.
int ChooseBuffer(const SsaReachability& reach, const Storage& s,
                 std::vector<Buffer>* buffers) {
  int fit = -1;
  int largest = -1;
  for (size_t i = 0; i < buffers->size(); ++i) {
    const Buffer& b = (*buffers)[i];
    if (b.place != s.place || !AllReach(reach, b.tail, s.first)) continue;
    const int id = static_cast<int>(i);
    if (b.bytes >= s.bytes && (fit < 0 || b.bytes < (*buffers)[fit].bytes)) {
      fit = id;
    }
    if (largest < 0 || b.bytes > (*buffers)[largest].bytes) largest = id;
  }
  int chosen = fit >= 0 ? fit : largest;
  if (chosen < 0) {
    chosen = static_cast<int>(buffers->size());
    buffers->push_back(Buffer{s.place, 0, {}});
  }
  return chosen;
}

}  // namespace

Status PlanMemory(SsaGraph* graph, int64_t batch_per_place) {
  if (batch_per_place <= 0) {
    return InvalidArgument(
        "memory plan: batch_per_place must be positive, got " +
        std::to_string(batch_per_place));
  }
  PAREX_ASSIGN_OR_RETURN(std::vector<int> order, graph->TopologicalOrder());
  PAREX_ASSIGN_OR_RETURN(SsaReachability reach,
                         SsaReachability::Create(*graph));
  const StorageFacts facts(*graph);
  const std::vector<Storage> storages =
      CollectStorages(*graph, reach, facts, order, batch_per_place);
  MemoryPlan plan;
  plan.batch_per_place = batch_per_place;
  plan.buffer_of.resize(graph->num_places());
  std::vector<Buffer> buffers;
  for (const Storage& s : storages) {
    const int chosen = ChooseBuffer(reach, s, &buffers);
    Buffer& b = buffers[chosen];
    b.bytes = std::max(b.bytes, s.bytes);
    b.tail = s.last;
    plan.buffer_of[s.place][s.name] = chosen;
    plan.bytes_without_reuse += s.bytes;
  }
  for (const Buffer& b : buffers) {
    plan.buffer_bytes.push_back(b.bytes);
    plan.buffer_place.push_back(b.place);
    plan.bytes_with_reuse += b.bytes;
  }
  graph->memory_plan = std::move(plan);
  return Status::Ok();
}

namespace {

// Why storages a and b (same place) may not share a buffer, naming an
// unordered pair of their ops; "" when one wholly precedes the other.
std::string Overlap(const SsaGraph& graph, const SsaReachability& reach,
                    const std::string& name_a, const std::vector<int>& a,
                    const std::string& name_b, const std::vector<int>& b) {
  if (AllReach(reach, a, b) || AllReach(reach, b, a)) return "";
  for (int x : a) {
    for (int y : b) {
      if (x == y) {
        return graph.OpLabel(x) + " accesses both";
      }
      if (!reach.Ordered(x, y)) {
        return graph.OpLabel(x) + " (accessing '" + name_a + "') and " +
               graph.OpLabel(y) + " (accessing '" + name_b + "') are unordered";
      }
    }
  }
  // Every pair is ordered, but in both directions: the lifetimes interleave.
  for (int x : a) {
    for (int y : b) {
      if (reach.Reaches(y, x)) {
        return graph.OpLabel(y) + " (accessing '" + name_b + "') precedes " +
               graph.OpLabel(x) + " (accessing '" + name_a +
               "') but not every access of '" + name_a + "' precedes '" +
               name_b + "'";
      }
    }
  }
  return "their accesses interleave";
}

Status PlanFailure(const std::string& m) {
  return FailedPrecondition("memory plan: " + m);
}

// The plan's own arithmetic: a place per buffer, buffer_of's places, the
// byte total.
Status CheckPlanTotals(const SsaGraph& graph, const MemoryPlan& plan) {
  if (plan.buffer_place.size() != plan.buffer_bytes.size()) {
    return PlanFailure(
        std::to_string(plan.buffer_bytes.size()) + " buffer sizes but " +
        std::to_string(plan.buffer_place.size()) + " buffer places");
  }
  if (static_cast<int>(plan.buffer_of.size()) > graph.num_places()) {
    return PlanFailure(
        "buffer_of has " + std::to_string(plan.buffer_of.size()) +
        " places, the graph " + std::to_string(graph.num_places()));
  }
  int64_t sum = 0;
  for (int64_t bytes : plan.buffer_bytes) sum += bytes;
  if (sum != plan.bytes_with_reuse) {
    return PlanFailure("bytes_with_reuse " +
                       std::to_string(plan.bytes_with_reuse) +
                       " != the sum of buffer_bytes " + std::to_string(sum));
  }
  return Status::Ok();
}

struct Occupant {
  const std::string* name;
  std::vector<int> accesses;
};

// `name` on `place` in `buffer`: a buffer of that place, large enough, for
// a storage the plan may place.
Status CheckOccupant(const SsaGraph& graph, const StorageFacts& facts,
                     const std::string& name, int place, int buffer) {
  const MemoryPlan& plan = graph.memory_plan;
  const std::string where = graph.places()[place].ToString();
  if (buffer < 0 || buffer >= static_cast<int>(plan.buffer_bytes.size())) {
    return PlanFailure("'" + name + "' on " + where + " is in buffer " +
                       std::to_string(buffer) + ", which does not exist");
  }
  const std::string b = "buffer " + std::to_string(buffer);
  if (plan.buffer_place[buffer] != place) {
    return PlanFailure("'" + name + "' on " + where + " is in " + b +
                       " of place " +
                       std::to_string(plan.buffer_place[buffer]));
  }
  int64_t bytes = 0;
  const std::string why =
      facts.Exclusion(name, place, plan.batch_per_place, &bytes);
  if (!why.empty()) {
    return PlanFailure("'" + name + "' on " + where + " is planned (" + b +
                       ") but is " + why);
  }
  if (bytes > plan.buffer_bytes[buffer]) {
    return PlanFailure(b + " on " + where + " has " +
                       std::to_string(plan.buffer_bytes[buffer]) +
                       " bytes but holds '" + name + "' of " +
                       std::to_string(bytes) + " bytes");
  }
  return Status::Ok();
}

}  // namespace

Status CheckMemoryPlan(const SsaGraph& graph) {
  const MemoryPlan& plan = graph.memory_plan;
  PAREX_RETURN_IF_ERROR(CheckPlanTotals(graph, plan));
  const int num_buffers = static_cast<int>(plan.buffer_bytes.size());
  if (plan.buffer_of.empty() && num_buffers == 0) return Status::Ok();
  if (plan.batch_per_place <= 0) {
    return PlanFailure("batch_per_place is " +
                       std::to_string(plan.batch_per_place));
  }
  PAREX_ASSIGN_OR_RETURN(SsaReachability reach, SsaReachability::Create(graph));
  const StorageFacts facts(graph);
  std::vector<std::vector<Occupant>> occupants(num_buffers);
  for (int place = 0; place < static_cast<int>(plan.buffer_of.size());
       ++place) {
    for (const auto& [name, buffer] : plan.buffer_of[place]) {
      PAREX_RETURN_IF_ERROR(CheckOccupant(graph, facts, name, place, buffer));
      occupants[buffer].push_back({&name, facts.Accesses(name, place)});
    }
  }
  for (int buffer = 0; buffer < num_buffers; ++buffer) {
    const std::vector<Occupant>& list = occupants[buffer];
    for (size_t i = 0; i < list.size(); ++i) {
      for (size_t j = i + 1; j < list.size(); ++j) {
        const std::string why =
            Overlap(graph, reach, *list[i].name, list[i].accesses,
                    *list[j].name, list[j].accesses);
        if (why.empty()) continue;
        return PlanFailure(
            "buffer " + std::to_string(buffer) + " on " +
            graph.places()[plan.buffer_place[buffer]].ToString() + " holds '" +
            *list[i].name + "' and '" + *list[j].name +
            "', which may be live at the same time: " + why);
      }
    }
  }
  return Status::Ok();
}

}  // namespace parex
