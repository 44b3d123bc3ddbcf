"""CuPy, unmodified, on ptx-jit's libcuda.so.1 (run with PTXJIT_DEVICE=future and CUPY_COMPILE_WITH_PTX=1):
its own kernels (elementwise, CUB reductions, sort) and the NVIDIA libraries it calls — cuBLAS
(`cupy.matmul`), cuRAND (`cupy.random`) and cuFFT (`cupy.fft`) — against numpy in float64.
Prints CUPY VERIFIED or the checks that fail."""

import sys

import cupy as cp
import numpy as np

rng = np.random.default_rng(5)
checks = []


def check(name, ok):
    checks.append((name, bool(ok)))
    print(f"{'ok' if ok else 'FAILED':6} {name}")


a = rng.random(100_000).astype(np.float32)
d = cp.asarray(a)
check("elementwise a * 2 + 1", np.array_equal(cp.asnumpy(d * 2 + 1), a * 2 + 1))
check("CUB sum", abs(float(d.sum()) - a.astype(np.float64).sum()) <= 1e-6 * a.size)
check("CUB argmax", int(d.argmax()) == int(a.argmax()))
check("sort", np.array_equal(cp.asnumpy(cp.sort(d)), np.sort(a)))
for m, k, n in [(128, 96, 80), (257, 129, 65)]:
    x, y = rng.random((m, k)).astype(np.float32), rng.random((k, n)).astype(np.float32)
    got = cp.asnumpy(cp.matmul(cp.asarray(x), cp.asarray(y)))
    want = x.astype(np.float64) @ y
    check(f"matmul {m}x{k}x{n} (cuBLAS)", np.abs(got - want).max() <= 4 * 2.0**-24 * k * np.abs(want).max())
z = rng.random((64, 48)) + 1j * rng.random((64, 48))
got = cp.asnumpy(cp.fft.fft2(cp.asarray(z)))
check("fft2 complex128 64x48 (cuFFT)", np.abs(got - np.fft.fft2(z)).max() <= 1e-12 * np.abs(got).max())
r = rng.random(1000).astype(np.float32)
got = cp.asnumpy(cp.fft.rfft(cp.asarray(r)))
check("rfft float32 1000 (cuFFT)", np.abs(got - np.fft.rfft(r.astype(np.float64))).max() <= 1e-5 * np.abs(got).max())
u = cp.asnumpy(cp.random.default_rng(1).random(200_000, dtype=cp.float32))
check("random uniform (cuRAND): in [0, 1), mean and variance",
      0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002)
v = cp.asnumpy(cp.random.RandomState(3).standard_normal(200_000, dtype=cp.float64))
check("random normal (cuRAND): mean and variance", abs(v.mean()) < 0.01 and abs(v.var() - 1) < 0.01)
failed = [n for n, ok in checks if not ok]
if failed:
    print("FAILED:", ", ".join(failed))
    sys.exit(1)
print("CUPY VERIFIED")
