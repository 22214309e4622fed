#include "graph/ops/op_groups.h"

namespace parex {

void RegisterMatmulOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
