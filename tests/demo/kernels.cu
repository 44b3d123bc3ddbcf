extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void saxpy(float alpha, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i] + y[i];
}
__device__ float weight(int d) { return d == 0 ? 0.5f : 0.125f; }
extern "C" __global__ void stencil2d(const float *in, float *out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x <= 0 || y <= 0 || x >= w - 1 || y >= h - 1) return;
    int i = y * w + x;
    out[i] = weight(0) * in[i] + weight(1) * (in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}
