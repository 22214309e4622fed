// feed and fetch: the ops that move values between an executor's caller and
// a program. `feed` reads column `col` of the FEED_MINIBATCH var `feed`;
// `fetch` writes column `col` of the FETCH_LIST var `fetch`.
#include "graph/ir/ops/op_groups.h"

namespace parex {

void RegisterIoOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("feed")
             .Input("X")
             .Output("Out")
             .Attr("col", 0)
             .KernelDTypeAny());
  r->Add(OpSchema("fetch")
             .Input("X")
             .Output("Out")
             .Attr("col", 0)
             .KernelDTypeAny());
}

}  // namespace parex
