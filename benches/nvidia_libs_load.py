"""Loads every fat binary that NVIDIA's libraries carry, the way their CUDA runtime does at start-up
(`cuLibraryLoadData` on each image of the `.nv_fatbin` section), through ptx-jit's libcuda.so.1: the
lazy load's wall time and resident memory, per library and in all. The issue's target (issue 21):
cuBLAS and cuBLASLt (322 MB of PTX) in under 2 s and 500 MB.
Usage: PTXJIT_DEVICE=sm_120 LD_LIBRARY_PATH=target/release python3 benches/nvidia_libs_load.py LIB.so...
"""

import ctypes as C
import resource
import struct
import sys
import time

FATBIN_MAGIC = 0xBA55ED50


def section(path, name):
    """The bytes of ELF64 section `name`."""
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx]
    for h in headers:
        start = names[4] + h[0]
        if data[start:data.index(b"\0", start)].decode() == name:
            return data[h[4]:h[4] + h[5]]
    raise SystemExit(f"{path}: no {name} section")


def fatbins(blob):
    """The fat binaries laid end to end in a `.nv_fatbin` section (16-byte header: magic, version,
    header size, then the size of the entries)."""
    at = 0
    while at + 16 <= len(blob):
        magic, _version, header, size = struct.unpack_from("<IHHQ", blob, at)
        if magic != FATBIN_MAGIC:
            at += 8  # padding between images
            continue
        yield blob[at:at + header + size]
        at += header + size


def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20


def main():
    cuda = C.CDLL("libcuda.so.1")
    assert cuda.cuInit(0) == 0
    images = {path: [C.create_string_buffer(f, len(f)) for f in fatbins(section(path, ".nv_fatbin"))] for path in sys.argv[1:]}
    base = rss_mb()
    total, loaded, failed, kept = 0.0, 0, 0, []
    for path, bufs in images.items():
        t = time.time()
        ok = 0
        for b in bufs:
            lib = C.c_void_p()
            r = cuda.cuLibraryLoadData(C.byref(lib), b, None, None, 0, None, None, 0)
            ok += r == 0
            kept.append(lib)
        dt = time.time() - t
        total += dt
        loaded += ok
        failed += len(bufs) - ok
        print(f"{path.rsplit('/', 1)[-1]}: {len(bufs)} images, {ok} loaded, {dt * 1e3:.0f} ms")
    print(f"all: {loaded} loaded, {failed} refused (no PTX for the device), {total:.2f} s, "
          f"+{rss_mb() - base:.0f} MB resident (peak of the process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB)")


main()
