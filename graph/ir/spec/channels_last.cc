#include "graph/ir/spec/channels_last.h"

#include <string>
#include <unordered_map>
#include <utility>

namespace parex {
namespace {

const ChannelsLastSlots kConv = {
    "data_format", "NHWC", "NCHW", {"Input", "ResidualData"}, {"Output"}};
const ChannelsLastSlots kConvGrad = {
    "data_format", "NHWC", "NCHW", {"Input", "Output@GRAD"}, {"Input@GRAD"}};
const ChannelsLastSlots kPool = {"data_format", "NHWC", "NCHW", {"X"}, {"Out"}};
const ChannelsLastSlots kInterp = {
    "data_layout", "NHWC", "NCHW", {"X"}, {"Out"}};
const ChannelsLastSlots kInterpGrad = {
    "data_layout", "NHWC", "NCHW", {"X", "Out@GRAD"}, {"X@GRAD"}};
const ChannelsLastSlots kPoolGrad = {
    "data_format", "NHWC", "NCHW", {"X", "Out", "Out@GRAD"}, {"X@GRAD"}};
const ChannelsLastSlots kPixelShuffle = {
    "data_format", "NHWC", "NCHW", {"X"}, {"Out"}};
const ChannelsLastSlots kPixelShuffleGrad = {
    "data_format", "NHWC", "NCHW", {"Out@GRAD"}, {"X@GRAD"}};
// Alpha moves too: [1, 1, 1, C] (channel) and [1, H, W, C] (element) are
// channels-last; [C] and [1] have no channel axis to move.
const ChannelsLastSlots kPrelu = {
    "data_format", "NHWC", "NCHW", {"X", "Alpha"}, {"Out"}};
const ChannelsLastSlots kPreluGrad = {"data_format",
                                      "NHWC",
                                      "NCHW",
                                      {"X", "Alpha", "Out@GRAD"},
                                      {"X@GRAD", "Alpha@GRAD"}};
const ChannelsLastSlots kConv3d = {
    "data_format", "NDHWC", "NCDHW", {"Input"}, {"Output"}};
const ChannelsLastSlots kConv3dGrad = {
    "data_format", "NDHWC", "NCDHW", {"Input", "Output@GRAD"}, {"Input@GRAD"}};
const ChannelsLastSlots kPool3d = {
    "data_format", "NDHWC", "NCDHW", {"X"}, {"Out"}};
const ChannelsLastSlots kPool3dGrad = {
    "data_format", "NDHWC", "NCDHW", {"X", "Out", "Out@GRAD"}, {"X@GRAD"}};
const ChannelsLastSlots kPad3d = {
    "data_format", "NDHWC", "NCDHW", {"X"}, {"Out"}};
const ChannelsLastSlots kPad3dGrad = {
    "data_format", "NDHWC", "NCDHW", {"X", "Out@GRAD"}, {"X@GRAD"}};

// A ShapeContext that shows a channels-last op as channels-first.
class ChannelsFirstView : public ShapeContext {
 public:
  ChannelsFirstView(ShapeContext& base, const ChannelsLastSlots& slots)
      : base_(base), slots_(slots), op_(base.op(), slots) {}

  const OpDesc& op() const override { return op_.op(); }
  bool IsRuntime() const override { return base_.IsRuntime(); }
  int InputCount(std::string_view slot) const override {
    return base_.InputCount(slot);
  }
  int OutputCount(std::string_view slot) const override {
    return base_.OutputCount(slot);
  }
  Dims InputDims(std::string_view slot, int i) const override {
    const Dims d = base_.InputDims(slot, i);
    return slots_.Moves(slot, true) ? ToChannelsFirst(d) : d;
  }
  DType InputDType(std::string_view slot, int i) const override {
    return base_.InputDType(slot, i);
  }
  bool InputIsSparse(std::string_view slot, int i) const override {
    return base_.InputIsSparse(slot, i);
  }
  StatusOr<std::vector<double>> InputValues(std::string_view slot,
                                            int i) const override {
    return base_.InputValues(slot, i);
  }
  void SetOutputDims(std::string_view slot, int i, const Dims& dims) override {
    base_.SetOutputDims(
        slot, i, slots_.Moves(slot, false) ? ToChannelsLast(dims) : dims);
  }
  void SetOutputDType(std::string_view slot, int i, DType dtype) override {
    base_.SetOutputDType(slot, i, dtype);
  }

 private:
  ShapeContext& base_;
  const ChannelsLastSlots& slots_;
  ChannelsFirstOp op_;
};

}  // namespace

bool ChannelsLastSlots::Moves(std::string_view slot, bool input) const {
  for (const char* s : input ? inputs : outputs) {
    if (slot == s) return true;
  }
  return false;
}

const ChannelsLastSlots* ChannelsLastOf(const OpDesc& op) {
  static const std::unordered_map<std::string, const ChannelsLastSlots*>
      kTable = {
          {"conv2d", &kConv},
          {"depthwise_conv2d", &kConv},
          {"conv2d_transpose", &kConv},
          {"conv2d_grad", &kConvGrad},
          {"depthwise_conv2d_grad", &kConvGrad},
          {"conv2d_transpose_grad", &kConvGrad},
          {"nearest_interp_v2", &kInterp},
          {"bilinear_interp_v2", &kInterp},
          {"nearest_interp_v2_grad", &kInterpGrad},
          {"bilinear_interp_v2_grad", &kInterpGrad},
          {"pool2d", &kPool},
          {"pool2d_grad", &kPoolGrad},
          {"pixel_shuffle", &kPixelShuffle},
          {"pixel_shuffle_grad", &kPixelShuffleGrad},
          {"prelu", &kPrelu},
          {"prelu_grad", &kPreluGrad},
          {"conv3d", &kConv3d},
          {"conv3d_grad", &kConv3dGrad},
          {"pool3d", &kPool3d},
          {"pool3d_grad", &kPool3dGrad},
          {"pad3d", &kPad3d},
          {"pad3d_grad", &kPad3dGrad},
      };
  const auto it = kTable.find(op.type());
  if (it == kTable.end()) return nullptr;
  const ChannelsLastSlots* slots = it->second;
  StatusOr<std::string> layout = op.GetAttr<std::string>(slots->attr);
  return layout.ok() && *layout == slots->channels_last ? slots : nullptr;
}

Dims ToChannelsFirst(const Dims& d) {
  if (d.size() < 3) return d;
  Dims out = d;
  out[1] = d.back();
  for (size_t i = 2; i < d.size(); ++i) out[i] = d[i - 1];
  return out;
}

Dims ToChannelsLast(const Dims& d) {
  if (d.size() < 3) return d;
  Dims out = d;
  for (size_t i = 1; i + 1 < d.size(); ++i) out[i] = d[i + 1];
  out.back() = d[1];
  return out;
}

ChannelsFirstOp::ChannelsFirstOp(const OpDesc& op,
                                 const ChannelsLastSlots& slots)
    : proto_(std::make_unique<proto::OpDesc>(op.proto())),
      desc_(std::make_unique<OpDesc>(proto_.get(), op.block_idx(), op.index(),
                                     op.block())) {
  desc_->SetAttr<std::string>(slots.attr, slots.channels_first);
}

InferShapeFn WithChannelsLast(InferShapeFn nchw) {
  return [nchw = std::move(nchw)](ShapeContext& ctx) -> Status {
    const ChannelsLastSlots* slots = ChannelsLastOf(ctx.op());
    if (slots == nullptr) return nchw(ctx);
    ChannelsFirstView view(ctx, *slots);
    return nchw(view);
  };
}

}  // namespace parex
