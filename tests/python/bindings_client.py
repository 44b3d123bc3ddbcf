"""An unmodified cuda-bindings client: NVRTC compiles CUDA C++ to PTX, the driver API runs it.

Run with LD_LIBRARY_PATH pointing at ptx-jit's libcuda.so.1. Exits non-zero on any mismatch.
"""
import ctypes
import sys

import numpy as np
from cuda.bindings import driver as cu
from cuda.bindings import nvrtc

SOURCE = r"""
extern "C" __global__ void scale_add(const float *x, const float *y, float *out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void block_sum(const unsigned *in, unsigned *out) {
    __shared__ unsigned part[256];
    unsigned t = threadIdx.x;
    part[t] = in[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) part[t] += part[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = part[0];
}
extern "C" __global__ void histogram(const unsigned *in, unsigned *bins, int *maxv, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&bins[in[i] % 64], 1u);
        atomicMax(maxv, (int)(in[i] >> 4));
    }
}
extern "C" __global__ void affine(const int *x, int *y, int a, int b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + b;
}
extern "C" __global__ void iota2d(int *out, int width) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    out[y * width + x] = y * 1000 + x;
}
"""


def check(result):
    err, *rest = result
    if isinstance(err, cu.CUresult) and err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"driver call failed: {err}")
    if isinstance(err, nvrtc.nvrtcResult) and err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"nvrtc call failed: {err}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def compile_ptx(major, minor):
    prog = check(nvrtc.nvrtcCreateProgram(SOURCE.encode(), b"kernels.cu", 0, [], []))
    opts = [f"--gpu-architecture=compute_{major}{minor}".encode()]
    err = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0]
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        size = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        check(nvrtc.nvrtcGetProgramLog(prog, log))
        raise RuntimeError(log.decode())
    size = check(nvrtc.nvrtcGetPTXSize(prog))
    ptx = b" " * size
    check(nvrtc.nvrtcGetPTX(prog, ptx))
    return ptx


