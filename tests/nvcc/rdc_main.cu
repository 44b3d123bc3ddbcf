// A program built with relocatable device code (`nvcc -rdc=true`), as projects with device code in
// several files are: a kernel here calls device functions of rdc_unit.cu and reads its variable, and a
// kernel defined there is launched from here. NVIDIA's device linker joins the units' machine code;
// the runtime hands the driver each unit's fat binary, whose PTX the driver links (each unit's
// internal names stay its own). Prints RDC VERIFIED or what differs.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        cudaError_t e_ = (call);                                                                       \
        if (e_ != cudaSuccess) {                                                                       \
            printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));              \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

extern __device__ unsigned calls;
__device__ double scaled_cos(double x);
__device__ int mix(int a, int b);
__global__ void count_local(unsigned *out);
static __device__ unsigned local_calls;

// Arguments large enough for the slow path of both units' argument reduction.
__device__ __host__ double arg(int i) { return (i + 1) * 1.0e9 + 0.25; }

__global__ void combine(double *trig, int *mixed, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    trig[i] = sin(arg(i)) + scaled_cos(arg(i));
    mixed[i] = mix(i, n - i);
    atomicAdd(&local_calls, 2u);
}

int main() {
    const int n = 1000;
    double *trig;
    int *mixed;
    unsigned *local;
    CHECK(cudaMalloc(&trig, n * sizeof(double)));
    CHECK(cudaMalloc(&mixed, n * sizeof(int)));
    CHECK(cudaMalloc(&local, sizeof(unsigned)));
    combine<<<(n + 127) / 128, 128>>>(trig, mixed, n);
    CHECK(cudaGetLastError());
    count_local<<<1, 1>>>(local);
    CHECK(cudaGetLastError());
    static double t[n];
    static int m[n];
    unsigned c = 0, l = 0, here = 0;
    CHECK(cudaMemcpy(t, trig, sizeof t, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(m, mixed, sizeof m, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&l, local, sizeof l, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpyFromSymbol(&c, calls, sizeof c));
    CHECK(cudaMemcpyFromSymbol(&here, local_calls, sizeof here));
    int bad = 0;
    for (int i = 0; i < n; i++) {
        // CUDA's double sin and cos are within 2 ulp of the exact value.
        double want = sin(arg(i)) + cos(arg(i)) * 3.0;
        if (fabs(t[i] - want) > 1e-14 * 4 || m[i] != i * 31 + (n - i)) {
            if (bad++ < 5) printf("element %d: %.17g %d, expected %.17g %d\n", i, t[i], m[i], want, i * 31 + n - i);
        }
    }
    if (c != n || l != n || here != 2 * n) {
        printf("counters: calls %u, the unit's own %u, this unit's own %u; expected %d, %d, %d\n", c, l, here, n, n,
               2 * n);
        bad++;
    }
    if (bad) {
        printf("RDC FAILED: %d mismatches\n", bad);
        return 1;
    }
    printf("RDC VERIFIED: %d elements through another unit's functions, variables and kernel\n", n);
    return 0;
}
