"""The first cublasSgemm of a process, cold and warm (issue 21's compile cache target: the second
process's first GEMM at least 20x faster than the first's). Runs the same child twice with one fresh
CUDA_CACHE_PATH, on the future device (where cuBLAS runs its GEMMs from PTX): cublasCreate, then one
256x256x256 Sgemm timed from the call to the end of the device's work; also the whole child's wall
time and peak resident memory.
Usage: LD_LIBRARY_PATH=target/release:NVIDIA_LIBS python3 benches/cublas_first_gemm.py LIBCUBLAS"""

import ctypes as C
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(libcublas):
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
    import numpy as np
    from device_arrays import cuda, device, host

    lib = C.CDLL(libcublas)
    h = C.c_void_p()
    t = time.perf_counter()
    assert lib.cublasCreate_v2(C.byref(h)) == 0
    create = time.perf_counter() - t
    n = 64
    a = np.random.default_rng(3).random((n, n), dtype=np.float32)
    da, db, dc = device(a), device(a), device(np.zeros_like(a))
    one, zero = C.c_float(1), C.c_float(0)
    t = time.perf_counter()
    s = lib.cublasSgemm_v2(h, 0, 0, n, n, n, C.byref(one), da, n, db, n, C.byref(zero), dc, n)
    assert s == 0 and cuda.cuCtxSynchronize() == 0, f"cublasSgemm: status {s}"
    gemm = time.perf_counter() - t
    t = time.perf_counter()
    s = lib.cublasSgemm_v2(h, 0, 0, n, n, n, C.byref(one), da, n, db, n, C.byref(zero), dc, n)
    assert s == 0 and cuda.cuCtxSynchronize() == 0, f"cublasSgemm: status {s}"
    again = time.perf_counter() - t
    got = host(dc, a)  # column-major (a^T a^T)^T, read row-major: a @ a
    assert np.allclose(got, a @ a, rtol=1e-4), "wrong product"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{create * 1e3:.1f} {gemm * 1e3:.1f} {again * 1e3:.1f} {peak:.0f}")


def main():
    libcublas = sys.argv[1]
    env = dict(os.environ, PTXJIT_DEVICE="future")
    with tempfile.TemporaryDirectory() as cache:
        env["CUDA_CACHE_PATH"] = cache
        rows = []
        for run in ("cold", "warm"):
            t = time.perf_counter()
            out = subprocess.run([sys.executable, __file__, "--child", libcublas], env=env, check=True,
                                 capture_output=True, text=True).stdout.split()
            wall = time.perf_counter() - t
            rows.append((run, *map(float, out[:4]), wall))
            # The cold process's background compiles (issue 21's tier-up) finish after it ends and
            # store their code in the cache: the warm process is a later run, not one at that instant.
            time.sleep(2)
    print(f"{'process':8} {'cublasCreate ms':>16} {'first Sgemm ms':>15} {'second ms':>10} {'process s':>10} "
          f"{'peak MB':>8}")
    for run, create, gemm, again, peak, wall in rows:
        print(f"{run:8} {create:16.1f} {gemm:15.1f} {again:10.1f} {wall:10.2f} {peak:8.0f}")
    print(f"first Sgemm: warm {rows[0][2] / rows[1][2]:.1f}x faster than cold")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        main()
