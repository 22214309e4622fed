// feed and fetch on CPU. They shape their outputs themselves: their schemas
// have no shape inference, since a feed's shape is whatever the caller gave.
#include "kernels/cpu/cpu_kernels.h"

namespace parex {
namespace {

Status FeedKernel(KernelContext& ctx) {
  const int col = ctx.Attr<int>("col");
  const std::vector<Tensor>* list = ctx.InputVar("X")->GetTensorList();
  if (list == nullptr || col < 0 || col >= static_cast<int>(list->size()) ||
      !(*list)[col].defined()) {
    return ctx.Error("no value fed for '" + ctx.op().FirstOutput("Out") +
                     "' (feed column " + std::to_string(col) + ")");
  }
  // Shares the caller's buffer: feeding copies nothing.
  ctx.Output("Out")->ShareDataWith((*list)[col]);
  return Status::Ok();
}

Status FetchKernel(KernelContext& ctx) {
  const int col = ctx.Attr<int>("col");
  if (col < 0) return ctx.Error("negative fetch column");
  const Tensor* x = ctx.Input("X");
  if (x == nullptr) {
    return ctx.Error("variable '" + ctx.op().FirstInput("X") +
                     "' holds no tensor to fetch");
  }
  std::vector<Tensor>* list = ctx.OutputVar("Out")->GetMutableTensorList();
  if (static_cast<int>(list->size()) <= col) list->resize(col + 1);
  // A copy: the caller keeps the value even when the program later writes
  // the variable again.
  (*list)[col] = x->Clone();
  return Status::Ok();
}

}  // namespace

void RegisterIoKernels(KernelRegistry* r) {
  r->Register({"feed", Place::Kind::kCPU, DType::kUndefined}, &FeedKernel);
  r->Register({"fetch", Place::Kind::kCPU, DType::kUndefined}, &FetchKernel);
}

}  // namespace parex
