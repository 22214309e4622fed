// vector_loops.h's loops built with -mavx2 (kernels/CMakeLists.txt), run
// only where the CPU has AVX2.
#define PAREX_VECTOR_LOOPS_NS avx2
#include "kernels/cpu/vector_loops_impl.h"
