// CUDA graphs through the CUDA runtime (static, nvcc's default), as applications write them: a
// sequence captured from a stream (kernels, an asynchronous copy and a memset, with a fork to a second
// stream and a join through events), instantiated once and launched many times, and a graph built
// node by node. Prints GRAPHS VERIFIED or stops at the first difference.
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

__global__ void axpb(float *p, int n, float a, float b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = a * p[i] + b;
}

__global__ void sum(float *d, const float *x, const float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) d[i] = x[i] + y[i];
}

int main() {
    const int n = 1000;
    float *x, *y, *z;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    CHECK(cudaMalloc(&y, n * sizeof(float)));
    CHECK(cudaMalloc(&z, n * sizeof(float)));
    CHECK(cudaMemset(x, 0, n * sizeof(float)));
    cudaStream_t s, t;
    cudaEvent_t fork, join;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

    // One step: x = 2x + 1 on s; y = x copied, then y = 3y on t; z = x + y on s.
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    axpb<<<(n + 127) / 128, 128, 0, s>>>(x, n, 2.f, 1.f);
    CHECK(cudaEventRecord(fork, s));
    CHECK(cudaStreamWaitEvent(t, fork, 0));
    CHECK(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, t));
    axpb<<<(n + 127) / 128, 128, 0, t>>>(y, n, 3.f, 0.f);
    CHECK(cudaEventRecord(join, t));
    CHECK(cudaStreamWaitEvent(s, join, 0));
    sum<<<(n + 127) / 128, 128, 0, s>>>(z, x, y, n);
    cudaGraph_t g;
    CHECK(cudaStreamEndCapture(s, &g));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
    if (nodes != 4) {
        std::fprintf(stderr, "captured %zu nodes, expected 4\n", nodes);
        return 1;
    }
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    float host[n], want_x = 0.f;
    for (int step = 1; step <= 5; step++) {
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        want_x = 2.f * want_x + 1.f;
        CHECK(cudaMemcpy(host, z, sizeof host, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++) {
            if (host[i] != want_x + 3.f * want_x) {
                std::fprintf(stderr, "step %d: z[%d] = %g, expected %g\n", step, i, host[i], 4.f * want_x);
                return 1;
            }
        }
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));

    // Built node by node: memset x to 0, then x = 5x + 2 (a kernel node with its arguments copied).
    cudaGraph_t b;
    CHECK(cudaGraphCreate(&b, 0));
    cudaMemsetParams ms = {};
    ms.dst = x;
    ms.value = 0;
    ms.elementSize = 4;
    ms.width = n;
    ms.height = 1;
    cudaGraphNode_t m, k;
    CHECK(cudaGraphAddMemsetNode(&m, b, nullptr, 0, &ms));
    int count = n;
    float a5 = 5.f, b2 = 2.f;
    void *args[] = {&x, &count, &a5, &b2};
    cudaKernelNodeParams kp = {};
    kp.func = (void *)axpb;
    kp.gridDim = dim3((n + 127) / 128);
    kp.blockDim = dim3(128);
    kp.kernelParams = args;
    CHECK(cudaGraphAddKernelNode(&k, b, &m, 1, &kp));
    CHECK(cudaGraphInstantiate(&exec, b, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(host, x, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        if (host[i] != 2.f) {
            std::fprintf(stderr, "built graph: x[%d] = %g, expected 2\n", i, host[i]);
            return 1;
        }
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(b));
    std::printf("GRAPHS VERIFIED\n");
    return 0;
}
