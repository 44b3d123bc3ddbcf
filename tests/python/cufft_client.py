"""NVIDIA's cuFFT, unmodified, on ptx-jit's libcuda.so.1, from the PTX it ships in its private fat
binaries (run with PTXJIT_DEVICE=future: for the architectures it knows, cuFFT picks modules of machine
code only). Plans and runs 1-D and 2-D transforms, complex-to-complex both ways, real-to-complex and
complex-to-real, in single and double precision, for power-of-two, composite and prime sizes (a prime
size takes cuFFT's Bluestein path) and batches, against numpy's FFT in float64: the largest error
within a few units in the last place times log2 of the size, relative to the largest output.
Usage: cufft_client.py LIBCUFFT. Prints CUFFT VERIFIED or the transforms that fail their check."""

import ctypes as C
import sys
import time

import numpy as np

from device_arrays import device, host, use_primary_context, verdict

lib = C.CDLL(sys.argv[1])
rng = np.random.default_rng(11)
# cufftType and directions (cufft.h).
R2C, C2R, C2C, D2Z, Z2D, Z2Z = 0x2A, 0x2C, 0x29, 0x6A, 0x6C, 0x69
FORWARD, INVERSE = -1, 1


def plan(shape, kind, batch):
    p = C.c_int()
    if len(shape) == 1:
        s = lib.cufftPlan1d(C.byref(p), shape[0], kind, batch)
    else:
        s = lib.cufftPlan2d(C.byref(p), shape[0], shape[1], kind)
    return s, p


def transform(shape, kind, batch=1, direction=FORWARD):
    """Runs one transform; returns (status, error relative to the largest output, bound)."""
    double = kind in (D2Z, Z2D, Z2Z)
    real_t, cplx_t = (np.float64, np.complex128) if double else (np.float32, np.complex64)
    eps = np.finfo(real_t).eps
    n = int(np.prod(shape))
    axes = tuple(range(1, len(shape) + 1))
    half = shape[:-1] + (shape[-1] // 2 + 1,)
    if kind in (C2C, Z2Z):
        x = (rng.standard_normal((batch,) + shape) + 1j * rng.standard_normal((batch,) + shape)).astype(cplx_t)
        want = np.fft.fftn(x.astype(np.complex128), axes=axes) if direction == FORWARD else \
            np.fft.ifftn(x.astype(np.complex128), axes=axes) * n
        out = np.zeros_like(x)
    elif kind in (R2C, D2Z):
        x = rng.standard_normal((batch,) + shape).astype(real_t)
        want = np.fft.rfftn(x.astype(np.float64), axes=axes)
        out = np.zeros((batch,) + half, cplx_t)
    else:  # C2R, Z2D: the spectrum of a real signal back to it (unnormalised, as cuFFT)
        signal = rng.standard_normal((batch,) + shape)
        x = np.fft.rfftn(signal, axes=axes).astype(cplx_t)
        want = np.fft.irfftn(x.astype(np.complex128), s=shape, axes=axes) * n
        out = np.zeros((batch,) + shape, real_t)
    s, p = plan(shape, kind, batch)
    if s != 0:
        return s, None, None
    din, dout = device(np.ascontiguousarray(x)), device(out)
    run = {
        C2C: lambda: lib.cufftExecC2C(p, din, dout, direction),
        Z2Z: lambda: lib.cufftExecZ2Z(p, din, dout, direction),
        R2C: lambda: lib.cufftExecR2C(p, din, dout),
        D2Z: lambda: lib.cufftExecD2Z(p, din, dout),
        C2R: lambda: lib.cufftExecC2R(p, din, dout),
        Z2D: lambda: lib.cufftExecZ2D(p, din, dout),
    }[kind]
    s = run()
    got = host(dout, out)
    lib.cufftDestroy(p)
    if s != 0:
        return s, None, None
    err = np.abs(got - want).max() / np.abs(want).max()
    return 0, err, 8 * eps * np.log2(max(n, 2))


def main():
    use_primary_context()
    cases = [
        ("C2C 1-D 256 forward", (256,), C2C, 1, FORWARD),
        ("C2C 1-D 96 inverse, 3 batches", (96,), C2C, 3, INVERSE),
        ("C2C 1-D 97 (prime)", (97,), C2C, 1, FORWARD),
        ("Z2Z 1-D 120", (120,), Z2Z, 2, FORWARD),
        ("R2C 1-D 128", (128,), R2C, 2, FORWARD),
        ("D2Z 1-D 100", (100,), D2Z, 1, FORWARD),
        ("C2R 1-D 64", (64,), C2R, 1, INVERSE),
        ("Z2D 1-D 48", (48,), Z2D, 1, INVERSE),
        ("C2C 2-D 16x24", (16, 24), C2C, 1, FORWARD),
        ("Z2Z 2-D 12x10 inverse", (12, 10), Z2Z, 1, INVERSE),
        ("R2C 2-D 32x16", (32, 16), R2C, 1, FORWARD),
        ("D2Z 2-D 8x20", (8, 20), D2Z, 1, FORWARD),
    ]
    failed = []
    for name, shape, kind, batch, direction in cases:
        t = time.time()
        s, err, bound = transform(shape, kind, batch, direction)
        ok = s == 0 and err <= bound
        detail = f"status {s}" if s != 0 else f"error {err:.2e} (bound {bound:.2e})"
        print(f"cufft {name:32} {detail} ({time.time() - t:.2f} s)")
        if not ok:
            failed.append(name)
    verdict("CUFFT", failed)


main()
