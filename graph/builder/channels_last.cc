#include "graph/builder/channels_last.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "base/dims.h"
#include "graph/builder/program_uses.h"
#include "graph/ir/place_group.h"

namespace parex {
namespace {

using fusion::AttrOr;
using fusion::Count;
using fusion::IsConv;

const std::vector<int> kToNhwc = {0, 2, 3, 1};
const std::vector<int> kToNchw = {0, 3, 1, 2};

bool LayoutFree(const std::string& type) {
  static const std::set<std::string> kUnary = {
      "relu",  "relu6",        "sigmoid",    "tanh", "hard_swish",
      "swish", "hard_sigmoid", "leaky_relu", "gelu"};
  return kUnary.count(type) != 0;
}

bool SameShapeBinary(const std::string& type) {
  return type == "elementwise_add" || type == "elementwise_sub" ||
         type == "elementwise_mul";
}

class ChannelsLast {
 public:
  ChannelsLast(const Program* program,
               const std::vector<std::string>& fetch_names, bool training)
      : desc_(program->global_block()),
        uses_(fusion::CountUses(*program)),
        fetched_(fetch_names.begin(), fetch_names.end()),
        training_(training) {}

  void Run(proto::BlockDesc* block, int* converted, int* transposes) {
    google::protobuf::RepeatedPtrField<proto::OpDesc> out;
    for (int i = 0; i < block->ops_size(); ++i) {
      // (Training: the shuffle's gradient ops read its XShapes, which would
      // hold the NHWC dims: it stays channels-first there.)
      if (!training_ && ChannelShuffleAt(*block, i)) {
        for (int k = 0; k < 3; ++k) *out.Add() = block->ops(i + k);
        ShuffleLastDim(block, &out);
        *converted += 3;
        i += 2;
        continue;
      }
      proto::OpDesc op = block->ops(i);
      OpDesc view(&op, 0, i);
      serving_ = &block->ops(i);
      TrainingSlots slots;
      if (FlattensOneByOne(view)) {
        ++*converted;  // reads the NHWC tensor as it is: no transpose
        flat_xshapes_.insert(view.FirstOutput("XShape"));
      } else if (Convertible(view)) {
        ToNhwc(&view, block, &out);
        ++*converted;
      } else if (training_ && TrainingConvertible(view, &slots)) {
        SlotsToNhwc(&view, slots, block, &out);
        ++*converted;
      } else {
        ReadAsNchw(&view, block, &out);
      }
      *out.Add() = op;
    }
    *transposes = transposes_;
    block->mutable_ops()->Swap(&out);
  }

 private:
  // A Convertible op made channels-last; its outputs declared NHWC.
  void ToNhwc(OpDesc* view, proto::BlockDesc* block,
              google::protobuf::RepeatedPtrField<proto::OpDesc>* out) {
    if (IsConv(*view)) {
      ConvToNhwc(view, block, out);
    } else if (ChannelAxisOp(*view)) {
      view->SetAttr("axis", 3);
    } else {
      if (view->type() == "pool2d") {
        view->SetAttr("data_format", std::string("NHWC"));
      }
      // Inputs read through their NHWC copies.
      for (const std::string& slot : view->InputSlots()) {
        std::vector<std::string> args = view->Input(slot);
        for (std::string& a : args) {
          if (nhwc_.count(a) == 0 && to_nhwc_.count(a) != 0) {
            a = to_nhwc_.at(a);
          }
        }
        view->SetInput(slot, args);
      }
    }
    for (const std::string& y : view->OutputArgumentNames()) {
      nhwc_.insert(y);
      Permute(block, y);
    }
  }

  // An op that stays channels-first: every NHWC input read as NCHW,
  // through one transpose per var.
  void ReadAsNchw(OpDesc* view, proto::BlockDesc* block,
                  google::protobuf::RepeatedPtrField<proto::OpDesc>* out) {
    for (const std::string& slot : view->InputSlots()) {
      std::vector<std::string> args = view->Input(slot);
      bool changed = false;
      for (std::string& a : args) {
        if (nhwc_.count(a) == 0) continue;
        a = Transposed(a, false, block, out);
        changed = true;
      }
      if (changed) view->SetInput(slot, args);
    }
  }

