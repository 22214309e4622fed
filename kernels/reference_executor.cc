#include "kernels/reference_executor.h"
