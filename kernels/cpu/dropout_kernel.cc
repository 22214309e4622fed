#include "kernels/cpu/cpu_kernels.h"

namespace parex {

void RegisterDropoutKernels(KernelRegistry* r) { (void)r; }

}  // namespace parex