  // A conv made channels-last: Input and ResidualData (a residual block's
  // shortcut) read NHWC, transposed in where they are not.
  void ConvToNhwc(OpDesc* conv, proto::BlockDesc* block,
                  google::protobuf::RepeatedPtrField<proto::OpDesc>* out) {
    for (const char* slot : {"Input", "ResidualData"}) {
      if (!conv->HasInput(slot)) continue;
      const std::string x = conv->FirstInput(slot);
      if (nhwc_.count(x) == 0) {
        conv->SetInput(slot, {Transposed(x, true, block, out)});
      }
    }
    conv->SetAttr("data_format", std::string("NHWC"));
  }

  // ShuffleNet's channel shuffle of a NHWC tensor x (declared [N, C, H, W]):
  // ops i..i+2 are reshape2 to [B, g, C/g, H, W], transpose2 by
  // [0, 2, 1, 3, 4] and reshape2 to [B, C, H, W] (B -1 or 0, the shapes
  // attributes only), the two intermediates temporaries only the next op
  // reads, the result a plain 4-D var.
  bool ChannelShuffleAt(const proto::BlockDesc& block, int i) const {
    if (i + 2 >= block.ops_size() || block.ops(i).type() != "reshape2") {
      return false;
    }
    proto::OpDesc ops[3] = {block.ops(i), block.ops(i + 1), block.ops(i + 2)};
    OpDesc first(&ops[0], 0, i), swap(&ops[1], 0, i + 1),
        last(&ops[2], 0, i + 2);
    if (first.type() != "reshape2" || swap.type() != "transpose2" ||
        last.type() != "reshape2") {
      return false;
    }
    for (const OpDesc* r : {&first, &last}) {
      if (r->HasInput("Shape") || r->HasInput("ShapeTensor")) return false;
    }
    const std::string x = first.FirstInput("X");
    const std::string grouped = first.FirstOutput("Out");
    const std::string swapped = swap.FirstOutput("Out");
    if (nhwc_.count(x) == 0 || swap.FirstInput("X") != grouped ||
        last.FirstInput("X") != swapped || !Plain4d(last.FirstOutput("Out"))) {
      return false;
    }
    for (const std::string& t : {grouped, swapped}) {
      if (Count(uses_.readers, t) != 1 || Count(uses_.writers, t) != 1 ||
          fetched_.count(t) != 0) {
        return false;
      }
    }
    return ShuffleShapes(first, swap, last);
  }

  // The shuffle's attributes over x's declared [N, C, H, W]: to
  // [B, g, C/g, H, W], by [0, 2, 1, 3, 4], to [B, C, H, W] (B -1 or 0).
  bool ShuffleShapes(const OpDesc& first, const OpDesc& swap,
                     const OpDesc& last) const {
    const VarDesc* xv = desc_.FindVar(first.FirstInput("X"));
    if (xv == nullptr || xv->rank() != 4) return false;
    const Dims d = xv->dims();  // as declared: NCHW
    const std::vector<int> to5 = AttrOr<std::vector<int>>(first, "shape", {});
    const std::vector<int> axis = AttrOr<std::vector<int>>(swap, "axis", {});
    const std::vector<int> to4 = AttrOr<std::vector<int>>(last, "shape", {});
    if (to5.size() != 5 || to4.size() != 4 ||
        axis != std::vector<int>{0, 2, 1, 3, 4}) {
      return false;
    }
    auto batch = [](int b) { return b == -1 || b == 0; };
    const bool known = d[1] > 0 && d[2] > 0 && d[3] > 0;
    const bool grouped = to5[1] > 0 && to5[2] > 0 &&
                         int64_t{to5[1]} * to5[2] == d[1] && to5[3] == d[2] &&
                         to5[4] == d[3];
    const bool back = to4[1] == d[1] && to4[2] == d[2] && to4[3] == d[3];
    return batch(to5[0]) && batch(to4[0]) && known && grouped && back;
  }

