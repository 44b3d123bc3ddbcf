"""NVIDIA's cuRAND, unmodified, on ptx-jit's libcuda.so.1: the library's own kernels (the compute_121
PTX it ships, so run with PTXJIT_DEVICE=sm_121) against its host generator (curandCreateGeneratorHost),
which computes the same sequences on the CPU.

For every generator but MT19937 (its set-up kernel, a jump-ahead of 128 x 512 threads, takes about
20 s on a 2-core machine), with a seed and an offset (pseudo-random) or a dimension count (quasi-random):
raw bits, uniform floats and doubles and Poisson draws are compared bit for bit; normal and log-normal
draws within 1e-5 relative to max(1, |value|) (their kernels use the GPU's approximate sine,
cosine and logarithm, whose exact bits a CPU does not reproduce; the host generator's double-precision
normals from MTGP32 carry only float precision), and the share of exact ones is printed.
Usage: curand_client.py LIBCURAND [SAVE.npz]. Prints CURAND VERIFIED or the cases that differ; with
SAVE.npz, also writes every device result there (tests/gpu/pending_on_device.sh keeps a GPU's, to
compare with ptx-jit's bit for bit)."""

import ctypes as C
import sys
import time

import numpy as np

from device_arrays import cuda, device, host, use_primary_context

lib = C.CDLL(sys.argv[1])

PSEUDO = {"XORWOW": 101, "MRG32K3A": 121, "MTGP32": 141, "PHILOX4_32_10": 161}
QUASI = {"SOBOL32": 201, "SCRAMBLED_SOBOL32": 202, "SOBOL64": 203, "SCRAMBLED_SOBOL64": 204}
TYPE_ERROR = 103
N = 1 << 14
# Normal and log-normal draws: difference relative to max(1, |value|). The GPU's approximate functions
# are within about 2^-21 (sine and cosine: absolute; base-2 logarithm: relative), scaled by a radius
# of up to about 6 standard deviations.
TOLERANCE = 1e-5
f32, f64 = C.c_float, C.c_double

# (function, element type, extra arguments, exact)
CASES = [
    ("curandGenerate", np.uint32, (), True),
    ("curandGenerateLongLong", np.uint64, (), True),
    ("curandGenerateUniform", np.float32, (), True),
    ("curandGenerateUniformDouble", np.float64, (), True),
    ("curandGeneratePoisson", np.uint32, (f64(4.5),), True),
    ("curandGenerateNormal", np.float32, (f32(1.5), f32(2.0)), False),
    ("curandGenerateLogNormal", np.float32, (f32(0.5), f32(0.25)), False),
    ("curandGenerateNormalDouble", np.float64, (f64(1.0), f64(3.0)), False),
]


def generate(kind, on_host, fn, dtype, extra):
    """(status, values) of one generator run on the device (through libcuda) or on the host."""
    g = C.c_void_p()
    create = lib.curandCreateGeneratorHost if on_host else lib.curandCreateGenerator
    status = create(C.byref(g), kind)
    if status:
        return status, None
    if kind in QUASI.values():
        lib.curandSetQuasiRandomGeneratorDimensions(g, 2)
    else:
        lib.curandSetPseudoRandomGeneratorSeed(g, C.c_ulonglong(1234))
        lib.curandSetGeneratorOffset(g, C.c_ulonglong(77))
    out = np.zeros(N, dtype)
    if on_host:
        status = getattr(lib, fn)(g, out.ctypes.data_as(C.c_void_p), C.c_size_t(N), *extra)
    else:
        d = device(out)
        status = getattr(lib, fn)(g, d, C.c_size_t(N), *extra)
        if status == 0:
            out = host(d, out)
        cuda.cuMemFree_v2(C.c_uint64(d.value))
    lib.curandDestroyGenerator(g)
    return status, out


def main():
    use_primary_context()
    failures, compared, saved = [], 0, {}
    for name, kind in {**PSEUDO, **QUASI}.items():
        for fn, dtype, extra, exact in CASES:
            t = time.time()
            (s_dev, dev_out), (s_host, host_out) = (generate(kind, h, fn, dtype, extra) for h in (False, True))
            what = f"{name:18} {fn:28}"
            if s_dev != s_host:
                failures.append(f"{what} status {s_dev} on the device, {s_host} on the host")
                continue
            if s_dev:
                # The generator does not make this type (64-bit draws of a 32-bit generator).
                assert s_dev == TYPE_ERROR, f"{what} status {s_dev}"
                continue
            compared += 1
            saved[f"{name}.{fn}"] = dev_out
            bits = np.dtype(f"u{dev_out.itemsize}")
            same = dev_out.view(bits) == host_out.view(bits)
            share = f"{100 * np.mean(same):6.2f}% exact"
            if exact:
                ok = bool(same.all())
            else:
                err = np.abs(dev_out.astype(np.float64) - host_out) / np.maximum(1.0, np.abs(host_out))
                share += f", worst {err.max():.1e}"
                ok = bool(err.max() <= TOLERANCE)
            print(f"{what} {share} {'ok' if ok else 'DIFFERS'} ({time.time() - t:.2f} s)")
            if not ok:
                failures.append(f"{what} {share}: {dev_out[:3]} against {host_out[:3]}")
    assert compared >= 50, compared
    if len(sys.argv) > 2:
        np.savez_compressed(sys.argv[2], **saved)
    if failures:
        print("\n".join(["FAILED:"] + failures))
        sys.exit(1)
    print(f"CURAND VERIFIED ({compared} generator and distribution pairs)")


main()
