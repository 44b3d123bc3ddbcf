// A CUDA runtime program whose kernels fault: a store through a null pointer, a store far past an
// allocation, and a kernel that traps. Each error must come back from the next synchronisation and
// stay until cudaDeviceReset, and after the reset a correct kernel must still run and give exact
// results. (A GPU's process cannot use the device again after an illegal address; ptx-jit lets it.)
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

__global__ void store(int *p, long long offset) { p[offset + threadIdx.x] = 7; }
__global__ void trapping() { __trap(); }
__global__ void square(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * in[i];
}

static int failures = 0;

static void expect(const char *what, cudaError_t got, cudaError_t want) {
    printf("%-44s %-28s %s\n", what, cudaGetErrorName(got), got == want ? "ok" : "WRONG");
    if (got != want) failures++;
}

int main(int argc, char **argv) {
    // A case name (null, past, trap, correct) runs that case alone: on a GPU the process cannot use
    // the device again after an illegal address, even after cudaDeviceReset, so each case of the GPU's
    // answers needs its own process (tests/gpu/faults_on_device.sh).
    const char *only = argc > 1 ? argv[1] : nullptr;
    auto wanted = [&](const char *name) { return only == nullptr || strcmp(only, name) == 0; };
    if (wanted("null")) {
    store<<<4, 64>>>(nullptr, 0);
    expect("store through a null pointer", cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    int *scratch;
    expect("  ...the error is sticky", cudaMalloc(&scratch, 16), cudaErrorIllegalAddress);
    expect("cudaDeviceReset", cudaDeviceReset(), cudaSuccess);
    }

    if (wanted("past")) {
    int *buf;
    expect("cudaMalloc after the reset", cudaMalloc(&buf, 1024), cudaSuccess);
    store<<<1, 32>>>(buf, 1ll << 38);
    expect("store 1 TiB past an allocation", cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    expect("cudaDeviceReset", cudaDeviceReset(), cudaSuccess);
    }

    if (wanted("trap")) {
    trapping<<<1, 32>>>();
    expect("__trap()", cudaDeviceSynchronize(), cudaErrorLaunchFailure);
    expect("cudaDeviceReset", cudaDeviceReset(), cudaSuccess);
    }

    if (wanted("correct")) {
    const int n = 1 << 20;
    float *in, *out, *host = new float[n];
    for (int i = 0; i < n; i++) host[i] = (float)(i % 1000);
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    cudaMemcpy(in, host, n * sizeof(float), cudaMemcpyHostToDevice);
    square<<<(n + 255) / 256, 256>>>(in, out, n);
    expect("a correct kernel afterwards", cudaDeviceSynchronize(), cudaSuccess);
    cudaMemcpy(host, out, n * sizeof(float), cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += host[i] != (float)(i % 1000) * (float)(i % 1000);
    printf("square: %d wrong of %d\n", wrong, n);
    if (wrong) failures++;
    }
    if (failures) {
        printf("%d FAILED\n", failures);
        return 1;
    }
    printf("ALL VERIFIED\n");
    return 0;
}
