#include "graph/ir/spec/window_spec.h"

#include <algorithm>
#include <climits>

#include "base/checked_math.h"
#include "graph/ir/spec/value_inputs.h"

namespace parex {

std::string IntsToString(const std::vector<int>& v) {
  Dims d(v.begin(), v.end());
  return DimsToString(d);
}

StatusOr<std::vector<int>> PositiveIntsAttr(const ShapeContext& ctx,
                                            const std::string& name, int n) {
  std::vector<int> v = ctx.Attr<std::vector<int>>(name);
  bool ok = static_cast<int>(v.size()) == n;
  for (int x : v) ok = ok && x > 0;
  if (!ok) {
    return ctx.Error(name + " must be " + std::to_string(n) +
                     " positive ints, got " + IntsToString(v));
  }
  return v;
}

Status CheckChannelsFirst(const ShapeContext& ctx, const std::string& attr,
                          const std::string& channels_first) {
  const std::string format = ctx.Attr<std::string>(attr);
  if (format == channels_first || format == "AnyLayout") return Status::Ok();
  // Channels-last ops reach here as channels-first views (channels_last.h):
  // any other layout is one parex does not run for this op.
  return Unimplemented(ctx.op().Label() + ": " + attr + " '" + format +
                       "' (parex runs " + channels_first +
                       " and, where Paddle has it, the channels-last form)");
}

Status ResolvePaddings(const ShapeContext& ctx, WindowSpec* w) {
  const int rank = w->rank;
  std::vector<int> p = ctx.Attr<std::vector<int>>("paddings");
  if (static_cast<int>(p.size()) == rank) {
    std::vector<int> pairs;
    for (int v : p) pairs.insert(pairs.end(), {v, v});
    p = pairs;
  } else if (static_cast<int>(p.size()) != 2 * rank) {
    return ctx.Error("paddings must have " + std::to_string(rank) + " or " +
                     std::to_string(2 * rank) + " entries, got " +
                     IntsToString(p));
  }
  for (int v : p) {
    if (v < 0) return ctx.Error("negative paddings " + IntsToString(p));
  }
  const std::string algorithm = ctx.Attr<std::string>("padding_algorithm");
  if (algorithm == "SAME") {
    for (int i = 0; i < rank; ++i) {
      w->dilations[i] = 1;
      if (w->in[i] < 0) continue;  // unknown extent: unknown output anyway
      const int64_t out = (w->in[i] + w->strides[i] - 1) / w->strides[i];
      const int64_t sum = std::max<int64_t>(
          (out - 1) * w->strides[i] + w->size[i] - w->in[i], 0);
      if (sum > INT_MAX) {
        return ctx.Error("SAME padding of " + std::to_string(sum) +
                         " exceeds the int range of paddings");
      }
      p[2 * i] = static_cast<int>(sum / 2);
      p[2 * i + 1] = static_cast<int>(sum - sum / 2);
    }
  } else if (algorithm == "VALID") {
    p.assign(2 * rank, 0);
  } else if (algorithm != "EXPLICIT") {
    return ctx.Error("unknown padding_algorithm '" + algorithm + "'");
  }
  w->paddings = p;
  return Status::Ok();
}

StatusOr<int64_t> OutExtent(const ShapeContext& ctx, const WindowSpec& w, int i,
                            bool ceil_mode) {
  if (w.in[i] < 0 || w.size[i] < 0) return int64_t{-1};
  int64_t span = 0;
  if (!CheckedMul(int64_t{w.dilations[i]}, w.size[i] - 1, &span) ||
      span > kMaxNumel) {
    return ctx.Error("dilation " + std::to_string(w.dilations[i]) +
                     " of a window of " + std::to_string(w.size[i]) +
                     " spans more than 2^48");
  }
  span += 1;
  const int64_t room = w.in[i] + w.paddings[2 * i] + w.paddings[2 * i + 1];
  const int64_t stride = w.strides[i];
  const int64_t out =
      room < span ? 0
                  : (room - span + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  if (out <= 0) {
    static const char* const kNames[] = {"depth", "height", "width"};
    return ctx.Error(std::string(kNames[3 - w.rank + i]) + " " +
                     std::to_string(w.in[i]) + " with paddings " +
                     IntsToString(w.paddings) + " is smaller than the window " +
                     std::to_string(span));
  }
  return out;
}

StatusOr<std::vector<int>> Pad3dPaddings(const ShapeContext& ctx) {
  const std::vector<int> attr = ctx.Attr<std::vector<int>>("paddings");
  PAREX_ASSIGN_OR_RETURN(
      std::vector<int64_t> p,
      IntsFromInputsOrAttr(ctx, {{"Paddings", false}},
                           std::vector<int64_t>(attr.begin(), attr.end())));
  std::vector<int> out;
  for (int64_t v : p) {
    if (v < 0 || v > (int64_t{1} << 30)) {
      return ctx.Error("padding " + std::to_string(v) +
                       (v < 0 ? " is negative" : " exceeds 2^30"));
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.size() != 6) {
    return ctx.Error(
        "paddings must have 6 entries {left, right, top, bottom, front, "
        "back}, got " +
        IntsToString(out));
  }
  return out;
}

}  // namespace parex
