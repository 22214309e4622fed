#include "graph/ops/op_groups.h"

namespace parex {

void RegisterConvOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