  // The shuffle whose three ops `out` ends with, rewritten on NHWC:
  // [B, H, W, g, C/g] -> transpose2 [0, 1, 2, 4, 3] -> [B, H, W, C]. The
  // vars' declared dims (XShape's too) follow.
  void ShuffleLastDim(proto::BlockDesc* block,
                      google::protobuf::RepeatedPtrField<proto::OpDesc>* out) {
    const int n = out->size();
    OpDesc first(out->Mutable(n - 3), 0, 0), swap(out->Mutable(n - 2), 0, 0),
        last(out->Mutable(n - 1), 0, 0);
    const std::vector<int> to5 = *first.GetAttr<std::vector<int>>("shape");
    const std::vector<int> to4 = *last.GetAttr<std::vector<int>>("shape");
    const int g = to5[1], cg = to5[2], h = to5[3], w = to5[4];
    first.SetAttr("shape", std::vector<int>{to5[0], h, w, g, cg});
    swap.SetAttr("axis", std::vector<int>{0, 1, 2, 4, 3});
    last.SetAttr("shape", std::vector<int>{to4[0], h, w, to4[1]});
    const Dims x = desc_.FindVar(first.FirstInput("X"))->dims();
    const int64_t b = x[0];
    SetDims(block, first.FirstOutput("Out"), {b, h, w, g, cg});
    SetDims(block, first.FirstOutput("XShape"), {0, b, h, w, x[1]});
    SetDims(block, swap.FirstOutput("Out"), {b, h, w, cg, g});
    SetDims(block, swap.FirstOutput("XShape"), {0, b, h, w, g, cg});
    SetDims(block, last.FirstOutput("XShape"), {0, b, h, w, cg, g});
    const std::string y = last.FirstOutput("Out");
    nhwc_.insert(y);
    Permute(block, y);
  }

  // Declares `name` (when this block has it) with `dims`.
  static void SetDims(proto::BlockDesc* block, const std::string& name,
                      const Dims& dims) {
    if (name.empty()) return;
    for (auto& var : *block->mutable_vars()) {
      if (var.name() == name) VarDesc(&var).SetDims(dims);
    }
  }

  // A 4-D fp32 tensor var of this block, written once, never fetched.
  bool Plain4d(const std::string& name) const {
    const VarDesc* v = desc_.FindLocalVar(name);
    return v != nullptr && v->is_tensor() && !v->persistable() &&
           v->dtype() == DType::kFP32 && v->rank() == 4 &&
           fetched_.count(name) == 0 && Count(uses_.writers, name) <= 1;
  }

  bool Convertible(const OpDesc& op) const {
    for (const std::string& y : op.OutputArgumentNames()) {
      if (!Plain4d(y)) return false;
    }
    if (ChannelAxisOp(op)) return true;
    if (op.OutputArgumentNames().size() != 1) return false;
    if (IsConv(op)) {
      return AttrOr<std::string>(op, "data_format", "NCHW") != "NHWC" &&
             WideEnough(op) && Plain4dOrFeed(op.FirstInput("Input")) &&
             (!op.HasInput("ResidualData") ||
              Plain4dOrFeed(op.FirstInput("ResidualData")));
    }
    const std::vector<std::string> xs = op.InputArgumentNames();
    if (op.type() == "pool2d") {
      // Its NHWC kernel serves every form (kernels/cpu/spatial).
      const std::string layout = AttrOr<std::string>(op, "data_format", "NCHW");
      return xs.size() == 1 && nhwc_.count(xs[0]) != 0 &&
             (layout == "NCHW" || layout == "AnyLayout");
    }
    if (LayoutFree(op.type())) {
      return xs.size() == 1 && nhwc_.count(xs[0]) != 0;
    }
    return SameShapeBinary(op.type()) && SameShapePair(xs);
  }

  // A flatten of dims 1..3 of a NHWC tensor whose plane is 1x1 (a global
  // pool's output, before a network's fc): [N, 1, 1, C] lies in memory as
  // [N, C, 1, 1] does, so the flattened [N, C] is the same either way.
  bool FlattensOneByOne(const OpDesc& op) const {
    if (op.type() != "flatten_contiguous_range") return false;
    const std::vector<std::string> xs = op.Input("X");
    if (xs.size() != 1 || nhwc_.count(xs[0]) == 0) return false;
    const int start = AttrOr<int>(op, "start_axis", 1);
    const int stop = AttrOr<int>(op, "stop_axis", 1);
    const VarDesc* x = desc_.FindVar(xs[0]);  // as declared: NCHW
    return x != nullptr && x->rank() == 4 && x->dim(2) == 1 && x->dim(3) == 1 &&
           (start == 1 || start == -3) && (stop == 3 || stop == -1);
  }

  // Two inputs of one declared shape, one NHWC and the other NHWC or with
  // a NHWC copy.
  bool SameShapePair(const std::vector<std::string>& xs) const {
    if (xs.size() != 2 || !Available(xs[0]) || !Available(xs[1]) ||
        (nhwc_.count(xs[0]) == 0 && nhwc_.count(xs[1]) == 0)) {
      return false;
    }
    const VarDesc* a = desc_.FindVar(xs[0]);
    const VarDesc* b = desc_.FindVar(xs[1]);
    return a != nullptr && b != nullptr && a->dims() == b->dims();
  }

