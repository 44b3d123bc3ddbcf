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
extern "C" __global__ void mix(const float* __restrict__ a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __shared__ float s[256];
  s[threadIdx.x] = i < n ? a[i] : 0.f;
  __syncthreads();
  float v = s[threadIdx.x ^ 1];
  v += __shfl_down_sync(0xffffffff, v, 16);
  if (__any_sync(0xffffffff, v > 0.f) && i < n) atomicAdd(b + (i & 7), __half2float(__float2half(v)));
}
extern "C" __global__ void fp16(__half2* x, const __half2* y) {
  int i = threadIdx.x;
  x[i] = __hfma2(x[i], y[i], __float2half2_rn(1.0f));
}
"""


def nvrtc_ptx(arch):
    inc = os.path.join(os.path.dirname(nvrtc.__file__), "..", "..", "nvidia", "cu13", "include")
    err, prog = nvrtc.nvrtcCreateProgram(CUDA_SRC, b"fresh.cu", 0, [], [])
    opts = [f"--gpu-architecture={arch}".encode(), b"-I" + os.path.abspath(inc).encode()]
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
    for arch in ["compute_75", "compute_90"]:
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
