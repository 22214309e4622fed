// Channels-last (NHWC) convolution and pooling, as Paddle 2.x programs write
// them (`nn.Conv2D(..., data_format="NHWC")`): parex runs such an op as its
// channels-first (NCHW) form between two moves of the channel axis. This
// file holds the shape side: which ops and slots move, an NCHW view of the
// op, and the shape rule wrapper; kernels/channels_last.h moves the data.
#pragma once

#include <memory>
#include <vector>

#include "base/dims.h"
#include "graph/ir/op_schema.h"
#include "graph/ir/program.h"

namespace parex {

// The layout attribute, its channels-last and channels-first values, and
// the slots whose channel axis moves (rank 3 and up: the last axis to
// position 1 and back).
struct ChannelsLastSlots {
  const char* attr;
  const char* channels_last;   // "NHWC", "NDHWC"
  const char* channels_first;  // "NCHW", "NCDHW"
  std::vector<const char*> inputs;
  std::vector<const char*> outputs;
  bool Moves(std::string_view slot, bool input) const;
};

// The op's slots when it runs channels-last (its layout attribute says so;
// conv2d, depthwise_conv2d, conv2d_transpose, pool2d, nearest and bilinear
// interp_v2, pixel_shuffle, prelu in NHWC; conv3d, pool3d, pad3d in NDHWC;
// and their gradient ops), else nullptr.
const ChannelsLastSlots* ChannelsLastOf(const OpDesc& op);

// [N, H, W, C] -> [N, C, H, W] (any rank from 3: [N, ..., C] -> [N, C,
// ...]) and back; ranks below 3 unchanged.
Dims ToChannelsFirst(const Dims& d);
Dims ToChannelsLast(const Dims& d);

// A copy of a channels-last op whose layout attribute says NCHW (same type,
// slots, label).
class ChannelsFirstOp {
 public:
  ChannelsFirstOp(const OpDesc& op, const ChannelsLastSlots& slots);
  const OpDesc& op() const { return *desc_; }

 private:
  std::unique_ptr<proto::OpDesc> proto_;
  std::unique_ptr<OpDesc> desc_;
};

// `nchw` for channels-first ops; for a channels-last one, `nchw` over an
// NCHW view of it (moved input dims, the NCHW attribute) whose output dims
// move back.
InferShapeFn WithChannelsLast(InferShapeFn nchw);

}  // namespace parex
