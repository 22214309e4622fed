#include "kernels/tensor.h"

#include "kernels/allocator.h"

namespace parex {

Buffer::Buffer(Allocator* allocator, size_t size)
    : allocator_(allocator), data_(allocator->Allocate(size)), size_(size) {}

Buffer::~Buffer() { allocator_->Free(data_, size_); }

Place Buffer::place() const { return allocator_->place(); }

Tensor::Tensor(DType dtype, const Dims& dims, Place place) {
  Allocate(dtype, dims, place);
}

void Tensor::Allocate(DType dtype, const Dims& dims, Place place) {
  for (int64_t d : dims) {
    PAREX_CHECK(d >= 0, "Tensor::Allocate with unknown extent " +
                            DimsToString(dims));
  }
  size_t need = static_cast<size_t>(Numel(dims)) * SizeOf(dtype);
  // Every CPU place is host memory: a buffer of cpu:0 serves cpu:1 (an
  // in-place op of place 1 on a tensor copied from place 0 keeps its data).
  const bool same_memory =
      place_ == place || (place_.is_cpu() && place.is_cpu());
  bool keep = buffer_ != nullptr && same_memory &&
              buffer_->size() >= offset_ + need;
  if (!keep) {
    buffer_ = need > 0 ? std::make_shared<Buffer>(GetAllocator(place), need)
                       : nullptr;
    offset_ = 0;
    place_ = place;
  }
  dtype_ = dtype;
  dims_ = dims;
}

void Tensor::Reshape(const Dims& dims) {
  PAREX_CHECK(Numel(dims) == numel(), "Reshape " + DimsToString(dims_) +
                                          " to " + DimsToString(dims));
  dims_ = dims;
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  PAREX_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= dims_[0],
              "Slice [" + std::to_string(begin) + "," + std::to_string(end) +
                  ") of " + DimsToString(dims_));
  Tensor out = *this;
  out.dims_[0] = end - begin;
  out.lod_.clear();
  int64_t row = dims_[0] == 0 ? 0 : numel() / dims_[0];
  out.offset_ = offset_ + static_cast<size_t>(begin * row) * SizeOf(dtype_);
  return out;
}

Tensor Tensor::Clone() const {
  PAREX_CHECK(place_.is_cpu(), "Tensor::Clone of a " + place_.ToString() +
                                   " tensor; copy through its DeviceContext");
  Tensor out(dtype_, dims_, place_);
  if (bytes() > 0) std::memcpy(out.raw_data(), raw_data(), bytes());
  out.lod_ = lod_;
  return out;
}

std::string Tensor::DebugString() const {
  return std::string(DTypeName(dtype_)) + DimsToString(dims_) + "@" +
         place_.ToString();
}

}  // namespace parex
