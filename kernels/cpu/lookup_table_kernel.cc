#include "kernels/cpu/cpu_kernels.h"

namespace parex {

void RegisterLookupTableKernels(KernelRegistry* r) { (void)r; }

}  // namespace parex
