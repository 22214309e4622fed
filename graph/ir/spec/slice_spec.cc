#include "graph/ir/spec/slice_spec.h"

#include <algorithm>
#include <string>

namespace parex {
namespace {

StatusOr<int> Axis(int axis, int rank) {
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return InvalidArgument("axis " + std::to_string(axis) +
                           " is out of range for rank " + std::to_string(rank));
  }
  return a;
}

}  // namespace

StatusOr<SliceSpec> ComputeSlice(const Dims& in, const std::vector<int>& axes,
                                 const std::vector<int64_t>& starts,
                                 const std::vector<int64_t>& ends,
                                 const std::vector<int>& decrease_axis) {
  if (starts.size() != axes.size() || ends.size() != axes.size()) {
    return InvalidArgument(
        "axes, starts and ends have " + std::to_string(axes.size()) + ", " +
        std::to_string(starts.size()) + " and " + std::to_string(ends.size()) +
        " entries; they must have as many");
  }
  const int rank = static_cast<int>(in.size());
  SliceSpec spec;
  spec.begin.assign(in.size(), 0);
  spec.out = in;
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    PAREX_ASSIGN_OR_RETURN(int a, Axis(axes[i], rank));
    if (seen[a])
      return InvalidArgument("axis " + std::to_string(axes[i]) +
                             " is sliced twice");
    seen[a] = true;
    const int64_t extent = in[a];
    if (extent < 0) continue;  // unknown at compile time: stays unknown
    auto clamp = [extent](int64_t v) {
      if (v < 0) v += extent;
      return std::min(std::max<int64_t>(v, 0), extent);
    };
    const int64_t b = clamp(starts[i]), e = clamp(ends[i]);
    if (e < b) {  // Paddle 2.6 refuses it too
      return InvalidArgument("on axis " + std::to_string(a) + ", end " +
                             std::to_string(ends[i]) + " comes before start " +
                             std::to_string(starts[i]) + " (extent " +
                             std::to_string(extent) + ")");
    }
    spec.begin[a] = b;
    spec.out[a] = e - b;
  }
  spec.decreased = spec.out;
  if (!decrease_axis.empty()) {
    std::vector<bool> drop(in.size(), false);
    for (int d : decrease_axis) {
      PAREX_ASSIGN_OR_RETURN(int a, Axis(d, rank));
      if (spec.out[a] >= 0 && spec.out[a] != 1) {
        return InvalidArgument("decrease_axis " + std::to_string(d) +
                               " has extent " + std::to_string(spec.out[a]) +
                               " after slicing, not 1");
      }
      drop[a] = true;
    }
    spec.decreased.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      if (!drop[i]) spec.decreased.push_back(spec.out[i]);
    }
    if (spec.decreased.empty()) spec.decreased = {1};
  }
  return spec;
}

StatusOr<SliceSpec> SliceSpecOf(const ShapeContext& ctx, const Dims& in) {
  PAREX_ASSIGN_OR_RETURN(
      std::vector<int64_t> starts,
      IntsFromInputsOrAttr(ctx, kSliceStarts,
                           ctx.Attr<std::vector<int64_t>>("starts")));
  PAREX_ASSIGN_OR_RETURN(
      std::vector<int64_t> ends,
      IntsFromInputsOrAttr(ctx, kSliceEnds,
                           ctx.Attr<std::vector<int64_t>>("ends")));
  StatusOr<SliceSpec> spec =
      ComputeSlice(in, ctx.Attr<std::vector<int>>("axes"), starts, ends,
                   ctx.Attr<std::vector<int>>("decrease_axis"));
  if (!spec.ok()) return ctx.Error(spec.status().message());
  return spec;
}

}  // namespace parex
