// Index maps between a dense row-major tensor ("full") and smaller operands
// broadcast over some of its dims. A BroadcastMap pairs the full tensor with
// one operand: the elementwise ops' Out (= X) with Y, the usual case;
// reductions' X with Out (the reduced dims broadcast). A BinaryBroadcastMap
// pairs it with two: the elementwise ops' Out with X and Y when both
// broadcast (numpy's rule, graph/ir/spec/broadcast_spec.h). Gradients walk the
// same maps.
//
// Maps are built in O(rank) on the stack and allocate nothing, so kernels may
// build one per call.
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
    return Init(static_cast<int>(full.size()), full.data(), small_extents);
  }
  // The same over full[0..rank).
  bool Init(int rank, const int64_t* full, const int64_t* small_extents) {
    rank_ = 0;
    full_numel_ = 1;
    small_numel_ = 1;
    bool broadcast[kMaxRank];
    for (int d = 0; d < rank; ++d) {
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

// Two operands a and b broadcast over a full tensor (each one's extent along
// a full dim is the full extent or 1).
class BinaryBroadcastMap {
 public:
  static constexpr int kMaxRank = BroadcastMap::kMaxRank;

  // Returns false (leaving the map unusable) when an extent of a or b is
  // neither the full one nor 1, or when rank is above kMaxRank.
  bool Init(int rank, const int64_t* full, const int64_t* a_extents,
            const int64_t* b_extents) {
    if (rank > kMaxRank) return false;
    rank_ = 0;
    full_numel_ = 1;
    int kind[kMaxRank];  // bit 0: a repeats along the dim, bit 1: b does
    for (int d = 0; d < rank; ++d) {
      const int64_t e = full[d];
      const int64_t a = a_extents[d], b = b_extents[d];
      if (e < 0 || (a != e && a != 1) || (b != e && b != 1)) return false;
      full_numel_ *= e;
      if (e == 1) continue;  // contributes no index
      const int k = (a == 1 ? 1 : 0) | (b == 1 ? 2 : 0);
      if (rank_ > 0 && kind[rank_ - 1] == k) {
        extents_[rank_ - 1] *= e;
        continue;
      }
      kind[rank_] = k;
      extents_[rank_++] = e;
    }
    int64_t a_stride = 1, b_stride = 1;
    for (int d = rank_ - 1; d >= 0; --d) {
      a_strides_[d] = kind[d] & 1 ? 0 : a_stride;
      b_strides_[d] = kind[d] & 2 ? 0 : b_stride;
      if (!(kind[d] & 1)) a_stride *= extents_[d];
      if (!(kind[d] & 2)) b_stride *= extents_[d];
    }
    return true;
  }

  int64_t full_numel() const { return full_numel_; }

  // Calls f(full_index, a_index, b_index) for every element of the full
  // tensor, in row-major order.
  // REQUIRES: Init returned true.
  template <typename F>
  void ForEach(F&& f) const {
    if (full_numel_ == 0) return;
    if (rank_ == 0) {
      f(int64_t{0}, int64_t{0}, int64_t{0});
      return;
    }
    int64_t index[kMaxRank] = {};
    const int inner = rank_ - 1;
    const int64_t inner_extent = extents_[inner];
    const int64_t a_inner = a_strides_[inner];
    const int64_t b_inner = b_strides_[inner];
    int64_t full = 0, a = 0, b = 0;
    while (true) {
      for (int64_t j = 0; j < inner_extent; ++j) {
        f(full++, a + j * a_inner, b + j * b_inner);
      }
      int d = inner - 1;
      for (; d >= 0; --d) {
        a += a_strides_[d];
        b += b_strides_[d];
        if (++index[d] < extents_[d]) break;
        a -= a_strides_[d] * extents_[d];
        b -= b_strides_[d] * extents_[d];
        index[d] = 0;
      }
      if (d < 0) return;
    }
  }

 private:
  // Merged dims: adjacent full dims along which a and b repeat alike.
  int rank_ = 0;
  int64_t extents_[kMaxRank] = {};
  int64_t a_strides_[kMaxRank] = {};  // 0 where a repeats
  int64_t b_strides_[kMaxRank] = {};  // 0 where b repeats
  int64_t full_numel_ = 0;
};

}  // namespace parex::cpu
