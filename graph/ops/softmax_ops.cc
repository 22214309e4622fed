#include "graph/ops/op_groups.h"

namespace parex {

void RegisterSoftmaxOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
