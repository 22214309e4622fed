// The data side of channels-last ops (graph/ir/spec/channels_last.h): the
// op's NCHW kernel runs on channels-first copies of its layout inputs, and
// its layout outputs move back into the op's NHWC variables. RunOp and
// PreparedOp call it for an op ChannelsLastOf names, after they allocated
// its (NHWC) outputs.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "graph/ir/op_schema.h"
#include "kernels/kernel_context.h"
#include "kernels/kernel_registry.h"

namespace parex {

// What one op keeps between runs: its NCHW view, the copies, the inner
// context (and so the kernel's own state).
struct ChannelsLastState;

struct ChannelsLastStateDeleter {
  void operator()(ChannelsLastState* s) const;
};
using ChannelsLastStatePtr =
    std::unique_ptr<ChannelsLastState, ChannelsLastStateDeleter>;

// A kernel that runs some channels-last configurations of its op on the
// NHWC tensors themselves (no copies) registers a predicate for its op
// type; RunOp and PreparedOp then call the kernel directly whenever the
// predicate holds for the run (it may prepare what the kernel needs).
using NativeChannelsLastFn = bool (*)(KernelContext& ctx, DType dtype);
void RegisterNativeChannelsLast(const std::string& op_type,
                                NativeChannelsLastFn fn);
bool RunsChannelsLastNatively(KernelContext& ctx, DType dtype);
// The predicate registered for `op_type`; null when none (PreparedOp
// looks it up once).
NativeChannelsLastFn NativeChannelsLastOf(const std::string& op_type);

// Runs `kernel` (for `dtype`) on the NCHW view of `ctx`'s op. Host places
// only (an error naming the op and the place elsewhere). `state` is made on
// the first run.
Status RunChannelsLast(const OpSchema& schema, KernelContext& ctx,
                       KernelFn kernel, DType dtype,
                       ChannelsLastStatePtr* state);

}  // namespace parex
