#include "graph/ops/op_groups.h"

namespace parex {

void RegisterShapeOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
