"""NVIDIA's cuBLAS, unmodified, on ptx-jit's libcuda.so.1, from the compute_120 PTX it ships (run with
PTXJIT_DEVICE=sm_120): cublasCreate, then routines against numpy. The routines that run are checked
within single-precision tolerance; the others must fail with a cuBLAS status (never a crash) and are
listed. Today cublasSdot and cublasSnrm2 stop at a private driver table slot ptx-jit does not know, and
cublasSgemm at cuBLASLt's choice of kernels that ship as sm_120 machine code only (no PTX).
Usage: cublas_client.py LIBCUBLAS. Prints CUBLAS VERIFIED or the routines that fail their check."""

import ctypes as C
import sys
import time

import numpy as np

from device_arrays import device, host

lib = C.CDLL(sys.argv[1])
rng = np.random.default_rng(7)
f32 = C.c_float
ptr = C.c_void_p



def close(got, want):
    return bool(np.allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max()))


def main():
    h = ptr()
    status = lib.cublasCreate_v2(C.byref(h))
    assert status == 0, f"cublasCreate: status {status}"
    n, m = 1000, 64
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    A, B = rng.random((m, m), dtype=np.float32), rng.random((m, m), dtype=np.float32)
    v = rng.random(m, dtype=np.float32)
    one, zero, alpha = f32(1.0), f32(0.0), f32(2.5)
    result = f32()

    def saxpy():
        dx, dy = device(x), device(y)
        s = lib.cublasSaxpy_v2(h, n, C.byref(alpha), dx, 1, dy, 1)
        return s, lambda: close(host(dy, y), 2.5 * x + y)

    def sgemv():
        dA, dv, dout = device(np.asfortranarray(A)), device(v), device(np.zeros(m, np.float32))
        s = lib.cublasSgemv_v2(h, 0, m, m, C.byref(one), dA, m, dv, 1, C.byref(zero), dout, 1)
        return s, lambda: close(host(dout, v), A @ v)

    def sdot():
        s = lib.cublasSdot_v2(h, n, device(x), 1, device(y), 1, C.byref(result))
        return s, lambda: close(np.float32(result.value), np.dot(x.astype(np.float64), y))

    def snrm2():
        s = lib.cublasSnrm2_v2(h, n, device(x), 1, C.byref(result))
        return s, lambda: close(np.float32(result.value), np.linalg.norm(x.astype(np.float64)))

    def sgemm():
        dA, dB, dC = device(np.asfortranarray(A)), device(np.asfortranarray(B)), device(np.zeros((m, m), np.float32))
        s = lib.cublasSgemm_v2(h, 0, 0, m, m, m, C.byref(one), dA, m, dB, m, C.byref(zero), dC, m)
        return s, lambda: close(host(dC, A).reshape(m, m).T, A @ B)

    checked, refused, wrong = [], [], []
    for name, run in [("Saxpy", saxpy), ("Sgemv", sgemv), ("Sdot", sdot), ("Snrm2", snrm2), ("Sgemm", sgemm)]:
        t = time.time()
        s, check = run()
        if s != 0:
            refused.append(f"{name} (status {s})")
        elif check():
            checked.append(name)
        else:
            wrong.append(name)
        print(f"cublas{name:6} status {s} ({time.time() - t:.2f} s)")
    print("verified:", ", ".join(checked) or "none")
    print("refused with a status:", ", ".join(refused) or "none")
    if wrong or not {"Saxpy", "Sgemv"} <= set(checked):
        print("FAILED:", ", ".join(wrong) or "Saxpy and Sgemv must run")
        sys.exit(1)
    print("CUBLAS VERIFIED")


main()
