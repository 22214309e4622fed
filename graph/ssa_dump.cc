#include "graph/ssa_dump.h"

namespace parex {

Status ValidateSsaGraph(const SsaGraph& graph) {
  (void)graph;
  return Status::Ok();  // TODO(helper): implement
}
std::string SsaGraphToDot(const SsaGraph&) { return ""; }
std::string SsaGraphToJson(const SsaGraph&) { return "{}"; }
Status WriteSsaGraphDot(const SsaGraph&, const std::string&) { return Unimplemented("dot"); }
Status WriteSsaGraphJson(const SsaGraph&, const std::string&) { return Unimplemented("json"); }

}  // namespace parex
