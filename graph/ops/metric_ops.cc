#include "graph/ops/op_groups.h"

namespace parex {

void RegisterMetricOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
