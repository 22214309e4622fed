#include "graph/ops/op_groups.h"

namespace parex {

void RegisterElementwiseOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
