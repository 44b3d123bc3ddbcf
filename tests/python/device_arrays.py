"""What the clients of NVIDIA's libraries share: numpy arrays to and from device memory through the
driver API of the `libcuda.so.1` first on the library path (ptx-jit's), with the device's primary
context current, and the verdict line `make test` looks for."""

import ctypes as C
import sys

import numpy as np

cuda = C.CDLL("libcuda.so.1", mode=C.RTLD_GLOBAL)


def use_primary_context():
    """Makes device 0's primary context current (a library's own runtime shares it)."""
    ctx, dev = C.c_void_p(), C.c_int()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDeviceGet(C.byref(dev), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(C.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0


def device(a):
    """A device copy of array `a` (at least 4 bytes allocated)."""
    d = C.c_uint64()
    assert cuda.cuMemAlloc_v2(C.byref(d), C.c_size_t(max(a.nbytes, 4))) == 0
    assert cuda.cuMemcpyHtoD_v2(d, a.ctypes.data_as(C.c_void_p), C.c_size_t(a.nbytes)) == 0
    return C.c_void_p(d.value)


def host(d, like):
    """Device memory `d` back as an array shaped and typed like `like`, once the device is idle."""
    out = np.zeros_like(like)
    assert cuda.cuCtxSynchronize() == 0
    assert cuda.cuMemcpyDtoH_v2(out.ctypes.data_as(C.c_void_p), C.c_uint64(d.value), C.c_size_t(out.nbytes)) == 0
    return out


def verdict(library, failures):
    """Ends a client: the checks that failed (exit status 1), else `LIBRARY VERIFIED`."""
    if failures:
        print("FAILED:", ", ".join(failures))
        sys.exit(1)
    print(f"{library} VERIFIED")
