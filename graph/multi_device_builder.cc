#include "graph/multi_device_builder.h"

namespace parex {

StatusOr<SsaGraph> BuildMultiDeviceGraph(const Program&, const std::vector<Place>&,
                                         const std::string&, const BuildStrategy&,
                                         const std::vector<std::string>&) {
  return Unimplemented("BuildMultiDeviceGraph");
}

}  // namespace parex
