// A layering violation for check_layers_rejects_violations.
#include <cuda_runtime.h>
#include <nccl.h>
