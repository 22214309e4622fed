#include "kernels/tensor_io.h"
