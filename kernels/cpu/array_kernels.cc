// Tensor arrays on CPU (semantics: graph/ir/ops/array_ops.cc). An array is
// the variable's tensor list; elements are deep copies, so a loop that
// writes its carried tensor into the array and then overwrites that tensor
// keeps every step's value, as Paddle does.
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

// Arrays grow to at most this many elements: an index read from a tensor
// is data, and a crafted one must not allocate without bound.
constexpr int64_t kMaxArrayLength = int64_t{1} << 24;

StatusOr<int64_t> IndexOf(const KernelContext& ctx) {
  const Tensor* i = ctx.Input("I");
  if (i == nullptr || !i->defined() || i->numel() != 1) {
    return ctx.Error("I must hold one integer (the array index)");
  }
  int64_t index = 0;
  if (i->dtype() == DType::kInt64) {
    index = i->data<int64_t>()[0];
  } else if (i->dtype() == DType::kInt32) {
    index = i->data<int32_t>()[0];
  } else {
    return ctx.Error(std::string("I is ") + DTypeName(i->dtype()) +
                     ", not int64 or int32");
  }
  if (index < 0 || index >= kMaxArrayLength) {
    return ctx.Error("array index " + std::to_string(index) +
                     " is outside [0, " + std::to_string(kMaxArrayLength) +
                     ")");
  }
  return index;
}

const std::vector<Tensor>* ArrayOf(const KernelContext& ctx) {
  const Variable* var = ctx.InputVar("X");
  return var == nullptr ? nullptr : var->GetTensorList();
}

Status WriteToArrayKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(const int64_t index, IndexOf(ctx));
  const Tensor* x = ctx.Input("X");
  if (x == nullptr || !x->defined()) {
    return ctx.Error("X ('" + ctx.op().FirstInput("X") + "') holds no tensor");
  }
  std::vector<Tensor>* array = ctx.OutputVar("Out")->GetMutableTensorList();
  if (static_cast<int64_t>(array->size()) <= index) array->resize(index + 1);
  (*array)[index] = x->Clone();
  return Status::Ok();
}

Status ReadFromArrayKernel(KernelContext& ctx) {
  PAREX_ASSIGN_OR_RETURN(const int64_t index, IndexOf(ctx));
  const std::vector<Tensor>* array = ArrayOf(ctx);
  const int64_t size = array == nullptr ? 0 : array->size();
  if (index >= size || !(*array)[index].defined()) {
    return ctx.Error("array '" + ctx.op().FirstInput("X") +
                     "' has no element " + std::to_string(index) + " (length " +
                     std::to_string(size) + ")");
  }
  *ctx.Output("Out") = (*array)[index].Clone();
  return Status::Ok();
}

Status ArrayLengthKernel(KernelContext& ctx) {
  const std::vector<Tensor>* array = ArrayOf(ctx);
  ctx.Output("Out")->data<int64_t>()[0] =
      array == nullptr ? 0 : static_cast<int64_t>(array->size());
  return Status::Ok();
}

// The elements' common shape (the axis extent aside when concatenating)
// and the output's; errors name the element that differs.
Status JoinedDims(const KernelContext& ctx, const std::vector<Tensor>& array,
                  int axis, bool stack, Dims* out) {
  const Dims& first = array[0].dims();
  for (size_t k = 0; k < array.size(); ++k) {
    const Tensor& t = array[k];
    if (!t.defined()) {
      return ctx.Error("element " + std::to_string(k) +
                       " of the array is "
                       "empty");
    }
    bool same = t.dtype() == array[0].dtype() && t.rank() == array[0].rank();
    for (int d = 0; same && d < t.rank(); ++d) {
      same = t.dim(d) == first[d] || (!stack && d == axis);
    }
    if (!same) {
      return ctx.Error("element " + std::to_string(k) + " is " +
                       DTypeName(t.dtype()) + DimsToString(t.dims()) +
                       ", element 0 " + DTypeName(array[0].dtype()) +
                       DimsToString(first) + ": they do not " +
                       (stack ? "stack" : "concatenate") + " on axis " +
                       std::to_string(axis));
    }
  }
  *out = first;
  if (stack) {
    out->insert(out->begin() + axis, static_cast<int64_t>(array.size()));
  } else {
    int64_t extent = 0;
    for (const Tensor& t : array) extent += t.dim(axis);
    (*out)[axis] = extent;
  }
  return Status::Ok();
}

Status TensorArrayToTensorKernel(KernelContext& ctx) {
  const std::vector<Tensor>* array = ArrayOf(ctx);
  if (array == nullptr || array->empty()) {
    return ctx.Error("array '" + ctx.op().FirstInput("X") + "' is empty");
  }
  const bool stack = ctx.Attr<bool>("use_stack");
  const int rank = (*array)[0].rank() + (stack ? 1 : 0);
  int axis = ctx.Attr<int>("axis");
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return ctx.Error("axis " + std::to_string(ctx.Attr<int>("axis")) +
                     " is outside the result's rank " + std::to_string(rank));
  }
  Dims dims;
  PAREX_RETURN_IF_ERROR(JoinedDims(ctx, *array, axis, stack, &dims));
  Tensor* out = ctx.Output("Out");
  PAREX_RETURN_IF_ERROR(
      out->TryAllocate((*array)[0].dtype(), dims, ctx.place()));
  // [outer, extent_k * inner] blocks of each element, side by side.
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  char* to = static_cast<char*>(out->raw_data());
  for (int64_t o = 0; out->numel() > 0 && o < outer; ++o) {
    for (const Tensor& t : *array) {
      const size_t chunk = t.bytes() / static_cast<size_t>(outer);
      std::memcpy(to, static_cast<const char*>(t.raw_data()) + o * chunk,
                  chunk);
      to += chunk;
    }
  }
  if (ctx.OutputCount("OutIndex") > 0 && ctx.OutputVar("OutIndex") != nullptr) {
    Tensor* index = ctx.Output("OutIndex");
    PAREX_RETURN_IF_ERROR(index->TryAllocate(
        DType::kInt32, {static_cast<int64_t>(array->size())}, ctx.place()));
    for (size_t k = 0; k < array->size(); ++k) {
      index->data<int32_t>()[k] =
          stack ? 1 : static_cast<int32_t>((*array)[k].dim(axis));
    }
  }
  return Status::Ok();
}

}  // namespace

void RegisterArrayKernels(KernelRegistry* r) {
  const Place::Kind cpu = Place::Kind::kCPU;
  r->Register({"write_to_array", cpu, DType::kUndefined}, &WriteToArrayKernel);
  r->Register({"read_from_array", cpu, DType::kUndefined},
              &ReadFromArrayKernel);
  r->Register({"lod_array_length", cpu, DType::kUndefined}, &ArrayLengthKernel);
  r->Register({"tensor_array_to_tensor", cpu, DType::kUndefined},
              &TensorArrayToTensorKernel);
}

}  // namespace parex