  // `name` is NHWC, or has a NHWC copy already (a residual branch's input
  // a conv read channels-last).
  bool Available(const std::string& name) const {
    return nhwc_.count(name) != 0 || to_nhwc_.count(name) != 0;
  }

  // concat or split along the channels (axis 1) of NHWC inputs, axis from
  // the attribute alone: channels-last, the same op along axis 3.
  bool ChannelAxisOp(const OpDesc& op) const {
    if (op.type() != "concat" && op.type() != "split") return false;
    if (op.HasInput("AxisTensor") || op.HasInput("SectionsTensorList")) {
      return false;
    }
    const int axis = AttrOr<int>(op, "axis", 0);
    if (axis != 1 && axis != -3) return false;
    const std::vector<std::string> xs = op.Input("X");
    if (xs.empty()) return false;
    for (const std::string& x : xs) {
      if (nhwc_.count(x) == 0) return false;
    }
    return true;
  }

  // A conv worth running channels-last: depthwise, at least kMinChannels
  // input channels per group, or a narrower one (a stem on an image's 3
  // channels) whose output a conv or a pool reads: it then saves the
  // transpose of its wider output (ResNet-18, stem and max pool NHWC
  // against both NCHW: batch 1 2.60 -> 2.43 ms, batch 32 44.0 -> 41.7).
  bool WideEnough(const OpDesc& op) const {
    constexpr int64_t kMinChannels = 16;
    const VarDesc* w = desc_.FindVar(op.FirstInput("Filter"));
    if (w == nullptr || w->rank() != 4) return false;
    const int64_t per_group = w->dim(1);
    if (per_group >= kMinChannels ||
        (per_group == 1 && AttrOr<int>(op, "groups", 1) > 1)) {
      return true;
    }
    for (const auto& reader : desc_.ops()) {
      const bool pool = reader->type() == "pool2d";
      // Training: a stem's batch norm runs channels-last too (the reader
      // a training program puts after every conv).
      const bool norm = training_ && reader->type() == "batch_norm";
      if (!pool && !norm && !IsConv(*reader)) continue;
      for (const std::string& x : reader->Input(pool || norm ? "X" : "Input")) {
        if (x == op.FirstOutput("Output")) return true;
      }
    }
    return false;
  }

  // A conv's input: a NHWC var, or a 4-D fp32 tensor transposed in.
  bool Plain4dOrFeed(const std::string& name) const {
    if (nhwc_.count(name) != 0) return true;
    const VarDesc* v = desc_.FindVar(name);
    return v != nullptr && v->is_tensor() && v->dtype() == DType::kFP32 &&
           v->rank() == 4;
  }

  void Permute(proto::BlockDesc* block, const std::string& name) {
    for (auto& var : *block->mutable_vars()) {
      if (var.name() != name) continue;
      VarDesc v(&var);
      const Dims d = v.dims();
      v.SetDims({d[0], d[2], d[3], d[1]});
    }
  }

  // The name of `name`'s copy in the other layout, its transpose2 appended
  // to `out` the first time (declared in `block`).
  std::string Transposed(
      const std::string& name, bool to_nhwc, proto::BlockDesc* block,
      google::protobuf::RepeatedPtrField<proto::OpDesc>* out) {
    std::map<std::string, std::string>& made = to_nhwc ? to_nhwc_ : to_nchw_;
    auto it = made.find(name);
    if (it != made.end()) return it->second;
    const std::string copy = name + (to_nhwc ? "@nhwc" : "@nchw");
    const VarDesc* from = desc_.FindVar(name);
    const Dims d = from->dims();  // as declared: NCHW
    VarDesc v(block->add_vars());
    v.mutable_proto()->set_name(copy);
    v.SetDType(from->dtype());
    v.SetDims(to_nhwc ? Dims{d[0], d[2], d[3], d[1]} : d);
    proto::OpDesc* t = out->Add();
    OpDesc view(t, 0, 0);
    t->set_type("transpose2");
    view.SetInput("X", {name});
    view.SetOutput("Out", {copy});
    view.SetAttr("axis", to_nhwc ? kToNhwc : kToNchw);
    // Where and as what the op it was made for runs: its role (forward,
    // backward) and a placed program's place group.
    for (int k = 0; serving_ != nullptr && k < serving_->attrs_size(); ++k) {
      const proto::OpDesc::Attr& a = serving_->attrs(k);
      if (a.name() == "op_role" || a.name() == kPlaceGroupAttr) {
        *t->add_attrs() = a;
      }
    }
    ++transposes_;
    made[name] = copy;
    return copy;
  }

