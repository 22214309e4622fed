#include "kernels/tensor.h"

#include "base/checked_math.h"
#include "kernels/allocator.h"

namespace parex {

std::shared_ptr<Buffer> Buffer::Make(Allocator* allocator, size_t size) {
  void* data = allocator->Allocate(size);
  if (data == nullptr && size > 0) return nullptr;
  return std::make_shared<Buffer>(allocator, data, size);
}

Buffer::Buffer(Allocator* allocator, void* data, size_t size)
    : allocator_(allocator), data_(data), size_(size) {}

Buffer::~Buffer() { allocator_->Free(data_, size_); }

Place Buffer::place() const { return allocator_->place(); }

Tensor::Tensor(DType dtype, const Dims& dims, Place place) {
  Allocate(dtype, dims, place);
}

void Tensor::Allocate(DType dtype, const Dims& dims, Place place) {
  Status s = TryAllocate(dtype, dims, place);
  PAREX_CHECK(s.ok(), "Tensor::Allocate: " + s.message());
}

Status Tensor::TryAllocate(DType dtype, const Dims& dims, Place place) {
  return AllocateIn(dtype, dims, place, nullptr);
}

Status Tensor::TryAllocateFrom(Allocator* allocator, DType dtype,
                               const Dims& dims) {
  PAREX_CHECK(allocator != nullptr, "Tensor::TryAllocateFrom: no allocator");
  return AllocateIn(dtype, dims, allocator->place(), allocator);
}

Status Tensor::TryCopyFrom(Allocator* allocator, const Tensor& src) {
  Tensor copy;
  PAREX_RETURN_IF_ERROR(
      copy.TryAllocateFrom(allocator, src.dtype(), src.dims()));
  if (src.bytes() > 0)
    std::memcpy(copy.raw_data(), src.raw_data(), src.bytes());
  copy.set_lod(src.lod());
  *this = std::move(copy);
  return Status::Ok();
}

// `allocator` null: the place's own (GetAllocator).
Status Tensor::AllocateIn(DType dtype, const Dims& dims, Place place,
                          Allocator* allocator) {
  // The steady step calls this for every output of every op: the checks
  // build no strings unless they fail.
  auto what = [&] {
    return std::string(DTypeName(dtype)) + DimsToString(dims);
  };
  const int64_t numel = Numel(dims);
  if (numel < 0 || numel > kMaxNumel || dims.size() > kMaxRank) {
    PAREX_RETURN_IF_ERROR(CheckedNumel(dims, what()).status());
  }
  uint64_t bytes = 0;
  if (!CheckedMul(static_cast<uint64_t>(numel), uint64_t{SizeOf(dtype)},
                  &bytes) ||
      bytes > kMaxTensorBytes) {
    PAREX_RETURN_IF_ERROR(CheckedBytes(numel, SizeOf(dtype), what()).status());
  }
  const size_t need = static_cast<size_t>(bytes);
  // Every CPU place is host memory: a buffer of cpu:0 serves cpu:1 (an
  // in-place op of place 1 on a tensor copied from place 0 keeps its data);
  // the places sharing a GPU share its memory likewise.
  const bool same_memory =
      allocator == nullptr
          ? SameMemory(place_, place)
          : buffer_ != nullptr && buffer_->allocator() == allocator;
  bool keep =
      buffer_ != nullptr && same_memory && buffer_->size() >= offset_ + need;
  if (!keep) {
    std::shared_ptr<Buffer> buffer;
    if (need > 0) {
      buffer = Buffer::Make(
          allocator != nullptr ? allocator : GetAllocator(place), need);
      if (buffer == nullptr) {
        return ResourceExhausted("cannot allocate " + std::to_string(need) +
                                 " bytes for " + what() + " on " +
                                 place.ToString() + " (limit " +
                                 std::to_string(AllocationLimit()) +
                                 " bytes, PAREX_MAX_MEMORY_BYTES)");
      }
    }
    buffer_ = std::move(buffer);
    offset_ = 0;
    place_ = place;
  }
  dtype_ = dtype;
  dims_ = dims;
  return Status::Ok();
}

void Tensor::Reshape(const Dims& dims) {
  PAREX_CHECK(Numel(dims) == numel(),
              "Reshape " + DimsToString(dims_) + " to " + DimsToString(dims));
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

void Tensor::ViewElements(const Tensor& src, int64_t begin, int64_t end) {
  PAREX_CHECK(0 <= begin && begin <= end && end <= src.numel(),
              "ViewElements [" + std::to_string(begin) + "," +
                  std::to_string(end) + ") of " + DimsToString(src.dims_));
  buffer_ = src.buffer_;
  offset_ = src.offset_ + static_cast<size_t>(begin) * SizeOf(src.dtype_);
  dims_.resize(1);
  dims_[0] = end - begin;
  dtype_ = src.dtype_;
  place_ = src.place_;
  lod_.clear();
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
