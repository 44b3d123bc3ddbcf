"""NVIDIA's cuBLAS, unmodified, on ptx-jit's libcuda.so.1, from the PTX it ships (run with
PTXJIT_DEVICE=future: on a device newer than every architecture it was built for, cuBLASLt runs the
GEMM kernels it ships as compute_120 PTX for forward compatibility; on sm_120 it picks kernels that
ship as machine code only). cublasCreate, then level-1, level-2 and the GEMM family against numpy in
float64, each within a bound for its precision: float32 and float64 results within a few ulps times
the reduction length; TF32 and half precision within their formats' rounding. A routine that cannot
run must fail with a cuBLAS status (never a crash) and is listed; the ones in REQUIRED (or named by
--required) must run.
Usage: cublas_client.py LIBCUBLAS [--required NAME,…]. Prints CUBLAS VERIFIED or the routines that fail
their check."""

import ctypes as C
import sys
import time

import numpy as np

from device_arrays import device, host, verdict

lib = C.CDLL(sys.argv[1])
rng = np.random.default_rng(7)
ptr = C.c_void_p
# cublasOperation_t, cudaDataType, cublasComputeType_t and cublasGemmAlgo_t values (cublas_api.h, library_types.h).
N, T = 0, 1
R_32F, R_16F, R_16BF = 0, 2, 14
COMPUTE_32F, COMPUTE_32F_FAST_TF32 = 68, 77
GEMM_DEFAULT = -1
REQUIRED = {"Saxpy", "Sgemv", "Sdot", "Snrm2", "Sgemm", "Sgemm TN", "Dgemm", "Cgemm", "Hgemm", "SgemmStridedBatched",
            "SgemmBatched", "GemmEx f16", "GemmEx bf16", "GemmEx tf32"}


def within(got, want, eps, k):
    """|got - want| <= eps * k * (|A| |B| row-column sums), the usual bound for a length-k dot product."""
    got, want = np.asarray(got, np.complex128), np.asarray(want[0], np.complex128)
    return bool(np.all(np.abs(got - want) <= eps * max(k, 1) * want_scale(want) + 1e-30))


def want_scale(want):
    return np.maximum(np.abs(want), np.abs(want).max() * 1e-3)


def scalar(dtype, v):
    a = np.array([v], dtype=dtype)
    return a, a.ctypes.data_as(ptr)


def bf16(a):
    """float32 values that bfloat16 holds exactly (the upper half of each float32)."""
    return (a.astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)


def operand(a, trans, as_bf16=False):
    """A column-major device copy of `a` as cuBLAS's op() undoes `trans` (bfloat16 bits if asked), and
    its leading dimension."""
    stored = a.T if trans == T else a
    flat = np.asfortranarray(stored).ravel(order="F")
    if as_bf16:
        flat = (flat.view(np.uint32) >> 16).astype(np.uint16)
    return device(flat), stored.shape[0]


def gemm_case(routine, dtype, m, n, k, ta=N, tb=N, ex=None):
    """C = op(A) op(B) through `routine`: returns (status, check)."""
    cplx = np.issubdtype(dtype, np.complexfloating)
    def rand(shape):
        return (rng.random(shape) + 1j * rng.random(shape) if cplx else rng.random(shape)).astype(dtype)

    A, B = rand((m, k)), rand((k, n))
    as_bf16 = bool(ex) and ex[0] == R_16BF
    if as_bf16:
        A, B = bf16(A), bf16(B)
    dA, lda = operand(A, ta, as_bf16)
    dB, ldb = operand(B, tb, as_bf16)
    Cz = np.zeros((m, n), dtype=np.float32 if ex and ex[2] == R_32F else dtype, order="F")
    dC = device(Cz.ravel(order="F"))
    sdt = np.float32 if ex else dtype
    one, p1 = scalar(sdt, 1)
    zero, p0 = scalar(sdt, 0)
    if ex:
        s = lib.cublasGemmEx(h, ta, tb, m, n, k, p1, dA, ex[0], lda, dB, ex[1], ldb, p0, dC, ex[2], m, ex[3],
                             GEMM_DEFAULT)
    else:
        s = routine(h, ta, tb, m, n, k, p1, dA, lda, dB, ldb, p0, dC, m)
    want = A.astype(np.complex128 if cplx else np.float64) @ B.astype(np.complex128 if cplx else np.float64)
    return s, lambda eps: within(host(dC, Cz.ravel(order="F")).reshape((m, n), order="F"), (want,), eps, k)


