#include "graph/ir/spec/channels_last.h"

#include <string>
#include <utility>

namespace parex {
namespace {

const ChannelsLastSlots kConv = {
    "data_format", {"Input", "ResidualData"}, {"Output"}};
const ChannelsLastSlots kConvGrad = {
    "data_format", {"Input", "Output@GRAD"}, {"Input@GRAD"}};
const ChannelsLastSlots kPool = {"data_format", {"X"}, {"Out"}};
const ChannelsLastSlots kInterp = {"data_layout", {"X"}, {"Out"}};
const ChannelsLastSlots kInterpGrad = {
    "data_layout", {"X", "Out@GRAD"}, {"X@GRAD"}};
const ChannelsLastSlots kPoolGrad = {
    "data_format", {"X", "Out", "Out@GRAD"}, {"X@GRAD"}};

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
  const std::string& type = op.type();
  const ChannelsLastSlots* slots = nullptr;
  if (type == "conv2d" || type == "depthwise_conv2d" ||
      type == "conv2d_transpose") {
    slots = &kConv;
  }
  if (type == "conv2d_grad" || type == "depthwise_conv2d_grad" ||
      type == "conv2d_transpose_grad") {
    slots = &kConvGrad;
  }
  if (type == "nearest_interp_v2" || type == "bilinear_interp_v2") {
    slots = &kInterp;
  }
  if (type == "nearest_interp_v2_grad" || type == "bilinear_interp_v2_grad") {
    slots = &kInterpGrad;
  }
  if (type == "pool2d") slots = &kPool;
  if (type == "pool2d_grad") slots = &kPoolGrad;
  if (slots == nullptr) return nullptr;
  StatusOr<std::string> layout = op.GetAttr<std::string>(slots->attr);
  return layout.ok() && *layout == "NHWC" ? slots : nullptr;
}

Dims ToChannelsFirst(const Dims& d) {
  if (d.size() != 4) return d;
  return {d[0], d[3], d[1], d[2]};
}

Dims ToChannelsLast(const Dims& d) {
  if (d.size() != 4) return d;
  return {d[0], d[2], d[3], d[1]};
}

ChannelsFirstOp::ChannelsFirstOp(const OpDesc& op,
                                 const ChannelsLastSlots& slots)
    : proto_(std::make_unique<proto::OpDesc>(op.proto())),
      desc_(std::make_unique<OpDesc>(proto_.get(), op.block_idx(), op.index(),
                                     op.block())) {
  desc_->SetAttr<std::string>(slots.attr, "NCHW");
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
