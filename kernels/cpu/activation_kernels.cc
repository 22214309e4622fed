#include "kernels/cpu/cpu_kernels.h"

namespace parex {

void RegisterActivationKernels(KernelRegistry* r) { (void)r; }

}  // namespace parex
