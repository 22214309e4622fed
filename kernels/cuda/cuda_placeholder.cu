__global__ void parex_placeholder_kernel() {}
