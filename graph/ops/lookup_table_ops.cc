#include "graph/ops/op_groups.h"

namespace parex {

void RegisterLookupTableOps(OpSchemaRegistry* r) { (void)r; }

}  // namespace parex
