#include "kernels/model_io.h"
