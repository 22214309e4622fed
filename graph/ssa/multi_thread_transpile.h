// The multi-thread transpile (seed 003), a rewrite of one program for N
// threads on one place.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "graph/ir/program.h"

namespace parex {

// The multi-thread transpile (seed 003): one program, N threads, one copy of
// the parameters. Every fed var X is split along dim 0 into X@THREAD@0..N-1
// (`split`), the forward and backward ops are replicated per thread with
// their non-persistable vars renamed `<name>@THREAD@<t>`, each parameter
// gradient is merged as `sum` of the threads' copies scaled by 1/N
// (`scale`, which carries op_role_var, so the result also builds on several
// places), and the optimizer ops run once on the merged gradients. The loss
// of thread t is `<loss>@THREAD@<t>`; `loss` is their mean. The fill of
// loss@GRAD (op_role Backward|Loss) stays one op; each thread's
// `loss@GRAD@THREAD@t` is a copy of it (`scale` by 1).
// The result runs on one place (the reference executor, or a 1-place
// SsaGraph whose out-of-order execution gives the threads' parallelism).
StatusOr<Program> TranspileMultiThread(const Program& program,
                                       const std::string& loss,
                                       const std::vector<std::string>& feeds,
                                       int num_threads);

}  // namespace parex
