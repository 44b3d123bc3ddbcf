// Device-side printf and assert through libcuda.so.1: printf's arguments are formatted as CUDA does
// (ints, doubles, 64-bit integers, strings), and a failed assert ends the launch with
// cudaErrorAssert after printing CUDA's message. Prints ALL VERIFIED when every check holds.
#include <cassert>
#include <cstdio>

__global__ void say(int n, float x) {
    printf("printf: thread %d of %d, x=%.3f, name=%s, big=%lld\n", threadIdx.x, n, x, "gpu", 1LL << 40);
}

__global__ void check(int v) { assert(v > 100); }

int main() {
    say<<<1, 3>>>(3, 1.5f);
    cudaError_t e1 = cudaDeviceSynchronize();
    check<<<1, 1>>>(500);
    cudaError_t e2 = cudaDeviceSynchronize();
    check<<<1, 1>>>(5);
    cudaError_t e3 = cudaDeviceSynchronize();
    printf("after printf: %s; passing assert: %s; failing assert: %s\n", cudaGetErrorName(e1), cudaGetErrorName(e2),
           cudaGetErrorName(e3));
    bool ok = e1 == cudaSuccess && e2 == cudaSuccess && e3 == cudaErrorAssert;
    printf("%s\n", ok ? "ALL VERIFIED" : "FAILED");
    return ok ? 0 : 1;
}
