#include "kernels/feed.h"

namespace parex {

Status CheckFeed(const VarDesc& var, const Tensor& value) {
  if (!value.defined()) {
    return InvalidArgument("feed '" + var.name() + "': empty tensor");
  }
  if (var.dtype() != DType::kUndefined && var.dtype() != value.dtype()) {
    return InvalidArgument("feed '" + var.name() + "': dtype " +
                           DTypeName(value.dtype()) +
                           ", the program declares " + DTypeName(var.dtype()));
  }
  // Read in place: a feed is checked every step (no copy, no allocation).
  const int rank = var.rank();
  if (rank == 0) return Status::Ok();
  bool ok = static_cast<size_t>(rank) == value.dims().size();
  for (int i = 0; ok && i < rank; ++i) {
    ok = ExtentsAgree(var.dim(i), value.dims()[i]);
  }
  if (!ok) {
    return InvalidArgument(
        "feed '" + var.name() + "': shape " + DimsToString(value.dims()) +
        ", the program declares " + DimsToString(var.dims()));
  }
  return Status::Ok();
}

StatusOr<FeedMap> CopyFeed(const FeedMap& feed, Allocator* allocator) {
  FeedMap out;
  for (const auto& [name, value] : feed) {
    PAREX_RETURN_IF_ERROR(out[name]
                              .TryCopyFrom(allocator, value)
                              .WithContext("feed '" + name + "'"));
  }
  return out;
}

}  // namespace parex
