// The CUDA runtime (static, nvcc's default) on several presented devices (PTXJIT_DEVICE_COUNT=3): it
// counts them, runs a kernel on each through cudaSetDevice, enables peer access and copies between
// devices. Prints DEVICES VERIFIED or stops at the first difference.
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

__global__ void fill(int *p, int v) { p[threadIdx.x] = v * 100 + threadIdx.x; }

int main() {
    int n = 0;
    CHECK(cudaGetDeviceCount(&n));
    if (n != 3) {
        std::fprintf(stderr, "%d devices, expected 3\n", n);
        return 1;
    }
    int *buf[3];
    for (int d = 0; d < n; d++) {
        CHECK(cudaSetDevice(d));
        int cur = -1;
        CHECK(cudaGetDevice(&cur));
        cudaDeviceProp prop;
        CHECK(cudaGetDeviceProperties(&prop, d));
        if (cur != d || prop.pciBusID != d) {
            std::fprintf(stderr, "device %d: current %d, bus %d\n", d, cur, prop.pciBusID);
            return 1;
        }
        CHECK(cudaMalloc(&buf[d], 64 * sizeof(int)));
        fill<<<1, 64>>>(buf[d], d);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
    }
    int can = 0;
    CHECK(cudaDeviceCanAccessPeer(&can, 0, 2));
    CHECK(cudaSetDevice(0));
    CHECK(cudaDeviceEnablePeerAccess(2, 0));
    CHECK(cudaMemcpyPeer(buf[0], 0, buf[2], 2, 64 * sizeof(int)));
    int host[64];
    CHECK(cudaMemcpy(host, buf[0], sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; i++)
        if (host[i] != 200 + i || !can) {
            std::fprintf(stderr, "element %d: %d (peer access %d)\n", i, host[i], can);
            return 1;
        }
    for (int d = 0; d < n; d++) {
        CHECK(cudaSetDevice(d));
        CHECK(cudaFree(buf[d]));
    }
    std::printf("DEVICES VERIFIED\n");
    return 0;
}
