// The second translation unit of rdc_main.cu's program (built with `nvcc -rdc=true`): a device
// function, a device variable and a kernel the other unit uses. Both units call cos or sin, so each
// carries its own copy of the math library's internal helper and tables under the same names.
#include <cmath>

__device__ unsigned calls;                // declared `extern` in rdc_main.cu
static __device__ unsigned local_calls;   // a name each unit has, each its own

__device__ double scaled_cos(double x) {
    atomicAdd(&calls, 1u);
    atomicAdd(&local_calls, 1u);
    return cos(x) * 3.0;
}

__device__ int mix(int a, int b) { return a * 31 + b; }

__global__ void count_local(unsigned *out) { *out = local_calls; }
