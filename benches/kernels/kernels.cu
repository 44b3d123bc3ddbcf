// The three benchmark kernels, compiled to PTX by nvcc at bench time (see benches/run.sh).
// The OpenCL C twins are in kernels.cl and the native C twins in bench.c: same algorithms.

#define TILE 16

extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}

// Each block sums its own contiguous segment of the input (as CUB's even-share reductions do), its
// threads reading consecutive elements, with four independent accumulators per thread; then each warp
// reduces with shfl.down, warp sums go through shared memory, and warp 0 reduces them. One partial
// per block.
extern "C" __global__ void reduce_sum(const float *in, float *partial, int n)
{
    __shared__ float warp_sums[32];
    int per_block = (n + gridDim.x - 1) / gridDim.x;
    int begin = blockIdx.x * per_block;
    int end = min(begin + per_block, n);
    int step = blockDim.x;
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    int i = begin + threadIdx.x;
    for (; i + 3 * step < end; i += 4 * step) {
        s0 += in[i];
        s1 += in[i + step];
        s2 += in[i + 2 * step];
        s3 += in[i + 3 * step];
    }
    for (; i < end; i += step)
        s0 += in[i];
    float s = (s0 + s1) + (s2 + s3);
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        warp_sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.f;
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_down_sync(0xffffffffu, s, o);
        if (lane == 0)
            partial[blockIdx.x] = s;
    }
}

// C = A * B for n x n row-major matrices, n a multiple of TILE; one TILE x TILE block per tile of C.
extern "C" __global__ void sgemm(int n, const float *A, const float *B, float *C)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        As[ty][tx] = A[row * n + k0 + tx];
        Bs[ty][tx] = B[(k0 + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; k++)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
