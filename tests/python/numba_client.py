"""An unmodified numba-cuda client: @cuda.jit kernels compiled by NVVM to PTX (CUDA C++ by NVRTC), linked
through cuLink*, loaded with cuLibraryLoadData and launched with cuLaunchKernelEx, all on ptx-jit's
libcuda.so.1.

Run with LD_LIBRARY_PATH pointing at ptx-jit's build. Exits non-zero on any mismatch.
"""
import math
import os
import sys
import tempfile
import warnings

import numpy as np
from numba import cuda, float32, int32, uint32, vectorize

warnings.simplefilter("ignore")  # numba's notes on nvJitLink and host-array copies are not failures

TPB = 128


@cuda.jit(device=True)
def clamp_square(x, lo, hi):
    y = x * x
    return min(max(y, lo), hi)


@cuda.jit
def elementwise(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = clamp_square(a[i], 0, 1000) + 3 * b[i]


@cuda.jit
def block_sum(x, out):
    part = cuda.shared.array(TPB, dtype=uint32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    part[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            part[t] += part[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        out[cuda.blockIdx.x] = part[0]


@cuda.jit
def histogram(x, bins):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(bins, x[i] % bins.size, 1)


@cuda.jit
def scale2d(m, f):
    r, c = cuda.grid(2)
    if r < m.shape[0] and c < m.shape[1]:
        m[r, c] = m[r, c] * f + r


@cuda.reduce
def max_reduce(a, b):
    return max(a, b)


@vectorize(["float32(float32, float32)"], target="cuda")
def hypot_ufunc(x, y):
    return math.sqrt(x * x + y * y)


failures = 0


def report(what, ok):
    global failures
    print(f"{what:<50} {'verified' if ok else 'MISMATCH'}")
    failures += not ok


def main():
    dev = cuda.get_current_device()
    print(f"device: {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}, compute {dev.compute_capability}")
    rng = np.random.default_rng(11)

    n = 10_000
    a = rng.integers(-50, 50, n).astype(np.int32)
    b = rng.integers(-1000, 1000, n).astype(np.int32)
    da, db = cuda.to_device(a), cuda.to_device(b)
    dout = cuda.device_array(n, dtype=np.int32)
    elementwise[(n + TPB - 1) // TPB, TPB](da, db, dout)
    got = dout.copy_to_host()
    report("elementwise + device function (to_device/copy_to_host)", np.array_equal(got, np.clip(a * a, 0, 1000) + 3 * b))

    x = rng.integers(0, 1 << 20, 64 * TPB + 17).astype(np.uint32)
    blocks = (x.size + TPB - 1) // TPB
    sums = np.zeros(blocks, dtype=np.uint32)
    block_sum[blocks, TPB](x, sums)
    want = np.add.reduceat(x, np.arange(0, x.size, TPB), dtype=np.uint32)
    report("block_sum (cuda.shared.array + syncthreads)", np.array_equal(sums, want))

    v = rng.integers(0, 1 << 16, 50_000).astype(np.int32)
    bins = cuda.to_device(np.zeros(32, dtype=np.int32))
    histogram[(v.size + 255) // 256, 256](v, bins)
    report("histogram (cuda.atomic.add)", np.array_equal(bins.copy_to_host(), np.bincount(v % 32, minlength=32).astype(np.int32)))

    m = rng.integers(0, 100, (37, 53)).astype(np.float32)
    dm = cuda.to_device(m)
    scale2d[(3, 4), (16, 16)](dm, np.float32(2.0))
    report("scale2d (2D grid)", np.array_equal(dm.copy_to_host(), m * np.float32(2.0) + np.arange(37, dtype=np.float32)[:, None]))

    r = rng.integers(-(1 << 30), 1 << 30, 5000).astype(np.int64)
    report("@cuda.reduce max", int(max_reduce(r)) == int(r.max()))

    p = rng.integers(0, 100, 4096).astype(np.float32)
    q = rng.integers(0, 100, 4096).astype(np.float32)
    h = hypot_ufunc(p, q)
    report("@vectorize(target='cuda') hypot", np.array_equal(h, np.sqrt(p * p + q * q, dtype=np.float32)))

    # A kernel calling a CUDA C++ function from a file: numba compiles both to PTX and links them with
    # cuLinkAddData (an extern declaration resolved against the other module), with and without lineinfo.
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "mix.cu")
        with open(src, "w") as f:
            f.write('extern "C" __device__ int mix(int *ret, int a, int b) { *ret = a * 7 - b; return 0; }\n')
        mix = cuda.declare_device("mix", int32(int32, int32))
        for lineinfo in (False, True):

            @cuda.jit(link=[src], lineinfo=lineinfo)
            def use_mix(x, y):
                i = cuda.grid(1)
                if i < x.size:
                    y[i] = mix(x[i], i)

            xs = rng.integers(-1000, 1000, 1000).astype(np.int32)
            ys = np.zeros_like(xs)
            use_mix[8, 128](xs, ys)
            report(f"link=[.cu] external device function, lineinfo={lineinfo}", np.array_equal(ys, xs * 7 - np.arange(1000)))

    # Function attributes as a GPU reports them: the module's constant bytes, and static shared bytes
    # without the padding before dynamic shared memory (10 float32 take 40).
    table = np.arange(24, dtype=np.int64)

    @cuda.jit
    def attrs_kernel(out):
        c = cuda.const.array_like(table)
        sm = cuda.shared.array(10, dtype=float32)
        for j in range(10):
            sm[j] = j
        out[0] = c[cuda.threadIdx.x + 5] + sm[9]

    o = np.zeros(1, dtype=np.float32)
    attrs_kernel[1, 1](o)
    k = next(iter(attrs_kernel.overloads.values()))
    ok = o[0] == 14 and k.const_mem_size >= table.nbytes and k.shared_mem_per_block == 40
    report("const and shared bytes of a kernel (cuFuncGetAttribute)", ok)

    # numba's in-kernel allocator (NRT): np.empty inside a kernel, a slice of it returned by a device
    # function, kept alive by reference counts; device-side malloc and free underneath.
    from numba.cuda import config

    config.CUDA_ENABLE_NRT = True
    try:

        @cuda.jit
        def tail(x):
            return x[5:]

        @cuda.jit
        def nrt_slice(out):
            t = np.empty(10, np.int64)
            for k in range(10):
                t[k] = 3 * k + 1
            s = tail(t)
            out[0] = s[0] + s[4]

        out = np.zeros(1, dtype=np.int64)
        nrt_slice[1, 1](out)
        report("in-kernel np.empty and a returned slice (NRT)", int(out[0]) == 16 + 28)
    finally:
        config.CUDA_ENABLE_NRT = False

    print("ALL VERIFIED" if failures == 0 else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
