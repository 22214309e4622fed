#include "graph/ops/op_groups.h"

namespace parex {

void RegisterReduceOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
