"""numba-cuda as its documentation installs it (`pip install numba-cuda[cu13]`, which brings NVIDIA's
nvJitLink), unmodified: numba finds nvJitLink, so it compiles kernels to NVVM's link-time IR and links
them with nvJitLink (`lto=True` by default). Run with this project's libnvJitLink.so.13 in LD_PRELOAD
and its libcuda.so.1 on LD_LIBRARY_PATH: our nvJitLink hands the LTO-IR to NVIDIA's (found beside the
libNVVM numba loaded) for PTX, links it, and our driver runs it. Also `lto=False` (PTX inputs, linked
by ours alone) and a kernel calling a CUDA C++ device function that NVRTC compiles. Exits non-zero on
any mismatch.
"""
import ctypes
import os
import sys
import tempfile
import warnings

import numpy as np
from numba import cuda

# The kernel numba_client.py runs through the driver's linker, here under LTO.
from numba_client import TPB, block_sum

warnings.simplefilter("ignore")  # numba's occupancy and host-array notes are not failures


def our_nvjitlink():
    """Whether the nvJitLink this process has loaded is this project's."""
    try:
        lib = ctypes.CDLL("libnvJitLink.so.13", mode=ctypes.RTLD_GLOBAL | 4)  # RTLD_NOLOAD
    except OSError:
        return False
    return hasattr(lib, "ptxjit_nvjitlink_forwarder")


@cuda.jit(device=True)
def spread(a, b):
    # No multiply-add for NVVM to contract: the result is exact in numpy too.
    return max(a, b) - min(a, b)


@cuda.jit
def blend(x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = spread(x[i], y[i])


@cuda.jit(lto=False)
def scale(x, k):
    i = cuda.grid(1)
    if i < x.size:
        x[i] *= k


# numba's ABI for a foreign device function: the result through a pointer, a status returned.
CU_SOURCE = """
extern "C" __device__ int twice_plus(int *result, int x) {
    *result = 2 * x + 1;
    return 0;
}
"""
twice_plus = cuda.declare_device("twice_plus", "int32(int32)")


def with_cuda_cpp(path):
    """A kernel calling `twice_plus`, which NVRTC compiles from `path` (to LTO-IR, under LTO)."""

    @cuda.jit(link=[path])
    def k(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = twice_plus(x[i])

    return k


def main():
    from numba.cuda.cudadrv.driver import _have_nvjitlink

    assert _have_nvjitlink(), "numba did not find nvJitLink"
    n = 4096
    x = np.linspace(-3, 5, n).astype(np.float32)
    y = np.cos(x).astype(np.float32)
    out = cuda.device_array(n, dtype=np.float32)
    blend[n // 128, 128](cuda.to_device(x), cuda.to_device(y), out)
    got = out.copy_to_host()
    want = np.maximum(x, y) - np.minimum(x, y)
    assert np.array_equal(got, want), np.abs(got - want).max()
    lib = next(iter(blend.overloads.values()))._codelibrary
    assert lib._lto, "the default kernel was not linked with LTO"
    ptx = lib.get_lto_ptx()
    assert ".visible .entry" in ptx, ptx[:200]
    print(f"LTO kernel with a device function: {n} results exact; LTO PTX of {len(ptx)} bytes")

    d = cuda.to_device(x)
    scale[n // 256, 256](d, np.float32(3))
    assert np.array_equal(d.copy_to_host(), x * np.float32(3))
    print("lto=False kernel (PTX linked by our nvJitLink alone): exact")

    v = np.arange(32 * TPB, dtype=np.uint32)
    sums = cuda.device_array(32, dtype=np.uint32)
    block_sum[32, TPB](cuda.to_device(v), sums)
    assert np.array_equal(sums.copy_to_host(), v.reshape(32, TPB).sum(axis=1, dtype=np.uint32))
    print("shared-memory tree reduction under LTO: exact")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "twice_plus.cu")
        with open(path, "w") as f:
            f.write(CU_SOURCE)
        k = with_cuda_cpp(path)
        a = np.arange(1000, dtype=np.int32)
        d = cuda.to_device(a)
        k[8, 128](d)
        assert np.array_equal(d.copy_to_host(), 2 * a + 1)
    print("kernel calling a CUDA C++ device function (NVRTC, LTO-IR from two compilers): exact")

    assert our_nvjitlink(), "the nvJitLink loaded is not this project's"
    print("NUMBA LTO VERIFIED")


if __name__ == "__main__":
    sys.exit(main())
