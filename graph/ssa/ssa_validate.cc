#include "graph/ssa/ssa_validate.h"

#include <algorithm>
#include <string>
#include <vector>

#include "graph/ssa/ssa_labels.h"

namespace parex {
namespace {

bool Contains(const std::vector<int>& list, int x) {
  return std::find(list.begin(), list.end(), x) != list.end();
}

Status Broken(const std::string& message) {
  return FailedPrecondition("SSA graph: " + message);
}

// A var's own fields and its links to its generator and readers.
Status CheckVar(const SsaGraph& graph, int id) {
  const SsaVar& v = graph.var(id);
  const std::string label = SafeVarLabel(graph, id);
  if (v.id != id) {
    return Broken("var #" + std::to_string(id) + " " + label + " records id " +
                  std::to_string(v.id));
  }
  if (!IdInRange(v.place, graph.places().size())) {
    return Broken("var " + label + " lies on " + SsaPlaceName(graph, v.place) +
                  ", the graph has " + std::to_string(graph.num_places()) +
                  " places");
  }
  if (v.generator != -1) {
    if (!IdInRange(v.generator, graph.ops().size())) {
      return Broken("var " + label + " names generator " +
                    SafeOpLabel(graph, v.generator));
    }
    if (!Contains(graph.op(v.generator).outputs, id)) {
      return Broken("var " + label + " names " +
                    SafeOpLabel(graph, v.generator) +
                    " as its generator, but that op does not list it as an "
                    "output");
    }
  }
  for (int r : v.readers) {
    if (!IdInRange(r, graph.ops().size())) {
      return Broken("var " + label + " names reader " + SafeOpLabel(graph, r));
    }
    if (!Contains(graph.op(r).inputs, id)) {
      return Broken("var " + label + " names " + SafeOpLabel(graph, r) +
                    " as a reader, but that op does not list it as an input");
    }
  }
  return Status::Ok();
}

// An op's own fields and its links to its inputs and outputs.
Status CheckOpLinks(const SsaGraph& graph, int id) {
  const SsaOp& op = graph.op(id);
  const std::string label = SafeOpLabel(graph, id);
  if (op.id != id) {
    return Broken("op #" + std::to_string(id) + " records id " +
                  std::to_string(op.id));
  }
  const bool spans = op.kind != SsaOpKind::kComputation &&
                     op.kind != SsaOpKind::kScaleLossGrad;
  if (!spans && !IdInRange(op.place, graph.places().size())) {
    return Broken(label + " runs on " + SsaPlaceName(graph, op.place) +
                  ", the graph has " + std::to_string(graph.num_places()) +
                  " places");
  }
  for (int p : op.places) {
    if (!IdInRange(p, graph.places().size())) {
      return Broken(label + " lists " + SsaPlaceName(graph, p) +
                    " among its places");
    }
  }
  if (spans && op.places.empty()) {
    return Broken(label + " (" + SsaOpKindName(op.kind) + ") lists no places");
  }
  for (int v : op.inputs) {
    if (!IdInRange(v, graph.vars().size())) {
      return Broken(label + " reads " + SafeVarLabel(graph, v));
    }
    if (graph.removed(v)) {
      return Broken(label + " reads removed var " + SafeVarLabel(graph, v));
    }
    if (!Contains(graph.var(v).readers, id)) {
      return Broken(label + " reads " + SafeVarLabel(graph, v) +
                    ", which does not list the op as a reader");
    }
  }
  for (int v : op.outputs) {
    if (!IdInRange(v, graph.vars().size())) {
      return Broken(label + " writes " + SafeVarLabel(graph, v));
    }
    if (graph.removed(v)) {
      return Broken(label + " writes removed var " + SafeVarLabel(graph, v));
    }
    const int generator = graph.var(v).generator;
    if (generator != id) {
      return Broken(label + " writes " + SafeVarLabel(graph, v) +
                    ", whose generator is " +
                    (generator < 0 ? std::string("none (a graph input)")
                                   : SafeOpLabel(graph, generator)) +
                    " (a var has at most one generator)");
    }
  }
  return Status::Ok();
}

// Versions of every (name, place) are numbered 0.. in the graph's index;
// only version 0 may lack a generator.
Status CheckVersions(const SsaGraph& graph) {
  for (const SsaVar& v : graph.vars()) {
    if (v.is_control() || graph.removed(v.id)) continue;
    const std::vector<int>& versions = graph.Versions(v.name, v.place);
    if (!IdInRange(v.version, versions.size()) || versions[v.version] != v.id) {
      return Broken("var " + graph.VarLabel(v.id) + " is not version " +
                    std::to_string(v.version) + " of " + v.name + " on " +
                    SsaPlaceName(graph, v.place) + " in the version index (" +
                    std::to_string(versions.size()) + " versions)");
    }
    if (v.version > 0 && v.generator < 0) {
      return Broken("var " + graph.VarLabel(v.id) +
                    " has no generator; only version 0 may be a graph input");
    }
  }
  for (const std::string& name : graph.VarNames()) {
    for (int p = 0; p < graph.num_places(); ++p) {
      const std::vector<int>& versions = graph.Versions(name, p);
      for (size_t k = 0; k < versions.size(); ++k) {
        const int id = versions[k];
        if (!IdInRange(id, graph.vars().size()) ||
            graph.var(id).version != static_cast<int>(k) ||
            graph.var(id).name != name || graph.var(id).place != p) {
          return Broken("version " + std::to_string(k) + " of " + name +
                        " on " + SsaPlaceName(graph, p) + " is " +
                        SafeVarLabel(graph, id));
        }
      }
    }
  }
  return Status::Ok();
}

// Data vars only: control vars carry no data, and a hazard between places
// that share a parameter buffer joins ops of two places.
Status CheckPlacement(const SsaGraph& graph, int id) {
  const SsaOp& op = graph.op(id);
  auto check = [&](int v, bool write) -> Status {
    const SsaVar& var = graph.var(v);
    if (var.is_control()) return Status::Ok();
    const char* verb = write ? " writes " : " reads ";
    const std::string where =
        SafeOpLabel(graph, id) + verb + graph.VarLabel(v) + ", ";
    switch (op.kind) {
      case SsaOpKind::kComputation:
      case SsaOpKind::kScaleLossGrad:
        if (var.place != op.place) {
          return Broken(where + "a var of another place (the op runs on " +
                        SsaPlaceName(graph, op.place) + ")");
        }
        return Status::Ok();
      default:
        break;
    }
    if (!Contains(op.places, var.place)) {
      return Broken(where + "a var of " + SsaPlaceName(graph, var.place) +
                    ", which the op does not list among its places");
    }
    if (op.kind == SsaOpKind::kReduce && write && var.place != op.root) {
      return Broken(where + "but a reduce writes only on its root " +
                    SsaPlaceName(graph, op.root));
    }
    if (op.kind == SsaOpKind::kBroadcast && !write && var.place != op.root) {
      return Broken(where + "but a broadcast reads only on its root " +
                    SsaPlaceName(graph, op.root));
    }
    return Status::Ok();
  };
  if ((op.kind == SsaOpKind::kReduce || op.kind == SsaOpKind::kBroadcast) &&
      !Contains(op.places, op.root)) {
    return Broken(SafeOpLabel(graph, id) + " has root " +
                  SsaPlaceName(graph, op.root) +
                  ", which it does not list among its places");
  }
  for (int v : op.inputs) PAREX_RETURN_IF_ERROR(check(v, false));
  for (int v : op.outputs) PAREX_RETURN_IF_ERROR(check(v, true));
  return Status::Ok();
}

}  // namespace

Status ValidateSsaGraph(const SsaGraph& graph) {
  // Links first: the later checks and the topological order follow them.
  for (int id = 0; id < static_cast<int>(graph.vars().size()); ++id) {
    if (graph.removed(id)) continue;
    PAREX_RETURN_IF_ERROR(CheckVar(graph, id));
  }
  for (int id = 0; id < static_cast<int>(graph.ops().size()); ++id) {
    PAREX_RETURN_IF_ERROR(CheckOpLinks(graph, id));
  }
  PAREX_RETURN_IF_ERROR(CheckVersions(graph));
  for (int id = 0; id < static_cast<int>(graph.ops().size()); ++id) {
    PAREX_RETURN_IF_ERROR(CheckPlacement(graph, id));
  }
  // Names the ops of the cycle ("the SSA graph has a cycle: op #1 ... ").
  return graph.TopologicalOrder().status();
}

}  // namespace parex
