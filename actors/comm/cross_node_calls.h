// What the communicators across nodes (Gloo's, MPI's; one rank per
// process) share about a call's tensors: each group holds this rank's one
// tensor, a fused bucket's groups go end to end, and a sum runs over
// staging memory that an all-reduce's tensors are left viewing, so the
// next step's gradients, written in place by their ops, need no copy.
#pragma once

#include <cstdint>
#include <string_view>

#include "actors/comm/communicator.h"
#include "base/status.h"

namespace parex {

struct CrossCall {
  DType dtype = DType::kUndefined;
  int64_t count = 0;  // elements over all groups
};

// Checks a call across `size` ranks: `root` in 0..size-1, each group one
// defined tensor, one dtype throughout, at most 2^31 - 1 elements (what
// one call of `backend` takes). Errors name the collective and variable.
StatusOr<CrossCall> CheckCrossCall(Collective collective, std::string_view name,
                                   TensorGroups groups, int root, int size,
                                   std::string_view backend);

// fp32, fp64, int32 and int64 are summed across nodes; anything else is
// InvalidArgument naming the variable and dtype.
Status CheckSummable(Collective collective, std::string_view name, DType dtype);

// Before a sum over `staging` (1-D, the call's count of its dtype): true
// when the tensors already view it end to end (an all-reduce left them so:
// nothing to copy); else copies them in. With `alias` (an all-reduce), a
// call with other tensors while the last call's still view `staging` is
// FailedPrecondition (a collective name stands for one set of tensors).
StatusOr<bool> StageIn(Collective collective, std::string_view name,
                       TensorGroups groups, Tensor& staging, bool alias);

// After the sum: with `alias`, each tensor views its range of `staging`
// (dims and LoD kept); else each gets its bytes copied back.
void StageOut(TensorGroups groups, const Tensor& staging, bool alias);

// Runs `call` (call #`seq`, the same number on every rank), telling
// `observer` (when set) as it begins and as it ends.
template <class Call>
Status Observed(const CollectiveObserver& observer, int64_t seq,
                Collective collective, std::string_view name, Call&& call) {
  if (observer) observer(seq, collective, name, true);
  Status s = call();
  if (observer) observer(seq, collective, name, false);
  return s;
}

}  // namespace parex
