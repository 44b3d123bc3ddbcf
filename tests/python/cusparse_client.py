"""NVIDIA's cuSPARSE, unmodified, on ptx-jit's libcuda.so.1, from the compute_120 PTX it ships (run with
PTXJIT_DEVICE=sm_120): CSR sparse matrix times dense vector (cusparseSpMV) and times dense matrix
(cusparseSpMM, column-major), in single and double precision, plain and transposed, against numpy.
Usage: cusparse_client.py LIBCUSPARSE. Prints CUSPARSE VERIFIED or the cases that differ."""

import ctypes as C
import sys
import time

import numpy as np

from device_arrays import device, host, verdict

lib = C.CDLL(sys.argv[1])
rng = np.random.default_rng(3)
ptr, i64 = C.c_void_p, C.c_int64
INDEX_32I, BASE_ZERO, COL_MAJOR, DEFAULT_ALG = 2, 0, 1, 0
# cudaDataType, and the scalar type of alpha and beta
TYPES = {np.float32: (0, C.c_float), np.float64: (1, C.c_double)}



def check(status, call):
    assert status == 0, f"{call}: status {status}"


def csr(dense, dtype):
    """A CSR descriptor of `dense` on the device."""
    rows = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=1))]).astype(np.int32)
    cols = np.nonzero(dense)[1].astype(np.int32)
    vals = dense[dense != 0].astype(dtype)
    a = ptr()
    m, n = dense.shape
    check(lib.cusparseCreateCsr(C.byref(a), i64(m), i64(n), i64(len(vals)), device(rows), device(cols),
                                device(vals), INDEX_32I, INDEX_32I, BASE_ZERO, TYPES[dtype][0]), "cusparseCreateCsr")
    return a


def workspace(size_call):
    size = C.c_size_t()
    check(size_call(C.byref(size)), "bufferSize")
    return device(np.zeros(max(size.value, 4), np.uint8))


def spmv(h, dense, dtype, op):
    t, scalar = TYPES[dtype]
    a = csr(dense, dtype)
    m, n = dense.shape if op == 0 else dense.shape[::-1]
    x, y = rng.random(n).astype(dtype), np.zeros(m, dtype)
    vx, vy, dy = ptr(), ptr(), device(y)
    check(lib.cusparseCreateDnVec(C.byref(vx), i64(n), device(x), t), "cusparseCreateDnVec")
    check(lib.cusparseCreateDnVec(C.byref(vy), i64(m), dy, t), "cusparseCreateDnVec")
    one, zero = scalar(1), scalar(0)
    args = (h, op, C.byref(one), a, vx, C.byref(zero), vy, t, DEFAULT_ALG)
    buf = workspace(lambda size: lib.cusparseSpMV_bufferSize(*args, size))
    check(lib.cusparseSpMV(*args, buf), "cusparseSpMV")
    want = (dense if op == 0 else dense.T).astype(np.float64) @ x
    return host(dy, y), want


def spmm(h, dense, dtype, op):
    t, scalar = TYPES[dtype]
    a = csr(dense, dtype)
    m, n = dense.shape if op == 0 else dense.shape[::-1]
    k = 8
    b = rng.random((n, k)).astype(dtype)
    mb, mc, dc = ptr(), ptr(), device(np.zeros(m * k, dtype))
    check(lib.cusparseCreateDnMat(C.byref(mb), i64(n), i64(k), i64(n), device(np.asfortranarray(b)), t, COL_MAJOR),
          "cusparseCreateDnMat")
    check(lib.cusparseCreateDnMat(C.byref(mc), i64(m), i64(k), i64(m), dc, t, COL_MAJOR), "cusparseCreateDnMat")
    one, zero = scalar(1), scalar(0)
    args = (h, op, 0, C.byref(one), a, mb, C.byref(zero), mc, t, DEFAULT_ALG)
    buf = workspace(lambda size: lib.cusparseSpMM_bufferSize(*args, size))
    check(lib.cusparseSpMM(*args, buf), "cusparseSpMM")
    got = host(dc, np.zeros(m * k, dtype)).reshape(k, m).T
    return got, (dense if op == 0 else dense.T).astype(np.float64) @ b


def main():
    h = ptr()
    check(lib.cusparseCreate(C.byref(h)), "cusparseCreate")
    dense = rng.random((200, 150)) * (rng.random((200, 150)) < 0.05)
    failures = []
    for name, run in [("SpMV", spmv), ("SpMM", spmm)]:
        for dtype in (np.float32, np.float64):
            for op in (0, 1):
                t = time.time()
                got, want = run(h, dense, dtype, op)
                tol = 1e-5 if dtype == np.float32 else 1e-12
                err = np.abs(got - want).max() / np.abs(want).max()
                what = f"{name} {np.dtype(dtype).name} {'A' if op == 0 else 'A^T'}"
                print(f"{what:20} relative error {err:.1e} ({time.time() - t:.2f} s)")
                if not err <= tol:
                    failures.append(what)
    verdict("CUSPARSE", failures)


main()
