// Tensor arrays (Paddle's LOD_TENSOR_ARRAY variables, which
// `paddle.jit.to_static` makes of a Python list appended in a loop):
//   write_to_array   X, I (int64 [1]) -> Out: the array with element I set
//                    to a copy of X (grown with empty elements when I is
//                    past its end);
//   read_from_array  X (array), I -> Out: a copy of element I;
//   lod_array_length X (array) -> Out: int64 [1], its length;
//   tensor_array_to_tensor  X (array) -> Out, OutIndex (int32 [n]): the
//                    elements concatenated (use_stack false) or stacked
//                    (true) along `axis`, with each element's extent there.
// An array variable holds a tensor list (kernels/scope.h); the kernels
// shape their outputs (an element's shape is known at run time only).
#include "graph/ir/ops/op_groups.h"

namespace parex {

void RegisterArrayOps(OpSchemaRegistry* r) {
  r->Add(OpSchema("write_to_array")
             .Input("X")
             .Input("I")
             .Output("Out")
             .KernelDTypeAny());
  r->Add(OpSchema("read_from_array")
             .Input("X")
             .Input("I")
             .Output("Out")
             .KernelDTypeAny());
  r->Add(OpSchema("lod_array_length")
             .Input("X")
             .Output("Out")
             .KernelDTypeAny()
             .InferShape([](ShapeContext& ctx) {
               ctx.SetOutput("Out", {1}, DType::kInt64);
               return Status::Ok();
             }));
  r->Add(OpSchema("tensor_array_to_tensor")
             .Input("X")
             .Output("Out")
             .Output("OutIndex", kOptional)
             .Attr("axis", 0)
             .Attr("use_stack", false)
             .KernelDTypeAny());
}

}  // namespace parex
