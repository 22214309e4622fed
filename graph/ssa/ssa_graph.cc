#include "graph/ssa/ssa_graph.h"

#include <algorithm>
#include <deque>
#include <utility>

#include "base/check.h"

namespace parex {

const char* SsaOpKindName(SsaOpKind kind) {
  switch (kind) {
    case SsaOpKind::kComputation:
      return "computation";
    case SsaOpKind::kScaleLossGrad:
      return "scale_loss_grad";
    case SsaOpKind::kAllReduce:
      return "all_reduce";
    case SsaOpKind::kFusedAllReduce:
      return "fused_all_reduce";
    case SsaOpKind::kReduce:
      return "reduce";
    case SsaOpKind::kBroadcast:
      return "broadcast";
    case SsaOpKind::kAllGather:
      return "all_gather";
    case SsaOpKind::kFetch:
      return "fetch";
  }
  return "?";
}

bool IsCollective(SsaOpKind kind) {
  switch (kind) {
    case SsaOpKind::kAllReduce:
    case SsaOpKind::kFusedAllReduce:
    case SsaOpKind::kReduce:
    case SsaOpKind::kBroadcast:
    case SsaOpKind::kAllGather:
      return true;
    default:
      return false;
  }
}

const char* ControlReasonName(ControlReason reason) {
  switch (reason) {
    case ControlReason::kNone:
      return "data";
    case ControlReason::kWriteAfterRead:
      return "write-after-read";
    case ControlReason::kWriteAfterWrite:
      return "write-after-write";
    case ControlReason::kReadAfterWrite:
      return "read-after-write";
    case ControlReason::kNoOutput:
      return "no-output";
    case ControlReason::kSequential:
      return "sequential";
    case ControlReason::kOptimizerSlice:
      return "optimizer-slice";
  }
  return "?";
}

SsaGraph::SsaGraph(std::shared_ptr<const Program> program,
                   std::vector<Place> places)
    : program_(std::move(program)), places_(std::move(places)) {
  PAREX_CHECK(program_ != nullptr);
}

const VarDesc* SsaGraph::FindVarDesc(const std::string& name) const {
  return program_->global_block().FindVar(name);
}

const std::vector<int>& SsaGraph::Versions(const std::string& name,
                                           int place) const {
  static const std::vector<int> kNone;
  auto it = versions_.find(name);
  if (it == versions_.end() || place < 0 ||
      place >= static_cast<int>(it->second.size())) {
    return kNone;
  }
  return it->second[place];
}

int SsaGraph::Latest(const std::string& name, int place) const {
  const std::vector<int>& v = Versions(name, place);
  return v.empty() ? -1 : v.back();
}

std::vector<std::string> SsaGraph::VarNames() const {
  std::vector<std::string> names;
  names.reserve(versions_.size());
  for (const auto& [name, unused] : versions_) names.push_back(name);
  return names;
}

std::string SsaGraph::VarLabel(int var_id) const {
  const SsaVar& v = vars_[var_id];
  const std::string place = places_[v.place].ToString();
  if (v.is_control()) {
    return v.name + "@" + place + " (" + ControlReasonName(v.control) + ")";
  }
  return v.name + "@" + std::to_string(v.version) + "@" + place;
}

std::string SsaGraph::OpLabel(int op_id) const {
  const SsaOp& op = ops_[op_id];
  std::string label = "op #" + std::to_string(op_id) + " " + op.type;
  if (op.place >= 0) label += "@" + places_[op.place].ToString();
  if (!op.var_names.empty()) {
    label += "(";
    for (size_t i = 0; i < op.var_names.size(); ++i) {
      if (i > 0) label += ", ";
      if (i == 3 && op.var_names.size() > 4) {
        label += "... " + std::to_string(op.var_names.size() - 3) + " more";
        break;
      }
      label += op.var_names[i];
    }
    label += ")";
  }
  if (op.program_op < 0 && op.num_slices > 0) {
    label += " (summed by its " + std::to_string(op.num_slices) +
             " optimizer slices)";
  }
  if (op.program_op >= 0) {
    label += " (program op #" + std::to_string(op.program_op);
    if (op.slice >= 0) {
      label += ", slice " + std::to_string(op.slice + 1) + "/" +
               std::to_string(op.num_slices);
    } else if (op.num_slices > 0) {
      label += ", after its " + std::to_string(op.num_slices) + " slices";
    }
    label += ")";
  }
  return label;
}

int SsaGraph::AddOp(SsaOpKind kind, std::string type, int place,
                    std::vector<int> places) {
  SsaOp op;
  op.id = static_cast<int>(ops_.size());
  op.kind = kind;
  op.type = std::move(type);
  op.place = place;
  std::sort(places.begin(), places.end());
  op.places = std::move(places);
  ops_.push_back(std::move(op));
  return ops_.back().id;
}

int SsaGraph::ReadVar(const std::string& name, int place) {
  PAREX_CHECK(place >= 0 && place < num_places());
  auto& per_place = versions_[name];
  if (per_place.empty()) per_place.resize(places_.size());
  std::vector<int>& v = per_place[place];
  if (v.empty()) {
    SsaVar var;
    var.id = static_cast<int>(vars_.size());
    var.name = name;
    var.version = 0;
    var.place = place;
    vars_.push_back(std::move(var));
    removed_.push_back(false);
    v.push_back(vars_.back().id);
  }
  return v.back();
}

void SsaGraph::AddInput(int op, int var_id) {
  ops_[op].inputs.push_back(var_id);
  vars_[var_id].readers.push_back(op);
}

int SsaGraph::WriteVar(int op, const std::string& name, int place) {
  PAREX_CHECK(place >= 0 && place < num_places());
  auto& per_place = versions_[name];
  if (per_place.empty()) per_place.resize(places_.size());
  std::vector<int>& v = per_place[place];
  SsaVar var;
  var.id = static_cast<int>(vars_.size());
  var.name = name;
  var.version = static_cast<int>(v.size());
  var.place = place;
  var.generator = op;
  vars_.push_back(std::move(var));
  removed_.push_back(false);
  v.push_back(vars_.back().id);
  ops_[op].outputs.push_back(vars_.back().id);
  return vars_.back().id;
}

int SsaGraph::AddControlEdge(int from, int to, ControlReason reason) {
  PAREX_CHECK(reason != ControlReason::kNone);
  SsaVar var;
  var.id = static_cast<int>(vars_.size());
  var.name = "@CONTROL@" + std::to_string(var.id);
  const int to_place = ops_[to].place;
  var.place = to_place >= 0 ? to_place : std::max(ops_[from].place, 0);
  var.control = reason;
  var.generator = from;
  var.readers.push_back(to);
  vars_.push_back(std::move(var));
  removed_.push_back(false);
  ops_[from].outputs.push_back(vars_.back().id);
  ops_[to].inputs.push_back(vars_.back().id);
  return vars_.back().id;
}

int SsaGraph::AddDummyOutput(int op) {
  SsaVar var;
  var.id = static_cast<int>(vars_.size());
  var.name = "@CONTROL@" + std::to_string(var.id);
  var.place = std::max(ops_[op].place, 0);
  var.control = ControlReason::kNoOutput;
  var.generator = op;
  vars_.push_back(std::move(var));
  removed_.push_back(false);
  ops_[op].outputs.push_back(vars_.back().id);
  return vars_.back().id;
}

void SsaGraph::RemoveControlVar(int var_id) {
  SsaVar& v = vars_[var_id];
  PAREX_CHECK(v.is_control());
  auto erase = [var_id](std::vector<int>* list) {
    list->erase(std::remove(list->begin(), list->end(), var_id), list->end());
  };
  if (v.generator >= 0) erase(&ops_[v.generator].outputs);
  for (int r : v.readers) erase(&ops_[r].inputs);
  v.generator = -1;
  v.readers.clear();
  removed_[var_id] = true;
}

bool SsaGraph::removed(int var_id) const { return removed_[var_id]; }

bool SsaGraph::IsSharedStorage(const std::string& name) const {
  if (!shared_parameters) return false;
  for (const GradInfo& g : grads) {
    if (g.param == name) return true;
  }
  return false;
}

StatusOr<std::vector<int>> SsaGraph::TopologicalOrder() const {
  // Kahn's algorithm; ties broken by op id so the order is deterministic.
  const int n = static_cast<int>(ops_.size());
  std::vector<int> pending(n, 0);
  for (const SsaOp& op : ops_) {
    for (int v : op.inputs) {
      if (vars_[v].generator >= 0) ++pending[op.id];
    }
  }
  std::deque<int> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(i);
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int op = ready.front();
    ready.pop_front();
    order.push_back(op);
    for (int v : ops_[op].outputs) {
      for (int r : vars_[v].readers) {
        if (--pending[r] == 0) ready.push_back(r);
      }
    }
  }
  if (static_cast<int>(order.size()) == n) return order;
  // Name the ops left: they lie on or behind a cycle; walk back from one
  // through unfinished generators until an op repeats.
  int start = -1;
  for (int i = 0; i < n && start < 0; ++i) {
    if (pending[i] > 0) start = i;
  }
  std::vector<int> seen_at(n, -1);
  std::vector<int> path;
  int cur = start;
  while (seen_at[cur] < 0) {
    seen_at[cur] = static_cast<int>(path.size());
    path.push_back(cur);
    int next = -1;
    for (int v : ops_[cur].inputs) {
      const int g = vars_[v].generator;
      if (g >= 0 && pending[g] > 0) {
        next = g;
        break;
      }
    }
    PAREX_CHECK(next >= 0);
    cur = next;
  }
  std::string cycle;
  for (size_t i = path.size(); i-- > static_cast<size_t>(seen_at[cur]);) {
    cycle += OpLabel(path[i]) + " -> ";
  }
  cycle += OpLabel(cur);
  return FailedPrecondition("the SSA graph has a cycle: " + cycle);
}

