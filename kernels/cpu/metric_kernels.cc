#include "kernels/cpu/cpu_kernels.h"

namespace parex {

void RegisterMetricKernels(KernelRegistry* r) { (void)r; }

}  // namespace parex
