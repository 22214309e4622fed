#include "kernels/channels_last.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "graph/ir/spec/channels_last.h"
#include "kernels/op_runner.h"

namespace parex {

struct ChannelsLastState {
  ChannelsLastState(const OpDesc& op, const ChannelsLastSlots& s,
                    DeviceContext* dc)
      : slots(s), view(op, s), inner(view.op(), dc) {}

  const ChannelsLastSlots& slots;
  ChannelsFirstOp view;
  KernelContext inner;
  // The channels-first copies, per moved argument: (outer, copy).
  std::vector<std::pair<Variable*, std::unique_ptr<Variable>>> moved_in;
  std::vector<std::pair<Variable*, std::unique_ptr<Variable>>> moved_out;
};

void ChannelsLastStateDeleter::operator()(ChannelsLastState* s) const {
  delete s;
}

namespace {

// Copies `src` into `dst` with the channel axis moved: to the front
// ([N, S..., C] -> [N, C, S...]) or back.
Status MoveChannels(const Tensor& src, Tensor* dst, bool to_first,
                    Place place) {
  const Dims& d = src.dims();
  const Dims out = to_first ? ToChannelsFirst(d) : ToChannelsLast(d);
  PAREX_RETURN_IF_ERROR(dst->TryAllocate(src.dtype(), out, place));
  if (d.size() < 3) {
    // No channel axis to move (prelu's [C] Alpha; the kernel's shape
    // checks name a wrong rank).
    if (src.bytes() > 0)
      std::memcpy(dst->raw_data(), src.raw_data(), src.bytes());
    return Status::Ok();
  }
  const int64_t n = d[0];
  const int64_t c = to_first ? d.back() : d[1];
  const int64_t s = n == 0 || c == 0 ? 0 : src.numel() / (n * c);
  const size_t es = SizeOf(src.dtype());
  const char* from = static_cast<const char*>(src.raw_data());
  char* to = static_cast<char*>(dst->raw_data());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < s; ++p) {
      for (int64_t k = 0; k < c; ++k) {
        const int64_t last = (b * s + p) * c + k;   // [N, S, C]
        const int64_t first = (b * c + k) * s + p;  // [N, C, S]
        std::memcpy(to + (to_first ? first : last) * es,
                    from + (to_first ? last : first) * es, es);
      }
    }
  }
  return Status::Ok();
}

// Binds the inner context: moved arguments to copies, the others to the
// op's own variables.
void Bind(ChannelsLastState* st, const KernelContext& ctx) {
  const OpDesc& op = ctx.op();
  for (const auto& slot : op.proto().inputs()) {
    std::vector<Variable*> vars;
    const bool moves = st->slots.Moves(slot.parameter(), true);
    for (int i = 0; i < slot.arguments_size(); ++i) {
      Variable* v = ctx.InputVar(slot.parameter(), i);
      if (moves && v != nullptr) {
        st->moved_in.emplace_back(v, std::make_unique<Variable>());
        v = st->moved_in.back().second.get();
      }
      vars.push_back(v);
    }
    st->inner.BindInput(slot.parameter(), std::move(vars));
  }
  for (const auto& slot : op.proto().outputs()) {
    std::vector<Variable*> vars;
    const bool moves = st->slots.Moves(slot.parameter(), false);
    for (int i = 0; i < slot.arguments_size(); ++i) {
      Variable* v = ctx.OutputVar(slot.parameter(), i);
      if (moves && v != nullptr) {
        st->moved_out.emplace_back(v, std::make_unique<Variable>());
        v = st->moved_out.back().second.get();
      }
      vars.push_back(v);
    }
    st->inner.BindOutput(slot.parameter(), std::move(vars));
  }
}

}  // namespace

namespace {

std::map<std::string, NativeChannelsLastFn>& NativeRegistry() {
  static auto* r = new std::map<std::string, NativeChannelsLastFn>();
  return *r;
}

}  // namespace

void RegisterNativeChannelsLast(const std::string& op_type,
                                NativeChannelsLastFn fn) {
  NativeRegistry()[op_type] = fn;
}

NativeChannelsLastFn NativeChannelsLastOf(const std::string& op_type) {
  KernelRegistry::Global();  // the kernels register their predicates
  const auto& r = NativeRegistry();
  auto it = r.find(op_type);
  return it != r.end() ? it->second : nullptr;
}

bool RunsChannelsLastNatively(KernelContext& ctx, DType dtype) {
  NativeChannelsLastFn fn = NativeChannelsLastOf(ctx.op().type());
  return fn != nullptr && fn(ctx, dtype);
}

Status RunChannelsLast(const OpSchema& schema, KernelContext& ctx,
                       KernelFn kernel, DType dtype,
                       ChannelsLastStatePtr* state) {
  const Place place = ctx.place();
  if (!place.is_cpu()) {
    return Unimplemented(ctx.op().Label() +
                         ": channels-last (NHWC) runs on "
                         "CPU places; this op is on " +
                         place.ToString());
  }
  if (*state == nullptr) {
    const ChannelsLastSlots* slots = ChannelsLastOf(ctx.op());
    if (slots == nullptr) return Internal("not a channels-last op");
    state->reset(new ChannelsLastState(ctx.op(), *slots, ctx.device_context()));
    Bind(state->get(), ctx);
  }
  ChannelsLastState& st = **state;
  for (auto& [outer, copy] : st.moved_in) {
    const Tensor* t = outer->GetTensor();
    if (t == nullptr || !t->defined()) continue;
    PAREX_RETURN_IF_ERROR(
        MoveChannels(*t, copy->GetMutableTensor(), true, place));
  }
  PAREX_RETURN_IF_ERROR(InferAndAllocateOutputs(schema, st.inner, dtype));
  PAREX_RETURN_IF_ERROR(kernel(st.inner));
  for (auto& [outer, copy] : st.moved_out) {
    const Tensor* t = copy->GetTensor();
    if (t == nullptr || !t->defined()) continue;
    PAREX_RETURN_IF_ERROR(
        MoveChannels(*t, outer->GetMutableTensor(), false, place));
  }
  return Status::Ok();
}

}  // namespace parex
