#include "graph/ssa/ssa_labels.h"

namespace parex {

bool IdInRange(int i, size_t n) { return i >= 0 && static_cast<size_t>(i) < n; }

std::string SsaPlaceName(const SsaGraph& graph, int place) {
  if (IdInRange(place, graph.places().size())) {
    return graph.places()[place].ToString();
  }
  return "place #" + std::to_string(place) + " (out of range)";
}

std::string SafeVarLabel(const SsaGraph& graph, int id) {
  if (!IdInRange(id, graph.vars().size())) {
    return "var #" + std::to_string(id) + " (out of range)";
  }
  const SsaVar& v = graph.var(id);
  if (IdInRange(v.place, graph.places().size())) return graph.VarLabel(id);
  return v.name + "@" + std::to_string(v.version) + "@" +
         SsaPlaceName(graph, v.place);
}

std::string SafeOpLabel(const SsaGraph& graph, int id) {
  if (!IdInRange(id, graph.ops().size())) {
    return "op #" + std::to_string(id) + " (out of range)";
  }
  const SsaOp& op = graph.op(id);
  if (op.place < 0 || IdInRange(op.place, graph.places().size())) {
    return graph.OpLabel(id);
  }
  return "op #" + std::to_string(id) + " " + op.type + "@" +
         SsaPlaceName(graph, op.place);
}

}  // namespace parex
