// Per-thread scratch for the im2col columns of the convolution kernels
// (conv2d, depthwise_conv2d, conv2d_transpose, conv3d). It only grows, so
// steady-state steps reuse the previous step's memory instead of allocating
// (STYLE rule 6); one buffer per element type and thread, shared by the ops
// a thread runs one after another.
#pragma once

#include <cstdint>
#include <new>
#include <vector>

#include "base/checked_math.h"
#include "kernels/allocator.h"

namespace parex::cpu {

// Room for rows * cols elements of T; nullptr when that would exceed the
// allocation limit (kernels/allocator.h) or the system refuses it (the
// caller then fails with ResourceExhausted).
template <typename T>
T* ColumnScratch(int64_t rows, int64_t cols) {
  thread_local std::vector<T> buffer;
  int64_t need = 0;
  if (!CheckedMul(rows, cols, &need) ||
      static_cast<uint64_t>(need) > AllocationLimit() / sizeof(T)) {
    return nullptr;
  }
  if (buffer.size() < static_cast<size_t>(need)) {
    try {
      buffer.resize(static_cast<size_t>(need));
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  return buffer.data();
}

}  // namespace parex::cpu
