#include "graph/ops/op_groups.h"

namespace parex {

void RegisterNormOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
