#include "kernels/cpu/cpu_kernels.h"

namespace parex {

void RegisterFillKernels(KernelRegistry* r) { (void)r; }

}  // namespace parex
