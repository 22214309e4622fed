#include "kernels/cpu/cpu_kernels.h"

namespace parex {

void RegisterOptimizerKernels(KernelRegistry* r) { (void)r; }

}  // namespace parex
