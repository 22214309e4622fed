#include "graph/ops/op_groups.h"

namespace parex {

void RegisterOptimizerOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
