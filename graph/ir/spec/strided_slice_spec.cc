#include "graph/ir/spec/strided_slice_spec.h"

#include <algorithm>
#include <string>

namespace parex {
namespace {

// One axis of `n` elements (n >= 0) sliced from `start` to `end` by
// `stride` (Python's rules, negatives counting from the end): its first
// element and element count.
void SliceAxis(int64_t n, int64_t start, int64_t end, int64_t stride,
               int64_t* first, int64_t* count) {
  int64_t b = start, e = end;
  if (b < 0) b += n;
  if (e < 0) e += n;
  if (stride > 0) {
    b = std::clamp<int64_t>(b, 0, n);
    e = std::clamp<int64_t>(e, 0, n);
    *first = b;
    *count = e > b ? (e - b + stride - 1) / stride : 0;
  } else {
    b = std::clamp<int64_t>(b, 0, std::max<int64_t>(n - 1, 0)) + 1;
    e = std::clamp<int64_t>(e, 0, n) + 1;
    *first = b - 1;
    *count = b > e ? (b - e - stride - 1) / -stride : 0;
    if (n == 0) *count = 0;
  }
}

// s->decreased: s->out without the decrease_axis dims (each of one
// element), [1] when none is left.
Status Decrease(const std::vector<int>& decrease_axis, StridedSliceSpec* s) {
  const int rank = static_cast<int>(s->out.size());
  std::vector<bool> drop(rank, false);
  for (int d : decrease_axis) {
    if (d < -rank || d >= rank) {
      return InvalidArgument("decrease_axis " + std::to_string(d) +
                             " is out of range");
    }
    if (d < 0) d += rank;
    if (s->out[d] != 1 && s->out[d] != -1) {
      return InvalidArgument("decrease_axis " + std::to_string(d) + " has " +
                             std::to_string(s->out[d]) + " elements, not 1");
    }
    drop[d] = true;
  }
  for (int d = 0; d < rank; ++d) {
    if (!drop[d]) s->decreased.push_back(s->out[d]);
  }
  if (s->decreased.empty()) s->decreased.push_back(1);
  return Status::Ok();
}

}  // namespace

StatusOr<StridedSliceSpec> ComputeStridedSlice(
    const Dims& in, const std::vector<int>& axes,
    const std::vector<int>& starts, const std::vector<int>& ends,
    const std::vector<int>& strides, const std::vector<int>& decrease_axis) {
  const int rank = static_cast<int>(in.size());
  if (starts.size() != axes.size() || ends.size() != axes.size() ||
      strides.size() != axes.size()) {
    return InvalidArgument("axes, starts, ends and strides differ in length");
  }
  StridedSliceSpec s;
  s.first.assign(rank, 0);
  s.step.assign(rank, 1);
  s.out = in;
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < axes.size(); ++k) {
    int a = axes[k];
    if (a < -rank || a >= rank) {
      return InvalidArgument("axis " + std::to_string(a) +
                             " is out of range for rank " +
                             std::to_string(rank));
    }
    if (a < 0) a += rank;
    if (seen[a]) return InvalidArgument("axis " + std::to_string(a) + " twice");
    seen[a] = true;
    const int64_t stride = strides[k];
    if (stride == 0) return InvalidArgument("a stride of 0");
    s.step[a] = stride;
    const int64_t n = in[a];
    if (n < 0) {
      s.out[a] = -1;
      continue;
    }
    SliceAxis(n, starts[k], ends[k], stride, &s.first[a], &s.out[a]);
  }
  PAREX_RETURN_IF_ERROR(Decrease(decrease_axis, &s));
  return s;
}

}  // namespace parex
