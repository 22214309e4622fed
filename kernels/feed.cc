#include "kernels/feed.h"

namespace parex {

Status CheckFeed(const VarDesc& var, const Tensor& value) {
  if (!value.defined()) {
    return InvalidArgument("feed '" + var.name() + "': empty tensor");
  }
  if (var.dtype() != DType::kUndefined && var.dtype() != value.dtype()) {
    return InvalidArgument("feed '" + var.name() + "': dtype " +
                           DTypeName(value.dtype()) + ", the program declares " +
                           DTypeName(var.dtype()));
  }
  Dims decl = var.dims();
  if (decl.empty()) return Status::Ok();
  bool ok = decl.size() == value.dims().size();
  for (size_t i = 0; ok && i < decl.size(); ++i) {
    ok = ExtentsAgree(decl[i], value.dims()[i]);
  }
  if (!ok) {
    return InvalidArgument("feed '" + var.name() + "': shape " +
                           DimsToString(value.dims()) +
                           ", the program declares " + DimsToString(decl));
  }
  return Status::Ok();
}

}  // namespace parex
