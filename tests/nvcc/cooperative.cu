// A cooperative launch, as CUDA programs write one: cooperative groups' grid.sync() between phases
// that read what other blocks wrote, launched with cudaLaunchCooperativeKernel on as many blocks as
// the device holds at once (cudaOccupancyMaxActiveBlocksPerMultiprocessor times the SM count), and
// the launch the runtime refuses when the grid is larger, and a launch whose one block traps while the
// others wait at the barrier, which fails without hanging. grid.sync() is nvcc's inline barrier on the
// grid workspace the driver hands the kernel (%envreg1 and %envreg2).
// Prints COOPERATIVE VERIFIED or what differs.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>

namespace cg = cooperative_groups;

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));              \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

// Three phases over n elements: fill, reverse through another block's writes, then each block adds
// up a slice of the reversed array, and block 0 adds up the blocks' sums, each phase after the
// whole grid has finished the last.
__global__ void phases(int *a, int *b, int *sums, int n, int *total) {
    cg::grid_group grid = cg::this_grid();
    for (unsigned i = grid.thread_rank(); i < n; i += grid.size()) a[i] = (int)i;
    grid.sync();
    for (unsigned i = grid.thread_rank(); i < n; i += grid.size()) b[i] = a[n - 1 - i] * 2;
    grid.sync();
    if (threadIdx.x == 0) {
        int s = 0;
        for (unsigned i = blockIdx.x; i < n; i += gridDim.x) s += b[i];
        sums[blockIdx.x] = s;
    }
    grid.sync();
    if (grid.thread_rank() == 0) {
        int t = 0;
        for (unsigned k = 0; k < gridDim.x; k++) t += sums[k];
        *total = t;
    }
}

// Block 1 traps while the others wait for it at the grid barrier: the launch fails (as on a GPU,
// where a trap ends the whole grid), it does not hang.
__global__ void one_traps(int *flag) {
    cg::grid_group grid = cg::this_grid();
    if (blockIdx.x == 1) __trap();
    grid.sync();
    *flag = 1;
}

int main() {
    int device = 0, sms = 0, per_sm = 0, cooperative = 0;
    CHECK(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int threads = 128;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, phases, threads, 0));
    // A grid of 12 blocks at most keeps the test quick on a CPU; the limit is checked below.
    int blocks = per_sm * sms < 12 ? per_sm * sms : 12;
    const int n = 10000;
    int *a, *b, *sums, *total;
    CHECK(cudaMalloc(&a, n * sizeof(int)));
    CHECK(cudaMalloc(&b, n * sizeof(int)));
    CHECK(cudaMalloc(&sums, per_sm * sms * sizeof(int)));
    CHECK(cudaMalloc(&total, sizeof(int)));
    int nn = n;
    void *args[] = {&a, &b, &sums, &nn, &total};
    const int want = n * (n - 1); // twice 0 + 1 + ... + (n - 1)
    // Three launches: the later ones run the kernel's optimised code, whose polling loop must still
    // read memory each time round.
    int got = 0;
    for (int launch = 0; launch < 3; launch++) {
        CHECK(cudaMemset(total, 0, sizeof(int)));
        CHECK(cudaLaunchCooperativeKernel((void *)phases, blocks, threads, args, 0, 0));
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(&got, total, sizeof got, cudaMemcpyDeviceToHost));
        if (got != want) break;
    }
    printf("3 cooperative launches of %d blocks x %d threads (device: %d SMs, %d blocks each, cooperative %d): "
           "total %d, expected %d\n",
           blocks, threads, sms, per_sm, cooperative, got, want);
    // More blocks than can be resident at once: refused, and nothing runs.
    cudaError_t too_large = cudaLaunchCooperativeKernel((void *)phases, per_sm * sms + 1, threads, args, 0, 0);
    printf("a grid of %d blocks: %s\n", per_sm * sms + 1, cudaGetErrorName(too_large));
    cudaGetLastError();
    // Last, as a trap leaves the context unusable.
    CHECK(cudaLaunchCooperativeKernel((void *)one_traps, blocks, threads, args + 4, 0, 0));
    cudaError_t trapped = cudaDeviceSynchronize();
    printf("a block that traps while the others wait at grid.sync(): %s\n", cudaGetErrorName(trapped));
    bool ok = cooperative == 1 && got == want && too_large == cudaErrorCooperativeLaunchTooLarge &&
              trapped == cudaErrorLaunchFailure;
    printf(ok ? "COOPERATIVE VERIFIED\n" : "COOPERATIVE FAILED\n");
    return ok ? 0 : 1;
}
