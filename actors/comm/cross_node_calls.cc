#include "actors/comm/cross_node_calls.h"

#include <climits>
#include <cstring>
#include <string>

namespace parex {
namespace {

std::string Label(Collective collective, std::string_view name) {
  return std::string(CollectiveName(collective)) + " '" + ShownName(name) + "'";
}

}  // namespace

StatusOr<CrossCall> CheckCrossCall(Collective collective, std::string_view name,
                                   TensorGroups groups, int root, int size,
                                   std::string_view backend) {
  if (root < 0 || root >= size) {
    return InvalidArgument(Label(collective, name) + ": root rank " +
                           std::to_string(root) + " is not in 0.." +
                           std::to_string(size - 1));
  }
  CrossCall call;
  for (const PlaceTensors& group : groups) {
    if (group.size() != 1 || group[0] == nullptr || !group[0]->defined()) {
      return InvalidArgument(Label(collective, name) +
                             " across nodes: each group needs one defined "
                             "tensor of this rank");
    }
    const Tensor& t = *group[0];
    if (call.dtype == DType::kUndefined) call.dtype = t.dtype();
    if (t.dtype() != call.dtype) {
      return InvalidArgument(Label(collective, name) +
                             ": a fused bucket mixes " + DTypeName(call.dtype) +
                             " and " + DTypeName(t.dtype()));
    }
    call.count += t.numel();
  }
  if (call.count > INT_MAX) {
    return OutOfRange(Label(collective, name) + ": " +
                      std::to_string(call.count) + " elements are more than " +
                      "one " + std::string(backend) + " call takes (2^31 - 1)");
  }
  return call;
}

Status CheckSummable(Collective collective, std::string_view name,
                     DType dtype) {
  if (dtype == DType::kFP32 || dtype == DType::kFP64 ||
      dtype == DType::kInt32 || dtype == DType::kInt64) {
    return Status::Ok();
  }
  return InvalidArgument(
      Label(collective, name) + ": dtype " + DTypeName(dtype) +
      " cannot be summed across nodes (fp32, fp64, int32, int64 can)");
}

StatusOr<bool> StageIn(Collective collective, std::string_view name,
                       TensorGroups groups, Tensor& staging, bool alias) {
  const char* const base = static_cast<const char*>(staging.raw_data());
  bool in_place = alias;
  size_t at = 0;
  for (const PlaceTensors& group : groups) {
    in_place = in_place && group[0]->raw_data() == base + at;
    at += group[0]->bytes();
  }
  if (in_place) return true;
  if (alias) {
    // Copying in would overwrite what tensors of an earlier call still
    // view: a collective name stands for one set of tensors (the
    // executor's collective op handles do).
    long passed = 0;
    for (const PlaceTensors& group : groups) {
      if (group[0]->SharesBufferWith(staging)) ++passed;
    }
    if (staging.buffer_holders() > 1 + passed) {
      return FailedPrecondition(
          Label(collective, name) +
          " across nodes: called with other tensors while the tensors of its "
          "last call still view its memory (a collective name must stand for "
          "one set of tensors)");
    }
  }
  char* const out = static_cast<char*>(staging.raw_data());
  at = 0;
  for (const PlaceTensors& group : groups) {
    const size_t bytes = group[0]->bytes();
    if (bytes > 0) std::memcpy(out + at, group[0]->raw_data(), bytes);
    at += bytes;
  }
  return false;
}

void StageOut(TensorGroups groups, const Tensor& staging, bool alias) {
  const char* const base = static_cast<const char*>(staging.raw_data());
  size_t at = 0;
  int64_t element = 0;
  for (const PlaceTensors& group : groups) {
    Tensor& t = *group[0];
    const size_t bytes = t.bytes();
    if (alias) {
      const Dims dims = t.dims();
      LoD lod = t.lod();
      t.ViewElements(staging, element, element + t.numel());
      t.Reshape(dims);
      t.set_lod(std::move(lod));
    } else if (bytes > 0) {
      std::memcpy(t.raw_data(), base + at, bytes);
    }
    at += bytes;
    element += t.numel();
  }
}

}  // namespace parex