std::vector<bool> SsaGraph::Ancestors(int op) const {
  std::vector<bool> seen(ops_.size(), false);
  std::vector<int> stack{op};
  while (!stack.empty()) {
    const int cur = stack.back();
    stack.pop_back();
    for (int v : ops_[cur].inputs) {
      const int g = vars_[v].generator;
      if (g >= 0 && !seen[g]) {
        seen[g] = true;
        stack.push_back(g);
      }
    }
  }
  return seen;
}

StatusOr<SsaReachability> SsaReachability::Create(const SsaGraph& graph) {
  PAREX_ASSIGN_OR_RETURN(std::vector<int> order, graph.TopologicalOrder());
  SsaReachability r;
  r.n_ = static_cast<int>(graph.ops().size());
  r.words_ = (static_cast<size_t>(r.n_) + 63) / 64;
  r.bits_.assign(r.words_ * r.n_, 0);
  // Reverse topological order: an op reaches its readers and what they reach.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int op = *it;
    uint64_t* row = &r.bits_[r.words_ * op];
    for (int v : graph.op(op).outputs) {
      for (int reader : graph.var(v).readers) {
        row[reader / 64] |= uint64_t{1} << (reader % 64);
        const uint64_t* other = &r.bits_[r.words_ * reader];
        for (size_t w = 0; w < r.words_; ++w) row[w] |= other[w];
      }
    }
  }
  return r;
}

