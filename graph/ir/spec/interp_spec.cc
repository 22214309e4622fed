#include "graph/ir/spec/interp_spec.h"

#include <cmath>
#include <string>
#include <vector>

namespace parex {
namespace {

constexpr int64_t kMaxExtent = int64_t{1} << 31;

// `source`: where the size came from, for the message.
Status CheckSize(const ShapeContext& ctx, const char* what, int64_t v,
                 const std::string& source) {
  if (v < 1 || v >= kMaxExtent) {
    return ctx.Error(std::string(what) + " " + std::to_string(v) + " (" +
                     source + ") is outside [1, 2^31)" +
                     (v < 1 ? ": an empty output" : ""));
  }
  return Status::Ok();
}

// The scales of a Scale tensor or of the attribute; {-1, -1} for none.
StatusOr<std::vector<double>> Scales(const ShapeContext& ctx) {
  std::vector<double> s;
  if (ctx.HasInput("Scale")) {
    PAREX_ASSIGN_OR_RETURN(s, ctx.InputValues("Scale"));
    if (s.size() == 1) s.push_back(s[0]);
  } else {
    const std::vector<float> attr = ctx.Attr<std::vector<float>>("scale");
    s.assign(attr.begin(), attr.end());
    if (s.empty()) return std::vector<double>{-1, -1};
  }
  if (s.size() != 2) {
    return ctx.Error("scale holds " + std::to_string(s.size()) +
                     " values; it takes one or two");
  }
  for (double v : s) {
    if (!std::isfinite(v) || !(v > 0)) {
      return ctx.Error("scale " + std::to_string(v) + " must be positive");
    }
  }
  return s;
}

}  // namespace

StatusOr<InterpSizes> InterpSizesOf(const ShapeContext& ctx, int64_t in_h,
                                    int64_t in_w) {
  InterpSizes sizes;
  std::string source = "the out_h / out_w attributes";
  if (ctx.HasInput("SizeTensor")) {
    source = "input SizeTensor";
    PAREX_ASSIGN_OR_RETURN(
        std::vector<int64_t> hw,
        IntsFromInputsOrAttr(ctx, {{"SizeTensor", true}}, {}));
    if (hw.size() != 2) {
      return ctx.Error("SizeTensor gives " + std::to_string(hw.size()) +
                       " extents; it takes two (out_h, out_w)");
    }
    sizes.out_h = hw[0];
    sizes.out_w = hw[1];
  } else {
    PAREX_ASSIGN_OR_RETURN(std::vector<double> s, Scales(ctx));
    if (s[0] > 0) {
      source = ctx.HasInput("Scale") ? "input Scale" : "the scale attribute";
      sizes.scale_h = static_cast<float>(s[0]);
      sizes.scale_w = static_cast<float>(s[1]);
      // A float product, as Paddle computes it.
      const double h = static_cast<float>(in_h) * sizes.scale_h;
      const double w = static_cast<float>(in_w) * sizes.scale_w;
      sizes.out_h = h < kMaxExtent ? static_cast<int64_t>(h) : kMaxExtent;
      sizes.out_w = w < kMaxExtent ? static_cast<int64_t>(w) : kMaxExtent;
    } else {
      sizes.out_h = ctx.Attr<int>("out_h");
      sizes.out_w = ctx.Attr<int>("out_w");
    }
    if (ctx.HasInput("OutSize")) {
      source = "input OutSize";
      PAREX_ASSIGN_OR_RETURN(
          std::vector<int64_t> hw,
          IntsFromInputsOrAttr(ctx, {{"OutSize", false}}, {}));
      if (hw.size() != 2) {
        return ctx.Error("OutSize holds " + std::to_string(hw.size()) +
                         " values; it takes two (out_h, out_w)");
      }
      sizes.out_h = hw[0];
      sizes.out_w = hw[1];
    }
  }
  PAREX_RETURN_IF_ERROR(CheckSize(ctx, "out_h", sizes.out_h, source));
  PAREX_RETURN_IF_ERROR(CheckSize(ctx, "out_w", sizes.out_w, source));
  return sizes;
}

}  // namespace parex
