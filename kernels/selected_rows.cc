#include "kernels/selected_rows.h"

#include <cstring>

namespace parex {
namespace {

template <typename T>
void ScatterAdd(const SelectedRows& s, int64_t width, Tensor* out) {
  T* dense = out->data<T>();
  std::memset(dense, 0, out->bytes());
  const T* value = s.value.data<T>();
  for (size_t i = 0; i < s.rows.size(); ++i) {
    T* row = dense + s.rows[i] * width;
    const T* g = value + static_cast<int64_t>(i) * width;
    for (int64_t j = 0; j < width; ++j) row[j] += g[j];
  }
}

}  // namespace

Dims SelectedRows::dense_dims() const {
  Dims dims = value.dims();
  if (dims.empty()) dims.push_back(0);
  dims[0] = height;
  return dims;
}

Status SelectedRows::ToDense(Tensor* out) const {
  const int64_t count = static_cast<int64_t>(rows.size());
  if (value.rank() < 1 || value.dim(0) != count) {
    return InvalidArgument("sparse rows: " + std::to_string(count) +
                           " rows for a value of dims " +
                           DimsToString(value.dims()));
  }
  for (int64_t r : rows) {
    if (r < 0 || r >= height) {
      return InvalidArgument("sparse rows: row " + std::to_string(r) +
                             " is outside [0, " + std::to_string(height) + ")");
    }
  }
  PAREX_RETURN_IF_ERROR(
      out->TryAllocate(value.dtype(), dense_dims(), value.place()));
  const int64_t width = count > 0 ? value.numel() / count : 0;
  switch (value.dtype()) {
    case DType::kFP32:
      ScatterAdd<float>(*this, width, out);
      return Status::Ok();
    case DType::kFP64:
      ScatterAdd<double>(*this, width, out);
      return Status::Ok();
    default:
      return InvalidArgument(std::string("sparse rows of ") +
                             DTypeName(value.dtype()) + " are not supported");
  }
}

}  // namespace parex
