// An ordinary CUDA runtime program: nvcc links the CUDA runtime statically, and at run time it finds
// the driver as libcuda.so.1. Run with LD_LIBRARY_PATH pointing at ptx-jit's build. Exit status 0 only
// when every result matches the host's.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::printf("%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));         \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

__device__ int square(int x) { return x * x; }

template <typename T>
__global__ void axpy(T a, const T *x, T *y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

__global__ void squares(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = square(in[i]) - in[i];
}

__global__ void block_sums(const unsigned *in, unsigned *out) {
  __shared__ unsigned part[128];
  unsigned t = threadIdx.x;
  part[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = part[0];
}

__global__ void histogram(const unsigned char *in, unsigned *bins, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&bins[in[i] % 16], 1u);
}

__constant__ int offset_c;
__device__ int counter_g;

__global__ void add_offset(int *p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    p[i] += offset_c;
    atomicAdd(&counter_g, 1);
  }
}

// A `__managed__` variable: the host reads and writes it directly (the runtime finds its address
// with cuLibraryGetManaged).
__managed__ int managed_total;

__global__ void add_to_managed(int n) {
  atomicAdd(&managed_total, n);
}

__global__ void warp_sums(const int *in, int *out) {
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  unsigned positive = __ballot_sync(0xffffffffu, in[blockIdx.x * blockDim.x + threadIdx.x] > 0);
  if (threadIdx.x % 32 == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v * 100 + __popc(positive);
}

__global__ void reverse_dynamic(const int *in, int *out) {
  extern __shared__ int tile[];
  int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  tile[t] = in[base + t];
  __syncthreads();
  out[base + t] = tile[blockDim.x - 1 - t];
}

static int failures = 0;
static void report(const char *what, bool ok) {
  std::printf("%-44s %s\n", what, ok ? "verified" : "MISMATCH");
  if (!ok) failures++;
}

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, compute %d.%d, %d SMs\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);

  const int n = 100000;
  float *hx = new float[n], *hy = new float[n], *hr = new float[n];
  for (int i = 0; i < n; i++) { hx[i] = i * 0.5f; hy[i] = 1000.0f - i; }
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, hx, n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, hy, n * sizeof(float), cudaMemcpyHostToDevice));
  axpy<float><<<64, 256>>>(2.0f, dx, dy, n);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(hr, dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  bool ok = true;
  for (int i = 0; i < n; i++) ok &= hr[i] == 2.0f * hx[i] + hy[i];  // exact: i*0.5*2 is exact in float
  report("axpy<float> (template, grid-stride loop)", ok);

  int *hi = new int[n], *ho = new int[n], *di, *dout;
  for (int i = 0; i < n; i++) hi[i] = i % 3000 - 1500;
  CHECK(cudaMalloc(&di, n * sizeof(int)));
  CHECK(cudaMalloc(&dout, n * sizeof(int)));
  CHECK(cudaMemcpy(di, hi, n * sizeof(int), cudaMemcpyHostToDevice));
  squares<<<(n + 127) / 128, 128>>>(di, dout, n);
  CHECK(cudaMemcpy(ho, dout, n * sizeof(int), cudaMemcpyDeviceToHost));
  ok = true;
  for (int i = 0; i < n; i++) ok &= ho[i] == hi[i] * hi[i] - hi[i];
  report("squares (device function)", ok);

  const int blocks = 200;
  unsigned *hv = new unsigned[blocks * 128], hs[blocks], *dv, *ds;
  for (int i = 0; i < blocks * 128; i++) hv[i] = (i * 2654435761u) >> 12;
  CHECK(cudaMalloc(&dv, sizeof(unsigned) * blocks * 128));
  CHECK(cudaMalloc(&ds, sizeof(hs)));
  CHECK(cudaMemcpy(dv, hv, sizeof(unsigned) * blocks * 128, cudaMemcpyHostToDevice));
  block_sums<<<blocks, 128>>>(dv, ds);
  CHECK(cudaMemcpy(hs, ds, sizeof(hs), cudaMemcpyDeviceToHost));
  ok = true;
  for (int b = 0; b < blocks; b++) {
    unsigned s = 0;
    for (int t = 0; t < 128; t++) s += hv[b * 128 + t];
    ok &= hs[b] == s;
  }
  report("block_sums (shared memory, __syncthreads)", ok);

  unsigned char *hb = new unsigned char[n], *db;
  unsigned bins[16] = {0}, want[16] = {0}, *dbins;
  for (int i = 0; i < n; i++) { hb[i] = (unsigned char)(i * 7 + i / 13); want[hb[i] % 16]++; }
  CHECK(cudaMalloc(&db, n));
  CHECK(cudaMalloc(&dbins, sizeof(bins)));
  CHECK(cudaMemcpy(db, hb, n, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dbins, 0, sizeof(bins)));
  histogram<<<(n + 255) / 256, 256>>>(db, dbins, n);
  CHECK(cudaMemcpy(bins, dbins, sizeof(bins), cudaMemcpyDeviceToHost));
  ok = true;
  for (int i = 0; i < 16; i++) ok &= bins[i] == want[i];
  report("histogram (atomicAdd, cudaMemset)", ok);

  int off = 42, zero = 0, counted = -1;
  CHECK(cudaMemcpyToSymbol(offset_c, &off, sizeof(int)));
  CHECK(cudaMemcpyToSymbol(counter_g, &zero, sizeof(int)));
  add_offset<<<(n + 255) / 256, 256>>>(di, n);
  CHECK(cudaMemcpy(ho, di, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpyFromSymbol(&counted, counter_g, sizeof(int)));
  ok = counted == n;
  for (int i = 0; i < n; i++) ok &= ho[i] == hi[i] + 42;
  report("add_offset (__constant__ and __device__ symbols)", ok);

  // Warp shuffles and ballots, on a stream, timed by events, with asynchronous copies.
  cudaStream_t stream;
  cudaEvent_t start, stop;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  const int wn = 32 * 64;
  int *hw = new int[wn], hws[64], *dw, *dws;
  for (int i = 0; i < wn; i++) hw[i] = (i * 37) % 101 - 50;
  CHECK(cudaMalloc(&dw, wn * sizeof(int)));
  CHECK(cudaMalloc(&dws, sizeof(hws)));
  CHECK(cudaEventRecord(start, stream));
  CHECK(cudaMemcpyAsync(dw, hw, wn * sizeof(int), cudaMemcpyHostToDevice, stream));
  warp_sums<<<wn / 256, 256, 0, stream>>>(dw, dws);
  CHECK(cudaMemcpyAsync(hws, dws, sizeof(hws), cudaMemcpyDeviceToHost, stream));
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaStreamSynchronize(stream));
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  ok = ms >= 0;
  for (int w = 0; w < 64; w++) {
    int s = 0, pos = 0;
    for (int l = 0; l < 32; l++) { s += hw[w * 32 + l]; pos += hw[w * 32 + l] > 0; }
    ok &= hws[w] == s * 100 + pos;
  }
  report("warp_sums (shuffle, ballot; stream, events, async copies)", ok);

  reverse_dynamic<<<wn / 128, 128, 128 * sizeof(int)>>>(dw, dout);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(ho, dout, wn * sizeof(int), cudaMemcpyDeviceToHost));
  ok = true;
  for (int i = 0; i < wn; i++) ok &= ho[i] == hw[(i / 128) * 128 + 127 - i % 128];
  report("reverse_dynamic (dynamic shared memory)", ok);
  CHECK(cudaEventDestroy(start)); CHECK(cudaEventDestroy(stop)); CHECK(cudaStreamDestroy(stream));
  CHECK(cudaFree(dw)); CHECK(cudaFree(dws));

  managed_total = 1000;
  add_to_managed<<<4, 32>>>(3);
  CHECK(cudaDeviceSynchronize());
  report("__managed__ variable (host writes 1000, 128 threads add 3)", managed_total == 1000 + 128 * 3);

  CHECK(cudaFree(dx)); CHECK(cudaFree(dy)); CHECK(cudaFree(di)); CHECK(cudaFree(dout));
  CHECK(cudaFree(dv)); CHECK(cudaFree(ds)); CHECK(cudaFree(db)); CHECK(cudaFree(dbins));
  std::printf(failures ? "FAILED\n" : "ALL VERIFIED\n");
  return failures != 0;
}