bool SsaReachability::Reaches(int from, int to) const {
  return (bits_[words_ * from + to / 64] >> (to % 64)) & 1U;
}

Status CheckRaces(const SsaGraph& graph) {
  PAREX_ASSIGN_OR_RETURN(SsaReachability reach, SsaReachability::Create(graph));
  struct Access {
    int op;
    bool write;
    int var;
  };
  // storage key: "name" for shared storages, "name\0place" otherwise.
  std::map<std::string, std::vector<Access>> storages;
  for (const SsaVar& v : graph.vars()) {
    if (v.is_control() || graph.removed(v.id)) continue;
    std::string key = v.name;
    if (!graph.IsSharedStorage(v.name)) {
      key += '\0';
      key += std::to_string(v.place);
    }
    auto& list = storages[key];
    if (v.generator >= 0) list.push_back({v.generator, true, v.id});
    for (int r : v.readers) list.push_back({r, false, v.id});
  }
  int races = 0;
  std::string first;
  for (const auto& [key, list] : storages) {
    for (size_t i = 0; i < list.size(); ++i) {
      for (size_t j = i + 1; j < list.size(); ++j) {
        const Access& a = list[i];
        const Access& b = list[j];
        if (!a.write && !b.write) continue;
        if (a.op == b.op || reach.Ordered(a.op, b.op)) continue;
        if (races++ == 0) {
          const SsaVar& va = graph.var(a.var);
          first = "'" + va.name + "'" +
                  (graph.IsSharedStorage(va.name)
                       ? std::string(" (shared by every place)")
                       : " on " + graph.places()[va.place].ToString()) +
                  ": " + graph.OpLabel(a.op) +
                  (a.write ? " writes " : " reads ") + graph.VarLabel(a.var) +
                  " and " + graph.OpLabel(b.op) +
                  (b.write ? " writes " : " reads ") + graph.VarLabel(b.var) +
                  " with no order between them";
        }
      }
    }
  }
  if (races == 0) return Status::Ok();
  return FailedPrecondition(
      "data race on " + first +
      (races > 1 ? " (" + std::to_string(races) + " races in all)" : ""));
}

}  // namespace parex
