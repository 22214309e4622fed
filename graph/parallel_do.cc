#include "graph/parallel_do.h"

#include "graph/multi_device_builder.h"

namespace parex {

StatusOr<Program> FlattenParallelDo(const Program&) { return Unimplemented("FlattenParallelDo"); }
StatusOr<SsaGraph> BuildParallelDoGraph(const Program&, const std::vector<Place>&,
                                        const std::string&, const BuildStrategy&) {
  return Unimplemented("BuildParallelDoGraph");
}
StatusOr<Program> TranspileMultiThread(const Program&, const std::string&,
                                       const std::vector<std::string>&, int) {
  return Unimplemented("TranspileMultiThread");
}

}  // namespace parex
