// The geometry of sliding-window ops over NC + 2 or 3 spatial dims (conv2d,
// depthwise_conv2d, conv2d_transpose, conv3d, pool2d, pool3d), as their
// schemas check and infer it. Per spatial dim (Paddle's
// UpdatePadding[AndDilation] and ConvOutputSize / PoolOutputSize):
//   paddings: `rank` entries (each used before and after) or 2 * `rank`
//     entries {before, after} per dim;
//   padding_algorithm "SAME": out = ceil(in / stride), the padding sum
//     max((out-1)*stride + window - in, 0) split with the smaller half
//     first, dilation 1; "VALID": no padding; "EXPLICIT": as given;
//   conv: out = (in + pad0 + pad1 - (dilation*(k-1)+1)) / stride + 1;
//   pool: out = (in + pad0 + pad1 - k) / stride + 1, rounding up with
//     ceil_mode.
// kernels/cpu/spatial/im2col.h repeats the padding resolution for the kernels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ir/op_schema.h"

namespace parex {

std::string IntsToString(const std::vector<int>& v);

// An attribute of `n` positive ints ({h, w} or {d, h, w}).
StatusOr<std::vector<int>> PositiveIntsAttr(const ShapeContext& ctx,
                                            const std::string& name, int n);

// Unimplemented unless the attribute `attr` (data_format / data_layout) is
// `channels_first` ("NCHW" / "NCDHW") or "AnyLayout".
Status CheckChannelsFirst(const ShapeContext& ctx, const std::string& attr,
                          const std::string& channels_first);

// The spatial geometry of one window op, per spatial dim.
struct WindowSpec {
  int rank = 2;          // spatial dims: 2 (h, w) or 3 (d, h, w)
  int64_t in[3] = {};    // input extents; -1 unknown
  int64_t size[3] = {};  // kernel / pool window, undilated
  std::vector<int> strides;
  std::vector<int> dilations;  // rank entries (1s for pooling)
  std::vector<int> paddings;   // 2 * rank: {before, after} per dim
};

// Expands and resolves w->paddings (attribute "paddings") under the
// padding_algorithm attribute. REQUIRES: rank, in, size, strides and
// dilations are set.
Status ResolvePaddings(const ShapeContext& ctx, WindowSpec* w);

// Output extent of spatial dim i; -1 when the input extent is unknown; an
// error when the window does not fit.
StatusOr<int64_t> OutExtent(const ShapeContext& ctx, const WindowSpec& w, int i,
                            bool ceil_mode);

// pad3d's paddings {left, right, top, bottom, front, back}: the Paddings
// tensor (run time only) or the attribute; six entries in [0, 2^31).
StatusOr<std::vector<int>> Pad3dPaddings(const ShapeContext& ctx);

}  // namespace parex