def main():
    global h
    h = ptr()
    status = lib.cublasCreate_v2(C.byref(h))
    assert status == 0, f"cublasCreate: status {status}"
    n, m = 1000, 64
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    A = rng.random((m, m), dtype=np.float32)
    v = rng.random(m, dtype=np.float32)
    f32 = 2.0**-24
    alpha = C.c_float(2.5)
    one, zero = C.c_float(1.0), C.c_float(0.0)
    result = C.c_float()

    def saxpy():
        dx, dy = device(x), device(y)
        s = lib.cublasSaxpy_v2(h, n, C.byref(alpha), dx, 1, dy, 1)
        return s, lambda: within(host(dy, y), (2.5 * x.astype(np.float64) + y,), 2 * f32, 1)

    def sgemv():
        dA, dv, dout = device(np.asfortranarray(A).ravel(order="F")), device(v), device(np.zeros(m, np.float32))
        s = lib.cublasSgemv_v2(h, N, m, m, C.byref(one), dA, m, dv, 1, C.byref(zero), dout, 1)
        return s, lambda: within(host(dout, v), (A.astype(np.float64) @ v,), 2 * f32, m)

    def sdot():
        s = lib.cublasSdot_v2(h, n, device(x), 1, device(y), 1, C.byref(result))
        return s, lambda: within(result.value, (np.dot(x.astype(np.float64), y),), 2 * f32, n)

    def snrm2():
        s = lib.cublasSnrm2_v2(h, n, device(x), 1, C.byref(result))
        return s, lambda: within(result.value, (np.linalg.norm(x.astype(np.float64)),), 2 * f32, n)

    def strided_batched():
        batch, mm, nn, kk = 3, 33, 17, 45
        As = rng.random((batch, mm, kk), dtype=np.float32)
        Bs = rng.random((batch, kk, nn), dtype=np.float32)
        dA = device(np.concatenate([np.asfortranarray(a).ravel(order="F") for a in As]))
        dB = device(np.concatenate([np.asfortranarray(b).ravel(order="F") for b in Bs]))
        out = np.zeros(batch * mm * nn, np.float32)
        dC = device(out)
        s = lib.cublasSgemmStridedBatched(h, N, N, mm, nn, kk, C.byref(one), dA, mm, C.c_longlong(mm * kk), dB, kk,
                                          C.c_longlong(kk * nn), C.byref(zero), dC, mm, C.c_longlong(mm * nn), batch)
        want = np.concatenate([(a.astype(np.float64) @ b).ravel(order="F") for a, b in zip(As, Bs)])
        return s, lambda: within(host(dC, out), (want,), 2 * f32, kk)

    def batched():
        batch, mm = 4, 24
        As = [rng.random((mm, mm), dtype=np.float32) for _ in range(batch)]
        Bs = [rng.random((mm, mm), dtype=np.float32) for _ in range(batch)]
        dAs = [device(np.asfortranarray(a).ravel(order="F")) for a in As]
        dBs = [device(np.asfortranarray(b).ravel(order="F")) for b in Bs]
        outs = [np.zeros(mm * mm, np.float32) for _ in range(batch)]
        dCs = [device(o) for o in outs]
        table = lambda ds: device(np.array([d.value for d in ds], dtype=np.uint64))
        s = lib.cublasSgemmBatched(h, N, N, mm, mm, mm, C.byref(one), table(dAs), mm, table(dBs), mm, C.byref(zero),
                                   table(dCs), mm, batch)
        return s, lambda: all(
            within(host(d, o), ((a.astype(np.float64) @ b).ravel(order="F"),), 2 * f32, mm)
            for d, o, a, b in zip(dCs, outs, As, Bs))

    def case(*a, eps, **kw):
        def run():
            s, check = gemm_case(*a, **kw)
            return s, lambda: check(eps)
        return run

    routines = [
        ("Saxpy", saxpy), ("Sgemv", sgemv), ("Sdot", sdot), ("Snrm2", snrm2),
        ("Sgemm", case(lib.cublasSgemm_v2, np.float32, 64, 64, 64, eps=2 * f32)),
        ("Sgemm TN", case(lib.cublasSgemm_v2, np.float32, 37, 53, 71, T, N, eps=2 * f32)),
        ("Dgemm", case(lib.cublasDgemm_v2, np.float64, 40, 30, 50, N, T, eps=2 * 2.0**-53)),
        ("Cgemm", case(lib.cublasCgemm_v2, np.complex64, 20, 24, 28, eps=4 * f32)),
        ("Hgemm", case(lib.cublasHgemm, np.float16, 32, 40, 24, eps=2.0**-10)),
        ("SgemmStridedBatched", strided_batched), ("SgemmBatched", batched),
        ("GemmEx f16", case(None, np.float16, 64, 48, 32, ex=(R_16F, R_16F, R_32F, COMPUTE_32F), eps=2 * f32)),
        ("GemmEx bf16", case(None, np.float32, 64, 48, 32, ex=(R_16BF, R_16BF, R_32F, COMPUTE_32F), eps=2 * f32)),
        ("GemmEx tf32", case(None, np.float32, 64, 64, 64, ex=(R_32F, R_32F, R_32F, COMPUTE_32F_FAST_TF32),
                             eps=2.0**-10)),
    ]
    checked, refused, wrong = [], [], []
    for name, run in routines:
        t = time.time()
        s, check = run()
        if s != 0:
            refused.append(f"{name} (status {s})")
        elif check():
            checked.append(name)
        else:
            wrong.append(name)
        print(f"cublas{name:20} status {s} ({time.time() - t:.2f} s)")
    print("verified:", ", ".join(checked) or "none")
    print("refused with a status:", ", ".join(refused) or "none")
    required = set(sys.argv[3].split(",")) if sys.argv[2:3] == ["--required"] else REQUIRED
    missing = required - set(checked)
    verdict("CUBLAS", wrong + sorted(missing))


main()
