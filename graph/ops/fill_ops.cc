#include "graph/ops/op_groups.h"

namespace parex {

void RegisterFillOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
