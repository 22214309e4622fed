// Tensor: a typed, shaped view of a buffer on one place.
//
// A Tensor shares its Buffer with copies of it (shallow, like Paddle's
// LoDTensor); `Clone` makes a deep copy. `Allocate` keeps the current buffer
// when it is large enough and in the same memory (every CPU place is host
// memory, so a tensor keeps its buffer across CPU place ids), so ops that write
// the same variable step after step reuse their memory (and in-place ops, whose
// output is their input, keep their data). Thread-safety: a Tensor object is
// not synchronised; distinct Tensors may be used concurrently even when they
// share a buffer, if the data races are excluded by the caller (the executor's
// dependency order).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/dims.h"
#include "base/dtype.h"
#include "base/place.h"
#include "base/status.h"

namespace parex {

class Allocator;

// Memory from an Allocator, returned to it on destruction.
class Buffer {
 public:
  // The buffer, or nullptr when the allocator cannot give `size` bytes.
  static std::shared_ptr<Buffer> Make(Allocator* allocator, size_t size);
  Buffer(Allocator* allocator, void* data, size_t size);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  Place place() const;
  Allocator* allocator() const { return allocator_; }

 private:
  Allocator* allocator_;
  void* data_;
  size_t size_;
};

using LoD = std::vector<std::vector<uint64_t>>;

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialised tensor.
  Tensor(DType dtype, const Dims& dims, Place place = Place::CPU());

  // Makes this tensor `dims` of `dtype` on `place`, keeping the buffer when it
  // is on that place and large enough; contents are unspecified afterwards
  // unless the buffer was kept.
  // REQUIRES: no extent of `dims` is negative and the memory can be had
  // (checked: for sizes parex itself chose). Sizes that come from a file, a
  // feed or shape inference go through TryAllocate.
  void Allocate(DType dtype, const Dims& dims, Place place = Place::CPU());
  // Allocate, or OutOfRange for a negative extent or a size beyond
  // base/checked_math.h's bounds, ResourceExhausted when the place's
  // allocator cannot give the bytes; the message names dims, bytes and place
  // (callers add the variable). The tensor is unchanged on error.
  Status TryAllocate(DType dtype, const Dims& dims, Place place = Place::CPU());
  // TryAllocate on `allocator`'s place from that allocator (a device
  // context's host_allocator: pinned host memory a device copies from
  // directly); the buffer is kept only when it came from `allocator`.
  Status TryAllocateFrom(Allocator* allocator, DType dtype, const Dims& dims);
  // This tensor becomes a copy of host tensor `src` (dtype, dims, LoD and
  // data) in memory from `allocator` (a feed remade where a device copies
  // from it directly). Errors as TryAllocateFrom's; unchanged on error.
  Status TryCopyFrom(Allocator* allocator, const Tensor& src);

  bool initialized() const { return buffer_ != nullptr || numel() == 0; }
  bool defined() const { return dtype_ != DType::kUndefined; }
  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  int64_t dim(int i) const { return dims_[i]; }
  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t numel() const { return Numel(dims_); }
  // Saturates at SIZE_MAX for a shape whose size overflows (no allocated
  // tensor has one: TryAllocate refuses it).
  size_t bytes() const {
    size_t b = 0;
    if (numel() < 0 || __builtin_mul_overflow(static_cast<size_t>(numel()),
                                              SizeOf(dtype_), &b)) {
      return SIZE_MAX;
    }
    return b;
  }
  Place place() const { return place_; }
  // The allocator of the tensor's buffer; null without one.
  const Allocator* allocator() const {
    return buffer_ ? buffer_->allocator() : nullptr;
  }
  const LoD& lod() const { return lod_; }
  void set_lod(LoD lod) { lod_ = std::move(lod); }

  // Changes the dims without touching the data.
  // REQUIRES: the element count stays the same.
  void Reshape(const Dims& dims);

  void* raw_data() {
    return buffer_ ? static_cast<char*>(buffer_->data()) + offset_ : nullptr;
  }
  const void* raw_data() const {
    return buffer_ ? static_cast<const char*>(buffer_->data()) + offset_
                   : nullptr;
  }
  // REQUIRES: dtype() == DTypeOf<T>() (checked).
  template <typename T>
  T* data() {
    CheckType(DTypeOf<T>());
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    CheckType(DTypeOf<T>());
    return static_cast<const T*>(raw_data());
  }

  // Rows [begin, end) along dim 0, sharing this tensor's buffer.
  // REQUIRES: rank() >= 1 and 0 <= begin <= end <= dim(0).
  Tensor Slice(int64_t begin, int64_t end) const;
  // Makes this tensor elements [begin, end) of `src` in row-major order, as
  // a rank-1 tensor sharing src's buffer (an optimizer's slice, issue 13).
  // Reuses this tensor's dims storage, so a view refreshed every step
  // allocates nothing.
  // REQUIRES: 0 <= begin <= end <= src.numel().
  void ViewElements(const Tensor& src, int64_t begin, int64_t end);
  // A deep copy on the same place (CPU; other places copy through their
  // DeviceContext).
  Tensor Clone() const;
  // Shares `other`'s buffer, dims and dtype.
  void ShareDataWith(const Tensor& other) { *this = other; }
  // Tensors (this one included) holding this tensor's buffer; 0 without one.
  long buffer_holders() const { return buffer_ ? buffer_.use_count() : 0; }
  bool SharesBufferWith(const Tensor& other) const {
    return buffer_ != nullptr && buffer_ == other.buffer_;
  }

  // "fp32[64,784]@cpu:0"
  std::string DebugString() const;

 private:
  Status AllocateIn(DType dtype, const Dims& dims, Place place,
                    Allocator* allocator);
  void CheckType(DType want) const {
    PAREX_CHECK(dtype_ == want, std::string("tensor is ") + DTypeName(dtype_) +
                                    ", accessed as " + DTypeName(want));
  }

  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;  // bytes from buffer start
  Dims dims_;
  DType dtype_ = DType::kUndefined;
  Place place_ = Place::CPU();
  LoD lod_;
};

// Builds a CPU tensor of T from values (tests, feeds).
template <typename T>
Tensor MakeTensor(const Dims& dims, const std::vector<T>& values) {
  Tensor t(DTypeOf<T>(), dims);
  PAREX_CHECK(static_cast<int64_t>(values.size()) == t.numel(),
              "MakeTensor: value count does not match dims");
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), t.bytes());
  return t;
}

// The elements of a CPU tensor as a vector of T.
template <typename T>
std::vector<T> ToVector(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

}  // namespace parex