  // ---- Training (RunChannelsLast's `training`): the ops a training
  // program puts between convolutions, and the gradient ops, channels-last
  // too. Each converted op reads every activation slot NHWC (transposed in
  // where the var is not) and writes its activation outputs NHWC, so the
  // rewrite is right op by op whatever its neighbours do; which ops convert
  // only decides how few transposes remain.
  struct TrainingSlots {
    const char* attr = nullptr;  // the layout attribute set to NHWC
    std::vector<std::string> ins, outs;
    int axis = 0;  // a channel broadcast's new axis (0: unchanged)
  };

  bool TrainingConvertible(const OpDesc& op, TrainingSlots* t) const {
    const std::string& type = op.type();
    if (type == "batch_norm" || type == "batch_norm_grad") {
      if (!NormSlots(op, t)) return false;
    } else if (type == "conv2d_grad" || type == "depthwise_conv2d_grad") {
      if (AttrOr<std::string>(op, "data_format", "NCHW") == "NHWC" ||
          !Available(op.FirstInput("Input")) || op.HasInput("Bias") ||
          op.HasInput("ResidualData")) {
        return false;
      }
      t->attr = "data_format";
      t->ins = {"Input", "Output@GRAD"};
      t->outs = {"Input@GRAD"};
    } else if (type == "pool2d_grad") {
      if (nhwc_.count(op.FirstInput("Out")) == 0) return false;  // its pool's
      t->attr = "data_format";
      t->ins = {"X", "Out", "Out@GRAD"};
      t->outs = {"X@GRAD"};
    } else if (type == "flatten_contiguous_range_grad") {
      // The gradient of a flatten that read a 1x1 NHWC plane as it lies:
      // X@GRAD takes XShape's dims, the NHWC ones.
      if (flat_xshapes_.count(op.FirstInput("XShape")) == 0) return false;
      t->outs = {"X@GRAD"};
      return OutputsPlain(op, *t);
    } else if (!ElementwiseSlots(op, t)) {
      return false;
    }
    return ActivationsPlain(op, *t);
  }

  // batch_norm and its gradient on a NHWC-available X.
  bool NormSlots(const OpDesc& op, TrainingSlots* t) const {
    if (AttrOr<std::string>(op, "data_layout", "NCHW") == "NHWC" ||
        !Available(op.FirstInput("X"))) {
      return false;
    }
    t->attr = "data_layout";
    t->ins = {"X"};
    if (op.type() == "batch_norm") {
      t->outs = {"Y"};
    } else {
      t->ins.push_back("Y@GRAD");
      t->outs = {"X@GRAD"};
    }
    return true;
  }

  // Layout-free ops of training programs: an activation's gradient, a
  // same-shape add / sub / mul and its gradient, sum (gradients summed),
  // a channel bias added (Y [C] along axis 1) and its gradient.
  bool ElementwiseSlots(const OpDesc& op, TrainingSlots* t) const {
    const std::string& type = op.type();
    const std::string base =
        type.size() > 5 && type.compare(type.size() - 5, 5, "_grad") == 0
            ? type.substr(0, type.size() - 5)
            : "";
    const bool grad = !base.empty();
    if (grad && LayoutFree(base)) {
      t->ins = op.InputSlots();
      t->outs = {"X@GRAD"};
      return SameDimsOneNhwc(op, t->ins);
    }
    if (type == "sum") {
      t->ins = {"X"};
      t->outs = {"Out"};
      return SameDimsOneNhwc(op, t->ins);
    }
    return BinarySlots(op, grad ? base : type, grad, t);
  }

