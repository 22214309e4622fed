#include "graph/ops/op_groups.h"

namespace parex {

void RegisterActivationOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
