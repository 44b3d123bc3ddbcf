"""PTX fresh from numba-cuda and NVRTC (CPU-side, no GPU needed): each file must lint clean, and its
canonical form (`ptx-jit fmt`) must lint clean and be a fixed point of `fmt`.

usage: fresh_ptx.py PATH/TO/ptx-jit
"""
import os
import subprocess
import sys
import tempfile

import numpy  # noqa: F401  (numba needs it importable)
from cuda.bindings import nvrtc
from numba import cuda, float32, int32

PTX_JIT = os.path.abspath(sys.argv[1])


def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


def block_sum(a, out):
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    s[t] = a[cuda.grid(1)]
    cuda.syncthreads()
    k = 64
    while k > 0:
        if t < k:
            s[t] += s[t + k]
        cuda.syncthreads()
        k //= 2
    if t == 0:
        cuda.atomic.add(out, 0, s[0])


def warp_vote(a, out):
    i = cuda.grid(1)
    v = a[i]
    v += cuda.shfl_down_sync(0xFFFFFFFF, v, 1)
    if cuda.any_sync(0xFFFFFFFF, v > 0):
        out[i] = v


NUMBA = [
    ("saxpy", saxpy, (float32, float32[:], float32[:], float32[:])),
    ("block_sum", block_sum, (float32[:], float32[:])),
    ("warp_vote", warp_vote, (int32[:], int32[:])),
]

CUDA_SRC = rb"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <cuda_pipeline_primitives.h>
using namespace nvcuda;

extern "C" __global__ void intrinsics(unsigned* u, int* s, float* f, double* d, unsigned long long* l) {
  int i = threadIdx.x;
  u[i] = __brev(u[i]) + __popc(u[i]) + __clz(s[i]) + __ffs(s[i]) + __byte_perm(u[i], u[i+1], 0x5410);
  u[i] += __funnelshift_l(u[i], u[i+1], 7) + __umulhi(u[i], 3u) + __mul24(s[i], 5) + __sad(s[i], s[i+1], 2u);
  s[i] = __dp4a(s[i], s[i+1], s[i+2]) + __vadd4(u[i], u[i+1]) + __vabsdiffu4(u[i], 3) + __vsetgtu2(u[i], 9);
  f[i] = __fmaf_rz(f[i], f[i+1], 1.f) + __fdiv_rn(f[i], 3.f) + __frsqrt_rn(f[i]) + __expf(f[i]) + __sinf(f[i]) + __saturatef(f[i]) + tanhf(f[i]) + __fsqrt_rd(f[i]);
  d[i] = __dadd_rz(d[i], 1.0) + __drcp_rn(d[i]) + sqrt(d[i]) + __ddiv_ru(d[i], 3.0) + fma(d[i], d[i], 1.0);
  l[i] = clock64() + __ldg(l + i) + __popcll(l[i]) + __brevll(l[i]);
  __stcs(f + i + 32, f[i]);
  __nanosleep(100);
  u[i] += __activemask() + __match_any_sync(0xffffffff, u[i]) + __reduce_add_sync(0xffffffff, u[i]) + __reduce_max_sync(0xffffffff, s[i]);
  atomicCAS((unsigned short*)u, 1, 2);
  atomicAdd(d, 1.0);
  atomicMax(l, 3ull);
  atomicExch(f, 1.f);
  __syncwarp();
  printf("%d %f\n", i, f[i]);
  assert(i < 1024);
}

extern "C" __global__ void halves(__half2* h, __nv_bfloat162* b, __half* x, __nv_bfloat16* y, float* f) {
  int i = threadIdx.x;
  h[i] = __hfma2(h[i], h[i+1], __hmax2_nan(h[i], h[i+1])) + h2exp(h[i]) + __habs2(h[i]) + __hneg2(h[i]);
  b[i] = __hfma2(b[i], b[i+1], b[i]) + __hmin2(b[i], b[i+1]);
  x[i] = __hadd(x[i], x[i+1]) * hsqrt(x[i]) + hrcp(x[i]);
  y[i] = __hmul(y[i], y[i+1]) + __float2bfloat16_rz(f[i]);
  f[i] = __half2float(x[i]) + __bfloat162float(y[i]) + (__hlt(x[i], x[i+1]) ? 1.f : 0.f);
  atomicAdd(h + i, h[i+1]);
  atomicAdd(y + i, y[i+1]);
}

extern "C" __global__ void tensor(const half* a, const half* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

extern "C" __global__ void tensor_tf32(const float* a, const float* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}

extern "C" __global__ void groups(const float* in, float* out) {
  __shared__ float s[256];
  __pipeline_memcpy_async(&s[threadIdx.x], &in[threadIdx.x], sizeof(float));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  float v = s[threadIdx.x];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffff, v, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
"""


def nvrtc_ptx(arch):
    inc = os.path.join(os.path.dirname(nvrtc.__file__), "..", "..", "nvidia", "cu13", "include")
    err, prog = nvrtc.nvrtcCreateProgram(CUDA_SRC, b"fresh.cu", 0, [], [])
    opts = [f"--gpu-architecture={arch}".encode(), b"-I" + os.path.abspath(inc).encode(), b"-std=c++17"]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, log)
        sys.exit("NVRTC failed: " + log.decode())
    _, n = nvrtc.nvrtcGetPTXSize(prog)
    buf = b" " * n
    nvrtc.nvrtcGetPTX(prog, buf)
    return buf.rstrip(b"\0 ").decode()


def run(*args):
    return subprocess.run([PTX_JIT, *args], capture_output=True, text=True)


def main():
    files = {}
    for name, fn, sig in NUMBA:
        for cc in [(7, 5), (9, 0)]:
            ptx, _ = cuda.compile_ptx(fn, sig, cc=cc)
            files[f"numba_{name}_sm{cc[0]}{cc[1]}.ptx"] = ptx
    for arch in ["compute_80", "compute_90a", "compute_100", "compute_120"]:
        files[f"nvrtc_{arch}.ptx"] = nvrtc_ptx(arch)
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        for name, text in files.items():
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write(text)
            lint = run("lint", path)
            fmt1 = run("fmt", path)
            canon = os.path.join(d, "canon_" + name)
            with open(canon, "w") as f:
                f.write(fmt1.stdout)
            lint2 = run("lint", canon)
            fmt2 = run("fmt", canon)
            ok = lint.returncode == 0 and fmt1.returncode == 0 and lint2.returncode == 0 and fmt2.stdout == fmt1.stdout
            print(f"{'ok' if ok else 'FAIL':5} {name} ({len(text)} bytes)")
            if not ok:
                failures += 1
                print(lint.stderr[-2000:], fmt1.stderr[-500:], lint2.stderr[-2000:])
    if failures:
        sys.exit(f"{failures} of {len(files)} fresh PTX files failed")
    print(f"all {len(files)} fresh PTX files lint clean and round-trip")


main()
