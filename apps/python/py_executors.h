// The executors of the Python module: Executor (a program in op order on the
// host: startup programs, evaluation) and ParallelExecutor (the SSA graph
// over places). A step runs with the GIL released; Ctrl-C during a
// ParallelExecutor step aborts it (ParallelExecutor::Abort) and raises
// KeyboardInterrupt once the step has ended.
#pragma once

#include "apps/python/py_common.h"

namespace parex::python {

void BindExecutors(py::module_& m);

}  // namespace parex::python