def main():
    check(cu.cuInit(0))
    dev = check(cu.cuDeviceGet(0))
    name = check(cu.cuDeviceGetName(64, dev)).split(b"\0")[0].decode()
    major = check(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = check(cu.cuDeviceGetAttribute(cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    print(f"device: {name}, compute {major}.{minor}")
    ctx = check(cu.cuCtxCreate(None, 0, dev))

    ptx = compile_ptx(major, minor)
    module = check(cu.cuModuleLoadData(ptx))
    scale_add = check(cu.cuModuleGetFunction(module, b"scale_add"))
    iota2d = check(cu.cuModuleGetFunction(module, b"iota2d"))

    n = 1 << 20
    rng = np.random.default_rng(7)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    dx, dy, dout = (check(cu.cuMemAlloc(a.nbytes)) for a in (x, y, out))
    check(cu.cuMemcpyHtoD(dx, x.ctypes.data, x.nbytes))
    check(cu.cuMemcpyHtoD(dy, y.ctypes.data, y.nbytes))
    stream = check(cu.cuStreamCreate(0))

    a = np.float32(2.5)
    args = (
        (dx, dy, dout, float(a), n),
        (None, None, None, ctypes.c_float, ctypes.c_int),
    )
    check(cu.cuLaunchKernel(scale_add, (n + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args, 0))
    check(cu.cuStreamSynchronize(stream))
    check(cu.cuMemcpyDtoH(out.ctypes.data, dout, out.nbytes))
    want = np.float32(a) * x + y
    # NVRTC contracts a*x+y into one fma; compare with the fused result where numpy's differs by rounding.
    fused = (np.float64(a) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)
    ok1 = bool(np.all((out == fused) | (out == want)))
    print(f"scale_add over {n} floats: {'verified' if ok1 else 'MISMATCH'}")

    w, h = 64, 48
    grid = np.zeros(w * h, dtype=np.int32)
    dgrid = check(cu.cuMemAlloc(grid.nbytes))
    check(cu.cuLaunchKernel(iota2d, w // 16, h // 8, 1, 16, 8, 1, 0, stream, ((dgrid, w), (None, ctypes.c_int)), 0))
    check(cu.cuCtxSynchronize())
    check(cu.cuMemcpyDtoH(grid.ctypes.data, dgrid, grid.nbytes))
    yy, xx = np.mgrid[0:h, 0:w]
    ok2 = bool(np.array_equal(grid.reshape(h, w), yy * 1000 + xx))
    print(f"iota2d over {w}x{h}: {'verified' if ok2 else 'MISMATCH'}")

    blocks = 64
    vals = rng.integers(0, 1 << 20, blocks * 256, dtype=np.uint32)
    sums = np.zeros(blocks, dtype=np.uint32)
    dvals, dsums = check(cu.cuMemAlloc(vals.nbytes)), check(cu.cuMemAlloc(sums.nbytes))
    check(cu.cuMemcpyHtoD(dvals, vals.ctypes.data, vals.nbytes))
    block_sum = check(cu.cuModuleGetFunction(module, b"block_sum"))
    check(cu.cuLaunchKernel(block_sum, blocks, 1, 1, 256, 1, 1, 0, stream, ((dvals, dsums), (None, None)), 0))
    check(cu.cuStreamSynchronize(stream))
    check(cu.cuMemcpyDtoH(sums.ctypes.data, dsums, sums.nbytes))
    ok4 = bool(np.array_equal(sums, vals.reshape(blocks, 256).sum(axis=1, dtype=np.uint32)))
    print(f"block_sum (shared memory + __syncthreads) over {blocks} blocks: {'verified' if ok4 else 'MISMATCH'}")

    # Atomics: a histogram and a maximum, every thread hitting the same few words.
    histogram = check(cu.cuModuleGetFunction(module, b"histogram"))
    m = 100_000
    hv = rng.integers(0, 1 << 24, m, dtype=np.uint32)
    bins = np.zeros(64, dtype=np.uint32)
    dh, dbins, dmax = check(cu.cuMemAlloc(hv.nbytes)), check(cu.cuMemAlloc(bins.nbytes)), check(cu.cuMemAlloc(4))
    check(cu.cuMemcpyHtoD(dh, hv.ctypes.data, hv.nbytes))
    check(cu.cuMemsetD32(dbins, 0, 64))
    check(cu.cuMemsetD32(dmax, 0, 1))
    args = ((dh, dbins, dmax, m), (None, None, None, ctypes.c_int))
    check(cu.cuLaunchKernel(histogram, (m + 255) // 256, 1, 1, 256, 1, 1, 0, stream, args, 0))
    check(cu.cuStreamSynchronize(stream))
    check(cu.cuMemcpyDtoH(bins.ctypes.data, dbins, bins.nbytes))
    got_max = np.zeros(1, dtype=np.int32)
    check(cu.cuMemcpyDtoH(got_max.ctypes.data, dmax, 4))
    ok5 = bool(np.array_equal(bins, np.bincount(hv % 64, minlength=64).astype(np.uint32))) and int(got_max[0]) == int((hv >> 4).max())
    print(f"histogram (atomicAdd, atomicMax) over {m} values: {'verified' if ok5 else 'MISMATCH'}")

    # Streams and events: s1 computes y = 3x+1 between two events, s2 waits for the second event and
    # computes z = 2y-5 from it; the copies are asynchronous on their streams.
    affine = check(cu.cuModuleGetFunction(module, b"affine"))
    s1, s2 = check(cu.cuStreamCreate(0)), check(cu.cuStreamCreate(0))
    start, stop = check(cu.cuEventCreate(0)), check(cu.cuEventCreate(0))
    k = 1 << 18
    xs = rng.integers(-1000, 1000, k, dtype=np.int32)
    zs = np.zeros(k, dtype=np.int32)
    dxs, dys, dzs = (check(cu.cuMemAlloc(xs.nbytes)) for _ in range(3))
    check(cu.cuEventRecord(start, s1))
    check(cu.cuMemcpyHtoDAsync(dxs, xs.ctypes.data, xs.nbytes, s1))
    check(cu.cuLaunchKernel(affine, k // 256, 1, 1, 256, 1, 1, 0, s1, ((dxs, dys, 3, 1, k), (None, None, ctypes.c_int, ctypes.c_int, ctypes.c_int)), 0))
    check(cu.cuEventRecord(stop, s1))
    check(cu.cuStreamWaitEvent(s2, stop, 0))
    check(cu.cuLaunchKernel(affine, k // 256, 1, 1, 256, 1, 1, 0, s2, ((dys, dzs, 2, -5, k), (None, None, ctypes.c_int, ctypes.c_int, ctypes.c_int)), 0))
    check(cu.cuMemcpyDtoHAsync(zs.ctypes.data, dzs, zs.nbytes, s2))
    check(cu.cuStreamSynchronize(s2))
    check(cu.cuEventSynchronize(stop))
    ms = check(cu.cuEventElapsedTime(start, stop))
    ok6 = bool(np.array_equal(zs, 2 * (3 * xs + 1) - 5)) and ms >= 0.0
    print(f"affine on two streams ordered by an event ({ms:.2f} ms between events): {'verified' if ok6 else 'MISMATCH'}")
    for e in (start, stop):
        check(cu.cuEventDestroy(e))
    for s_ in (s1, s2):
        check(cu.cuStreamDestroy(s_))

    # A bad handle is an error code, not a crash.
    err = cu.cuMemcpyDtoH(out.ctypes.data, 16, 4)[0]
    ok3 = err == cu.CUresult.CUDA_ERROR_INVALID_VALUE
    print(f"copy from a forged device pointer -> {err.name}")

    for p in (dx, dy, dout, dgrid, dvals, dsums, dh, dbins, dmax, dxs, dys, dzs):
        check(cu.cuMemFree(p))
    check(cu.cuStreamDestroy(stream))
    check(cu.cuModuleUnload(module))
    check(cu.cuCtxDestroy(ctx))
    ok = ok1 and ok2 and ok3 and ok4 and ok5 and ok6
    print("ALL VERIFIED" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
