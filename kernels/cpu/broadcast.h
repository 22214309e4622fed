// Index maps between a dense row-major tensor ("full") and a smaller operand
// that is broadcast over some of its dims ("small"). Fluid's elementwise ops
// pair X (full) with Y (small); reductions pair X (full) with Out (small,
// the reduced dims broadcast); their gradients walk the same maps.
//
// A BroadcastMap is built in O(rank) on the stack and allocates nothing, so
// kernels may build one per call.
#pragma once

#include <cstdint>

#include "base/dims.h"

namespace parex::cpu {

class BroadcastMap {
 public:
  // Most alternations between broadcast and non-broadcast runs of dims a map
  // can hold (Paddle tensors have at most 9 dims).
  static constexpr int kMaxRank = 9;

  // Builds the map for a full tensor of dims `full` and a small operand whose
  // extent along full dim d is small_extents[d], either full[d] or 1.
  // Returns false (leaving the map unusable) when an extent is neither, or
  // when the dims alternate more than kMaxRank times.
  bool Init(const Dims& full, const int64_t* small_extents) {
    rank_ = 0;
    full_numel_ = 1;
    small_numel_ = 1;
    bool broadcast[kMaxRank];
    for (size_t d = 0; d < full.size(); ++d) {
      const int64_t e = full[d];
      const int64_t s = small_extents[d];
      if (e < 0 || (s != e && s != 1)) return false;
      full_numel_ *= e;
      small_numel_ *= s;
      if (e == 1) continue;  // contributes no index
      const bool b = s == 1;
      if (rank_ > 0 && broadcast[rank_ - 1] == b) {
        extents_[rank_ - 1] *= e;
        continue;
      }
      if (rank_ == kMaxRank) return false;
      broadcast[rank_] = b;
      extents_[rank_++] = e;
    }
    int64_t stride = 1;
    for (int d = rank_ - 1; d >= 0; --d) {
      small_strides_[d] = broadcast[d] ? 0 : stride;
      if (!broadcast[d]) stride *= extents_[d];
    }
    return true;
  }

  int64_t full_numel() const { return full_numel_; }
  int64_t small_numel() const { return small_numel_; }

  // Calls f(full_index, small_index) for every element of the full tensor,
  // in row-major order.
  // REQUIRES: Init returned true.
  template <typename F>
  void ForEach(F&& f) const {
    if (full_numel_ == 0) return;
    if (rank_ == 0) {
      f(int64_t{0}, int64_t{0});
      return;
    }
    int64_t index[kMaxRank] = {};
    const int inner = rank_ - 1;
    const int64_t inner_extent = extents_[inner];
    const int64_t inner_stride = small_strides_[inner];
    int64_t full = 0;
    int64_t small = 0;
    while (true) {
      for (int64_t j = 0; j < inner_extent; ++j) {
        f(full++, small + j * inner_stride);
      }
      int d = inner - 1;
      for (; d >= 0; --d) {
        small += small_strides_[d];
        if (++index[d] < extents_[d]) break;
        small -= small_strides_[d] * extents_[d];
        index[d] = 0;
      }
      if (d < 0) return;
    }
  }

 private:
  // Merged dims: adjacent full dims that are all broadcast or all not are one.
  int rank_ = 0;
  int64_t extents_[kMaxRank] = {};
  int64_t small_strides_[kMaxRank] = {};  // 0 where the small operand repeats
  int64_t full_numel_ = 0;
  int64_t small_numel_ = 0;
};

// Fluid's elementwise broadcasting of Y into X: Y's dims, without trailing
// 1s, line up with X's dims starting at `axis` (-1: rank(X) - rank(Y)); each
// is X's extent or 1. Writes Y's extent along every X dim into
// y_extents[0..rank(X)) and returns true, or returns false when Y does not
// fit. Graph-side shape inference (graph/ir/ops/elementwise_ops.cc) applies the
// same rule to declared dims, where extents may be unknown.
// REQUIRES: y_extents has room for x.size() values.
inline bool FluidElementwiseExtents(const Dims& x, const Dims& y, int axis,
                                    int64_t* y_extents) {
  const int x_rank = static_cast<int>(x.size());
  const int y_rank = static_cast<int>(y.size());
  int trimmed = y_rank;
  while (trimmed > 0 && y[trimmed - 1] == 1) --trimmed;
  if (axis == -1) axis = x_rank - y_rank;
  if (trimmed == 0) axis = 0;  // Y holds one value: it fits anywhere
  if (axis < 0 || axis + trimmed > x_rank) return false;
  for (int d = 0; d < x_rank; ++d) y_extents[d] = 1;
  for (int i = 0; i < trimmed; ++i) {
    if (y[i] != x[axis + i] && y[i] != 1) return false;
    y_extents[axis + i] = y[i];
  }
  return true;
}

}  // namespace parex::cpu
