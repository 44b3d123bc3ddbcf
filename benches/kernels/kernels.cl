// OpenCL C twins of kernels.cu (same algorithms, same work-group shapes), run on PoCL.

#define TILE 16

__kernel void saxpy(int n, float a, __global const float *x, __global float *y)
{
    int i = get_global_id(0);
    if (i < n)
        y[i] = a * x[i] + y[i];
}

// OpenCL 1.2 has no shuffles; the warp step is a local-memory tree over the work-group instead.
__kernel void reduce_sum(__global const float *in, __global float *partial, int n)
{
    __local float sums[256];
    int lid = get_local_id(0), step = get_local_size(0);
    int per_group = (n + get_num_groups(0) - 1) / get_num_groups(0);
    int begin = get_group_id(0) * per_group;
    int end = min(begin + per_group, n);
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    int i = begin + lid;
    for (; i + 3 * step < end; i += 4 * step) {
        s0 += in[i];
        s1 += in[i + step];
        s2 += in[i + 2 * step];
        s3 += in[i + 3 * step];
    }
    for (; i < end; i += step)
        s0 += in[i];
    sums[lid] = (s0 + s1) + (s2 + s3);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = get_local_size(0) / 2; o > 0; o >>= 1) {
        if (lid < o)
            sums[lid] += sums[lid + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = sums[0];
}

__kernel void sgemm(int n, __global const float *A, __global const float *B, __global float *C)
{
    __local float As[TILE][TILE];
    __local float Bs[TILE][TILE];
    int tx = get_local_id(0), ty = get_local_id(1);
    int row = get_group_id(1) * TILE + ty, col = get_group_id(0) * TILE + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        As[ty][tx] = A[row * n + k0 + tx];
        Bs[ty][tx] = B[(k0 + ty) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; k++)
            acc += As[ty][k] * Bs[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    C[row * n + col] = acc;
}