  // elementwise_add / sub / mul of `binary` (its gradient: `grad`) on
  // same-shape X and Y, or an add of a channel bias Y [C] along axis 1.
  bool BinarySlots(const OpDesc& op, const std::string& binary, bool grad,
                   TrainingSlots* t) const {
    if (!SameShapeBinary(binary)) return false;
    const VarDesc* x = desc_.FindVar(op.FirstInput("X"));
    const VarDesc* y = desc_.FindVar(op.FirstInput("Y"));
    if (x == nullptr || y == nullptr || x->rank() != 4) return false;
    t->outs = grad ? std::vector<std::string>{"X@GRAD", "Y@GRAD"}
                   : std::vector<std::string>{"Out"};
    if (y->rank() == 1 && binary == "elementwise_add" &&
        AttrOr<int>(op, "axis", -1) == 1 && Available(op.FirstInput("X"))) {
      t->ins = grad ? std::vector<std::string>{"X", "Out@GRAD"}
                    : std::vector<std::string>{"X"};
      if (grad) t->outs = {"X@GRAD"};  // Y@GRAD: [C], as it was
      t->axis = 3;
      return true;
    }
    t->ins = grad ? std::vector<std::string>{"X", "Y", "Out@GRAD"}
                  : std::vector<std::string>{"X", "Y"};
    return x->dims() == y->dims() && SameDimsOneNhwc(op, t->ins);
  }

  // The vars in `slots` (those the op has): 4-D fp32 tensors of one
  // declared shape, one of them NHWC already.
  bool SameDimsOneNhwc(const OpDesc& op,
                       const std::vector<std::string>& slots) const {
    bool one = false;
    std::optional<Dims> dims;
    for (const std::string& slot : slots) {
      for (const std::string& a : op.Input(slot)) {
        const VarDesc* v = desc_.FindVar(a);
        if (v == nullptr || !Plain4dOrFeed(a)) return false;
        if (dims && *dims != v->dims()) return false;
        dims = v->dims();
        one = one || nhwc_.count(a) != 0;
      }
    }
    return one;
  }

  // Every var of the activation outputs a plain 4-D tensor (absent or
  // @EMPTY@ ones aside).
  bool OutputsPlain(const OpDesc& op, const TrainingSlots& t) const {
    for (const std::string& slot : t.outs) {
      for (const std::string& y : op.Output(slot)) {
        if (!y.empty() && y != kEmptyVarName && !Plain4d(y)) return false;
      }
    }
    return true;
  }

  // ... and every var of the activation inputs 4-D fp32.
  bool ActivationsPlain(const OpDesc& op, const TrainingSlots& t) const {
    for (const std::string& slot : t.ins) {
      for (const std::string& x : op.Input(slot)) {
        if (!Plain4dOrFeed(x)) return false;
      }
    }
    return OutputsPlain(op, t);
  }

  void SlotsToNhwc(OpDesc* op, const TrainingSlots& t, proto::BlockDesc* block,
                   google::protobuf::RepeatedPtrField<proto::OpDesc>* out) {
    for (const std::string& slot : t.ins) {
      std::vector<std::string> args = op->Input(slot);
      for (std::string& a : args) {
        if (nhwc_.count(a) == 0) a = Transposed(a, true, block, out);
      }
      if (!args.empty()) op->SetInput(slot, args);
    }
    if (t.attr != nullptr) op->SetAttr(t.attr, std::string("NHWC"));
    if (t.axis != 0) op->SetAttr("axis", t.axis);
    for (const std::string& slot : t.outs) {
      for (const std::string& y : op->Output(slot)) {
        if (y.empty() || y == kEmptyVarName) continue;
        nhwc_.insert(y);
        Permute(block, y);
      }
    }
  }

  const Block& desc_;  // the program as it was: vars declared NCHW
  const fusion::Uses uses_;
  const std::set<std::string> fetched_;
  const bool training_;
  const proto::OpDesc* serving_ = nullptr;  // the op being rewritten
  // The XShapes of flattens that read a 1x1 NHWC plane as it lies.
  std::set<std::string> flat_xshapes_;
  std::set<std::string> nhwc_;
  std::map<std::string, std::string> to_nhwc_, to_nchw_;
  int transposes_ = 0;
};

}  // namespace

void RunChannelsLast(const Program& program,
                     const std::vector<std::string>& fetch_names,
                     proto::BlockDesc* block, int* converted, int* transposes,
                     bool training) {
  ChannelsLast pass(&program, fetch_names, training);
  pass.Run(block, converted, transposes);
}

Program TrainingChannelsLast(const Program& program,
                             const std::vector<std::string>& keep) {
  proto::ProgramDesc desc = program.proto();
  int converted = 0, transposes = 0;
  RunChannelsLast(program, keep, desc.mutable_blocks(0), &converted,
                  &transposes, /*training=*/true);
  return Program(std::move(desc));
}

}  // namespace parex
