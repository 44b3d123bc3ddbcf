"""Fat binaries, libraries and the linker through the driver API's C ABI (ctypes on libcuda.so.1).

The fat binaries are made here, at test time, by the venv's nvcc: several PTX architectures (the
driver must pick the highest not above the device's), each compression mode nvcc has (zstd by
default, LZ4 with --compress-mode=speed, none), machine code only (no PTX: an error), and damaged
images (an error, never a crash). The linker gets PTX from NVRTC compiled with -rdc, one module
calling a function another defines. Usage: fatbin_link_client.py NVCC. Exits non-zero on a mismatch.
"""
import ctypes as C
import os
import subprocess
import sys
import tempfile

import numpy as np
from cuda.bindings import nvrtc

cu = C.CDLL("libcuda.so.1")
SUCCESS, INVALID_VALUE, INVALID_IMAGE, NO_BINARY, INVALID_PTX, NOT_SUPPORTED = 0, 1, 200, 209, 218, 801

# The kernel says which architecture's PTX ran: out[i] = 2*in[i] + __CUDA_ARCH__.
KERNEL = r"""
extern "C" __global__ void tag(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2 * in[i] + __CUDA_ARCH__;
}
"""

failures = 0


def report(what, ok, detail=""):
    global failures
    print(f"{what:<58} {'verified' if ok else 'MISMATCH'} {detail}")
    failures += not ok


def call(name, *args):
    return getattr(cu, name)(*args)


def ok(r, what):
    if r != SUCCESS:
        raise RuntimeError(f"{what} failed with CUresult {r}")


def run_tag(func, n=1000):
    """Launches `tag` and returns the architecture it reports, or None when the results disagree."""
    a = np.arange(n, dtype=np.int32) * 3 - 500
    din, dout = C.c_uint64(), C.c_uint64()
    ok(call("cuMemAlloc_v2", C.byref(din), C.c_size_t(a.nbytes)), "cuMemAlloc")
    ok(call("cuMemAlloc_v2", C.byref(dout), C.c_size_t(a.nbytes)), "cuMemAlloc")
    ok(call("cuMemcpyHtoD_v2", din, a.ctypes.data_as(C.c_void_p), C.c_size_t(a.nbytes)), "cuMemcpyHtoD")
    cn = C.c_int(n)
    params = (C.c_void_p * 3)(C.addressof(din), C.addressof(dout), C.addressof(cn))
    ok(call("cuLaunchKernel", func, 8, 1, 1, 128, 1, 1, 0, None, params, None), "cuLaunchKernel")
    got = np.zeros(n, dtype=np.int32)
    ok(call("cuMemcpyDtoH_v2", got.ctypes.data_as(C.c_void_p), dout, C.c_size_t(a.nbytes)), "cuMemcpyDtoH")
    call("cuMemFree_v2", din)
    call("cuMemFree_v2", dout)
    arch = got - 2 * a
    return int(arch[0]) if np.all(arch == arch[0]) else None


def fatbin(nvcc, tmp, name, *flags):
    src = os.path.join(tmp, "tag.cu")
    with open(src, "w") as f:
        f.write(KERNEL)
    out = os.path.join(tmp, name)
    subprocess.run([nvcc, "-fatbin", *flags, src, "-o", out], check=True)
    with open(out, "rb") as f:
        return f.read()


def module_function(image_bytes, loader="cuModuleLoadData"):
    buf = C.create_string_buffer(image_bytes, len(image_bytes))
    mod, func = C.c_void_p(), C.c_void_p()
    r = call(loader, C.byref(mod), buf)
    if r != SUCCESS:
        return r, None
    ok(call("cuModuleGetFunction", C.byref(func), mod, b"tag"), "cuModuleGetFunction")
    return r, (mod, func)


def nvrtc_ptx(src, name, rdc):
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), name.encode(), 0, [], [])
    opts = [b"--gpu-architecture=compute_80"] + ([b"-rdc=true"] if rdc else [])
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    err, size = nvrtc.nvrtcGetPTXSize(prog)
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(prog, ptx)
    return ptx


def main(nvcc):
    ok(call("cuInit", 0), "cuInit")
    dev, ctx = C.c_int(), C.c_void_p()
    ok(call("cuDeviceGet", C.byref(dev), 0), "cuDeviceGet")
    ok(call("cuCtxCreate_v2", C.byref(ctx), 0, dev), "cuCtxCreate")
    major, minor = C.c_int(), C.c_int()
    call("cuDeviceGetAttribute", C.byref(major), 75, dev)
    call("cuDeviceGetAttribute", C.byref(minor), 76, dev)
    cc = major.value * 10 + minor.value
    print(f"device compute capability {major.value}.{minor.value}")

    with tempfile.TemporaryDirectory() as tmp:
        gen = lambda *cs: [x for c in cs for x in ("-gencode", f"arch=compute_{c},code=compute_{c}")]
        # The best PTX: the highest architecture not above the device's.
        archs = (75, 80, 90)
        best = max(a for a in archs if a <= cc)
        for mode in ("default", "speed", "none"):
            image = fatbin(nvcc, tmp, f"multi_{mode}.fatbin", f"--compress-mode={mode}", *gen(*archs))
            r, mf = module_function(image)
            arch = run_tag(mf[1]) if mf else None
            report(f"fatbin {archs} PTX, --compress-mode={mode}", r == SUCCESS and arch == best * 10, f"(ran compute_{arch and arch // 10})")
        image = fatbin(nvcc, tmp, "all.fatbin", "-Xfatbin", "-compress-all", *gen(75))
        r, mf = module_function(image, "cuModuleLoadFatBinary")
        report("cuModuleLoadFatBinary, -Xfatbin -compress-all", r == SUCCESS and run_tag(mf[1]) == 750)

        # A library from a fatbin: kernel handle, function handle and module agree.
        image = fatbin(nvcc, tmp, "lib.fatbin", *gen(75, 80))
        buf = C.create_string_buffer(image, len(image))
        lib, kern, func, mod, func2 = (C.c_void_p() for _ in range(5))
        ok(call("cuLibraryLoadData", C.byref(lib), buf, None, None, 0, None, None, 0), "cuLibraryLoadData")
        ok(call("cuLibraryGetKernel", C.byref(kern), lib, b"tag"), "cuLibraryGetKernel")
        ok(call("cuKernelGetFunction", C.byref(func), kern), "cuKernelGetFunction")
        ok(call("cuLibraryGetModule", C.byref(mod), lib), "cuLibraryGetModule")
        ok(call("cuModuleGetFunction", C.byref(func2), mod, b"tag"), "cuModuleGetFunction")
        report("cuLibraryLoadData + cuLibraryGetKernel + cuKernelGetFunction", run_tag(func) == 800 and run_tag(func2) == 800)
        missing = C.c_void_p()
        report("cuLibraryGetKernel of a missing name -> CUDA_ERROR_NOT_FOUND", call("cuLibraryGetKernel", C.byref(missing), lib, b"nope") == 500)
        ok(call("cuLibraryUnload", lib), "cuLibraryUnload")
        report("cuLibraryGetKernel after cuLibraryUnload -> INVALID_HANDLE", call("cuLibraryGetKernel", C.byref(missing), lib, b"tag") == 400)

        # A library from a file, and a fatbin as a linker input (its best PTX entry is linked).
        lib_path = os.path.join(tmp, "lib.fatbin")
        ok(call("cuLibraryLoadFromFile", C.byref(lib), lib_path.encode(), None, None, 0, None, None, 0), "cuLibraryLoadFromFile")
        ok(call("cuLibraryGetKernel", C.byref(kern), lib, b"tag"), "cuLibraryGetKernel")
        report("cuLibraryLoadFromFile of a fatbin", run_tag(kern) == 800)
        ok(call("cuLibraryUnload", lib), "cuLibraryUnload")
        state, linked_image, linked_size = C.c_void_p(), C.c_void_p(), C.c_size_t()
        ok(call("cuLinkCreate_v2", 0, None, None, C.byref(state)), "cuLinkCreate")
        ok(call("cuLinkAddData_v2", state, 2, buf, C.c_size_t(len(image)), b"lib.fatbin", 0, None, None), "cuLinkAddData(fatbin)")
        ok(call("cuLinkComplete", state, C.byref(linked_image), C.byref(linked_size)), "cuLinkComplete")
        r, mf = module_function(C.string_at(linked_image, linked_size.value))
        report("cuLinkAddData of a fatbin (CU_JIT_INPUT_FATBINARY)", r == SUCCESS and run_tag(mf[1]) == 800)
        call("cuLinkDestroy", state)

        # No PTX for this device: machine code only, or PTX only for a newer architecture.
        cubin_only = fatbin(nvcc, tmp, "sm75.fatbin", "-gencode", "arch=compute_75,code=sm_75")
        report("fatbin with only an sm_75 cubin -> NO_BINARY_FOR_GPU", module_function(cubin_only)[0] == NO_BINARY)
        newer = fatbin(nvcc, tmp, "c90.fatbin", *gen(90))
        report("fatbin with only compute_90 PTX -> NO_BINARY_FOR_GPU", module_function(newer)[0] == NO_BINARY)
        # Damaged images are errors, not crashes.
        good = fatbin(nvcc, tmp, "d.fatbin", *gen(75))
        bad_size = bytearray(good)
        bad_size[8:16] = (1 << 40).to_bytes(8, "little")
        bad_entry = bytearray(good)
        bad_entry[16 + 8 : 16 + 16] = (1 << 20).to_bytes(8, "little")
        bad_zstd = bytearray(good)
        bad_zstd[16 + 80 : 16 + 120] = bytes(40)
        results = [module_function(bytes(b))[0] for b in (bad_size, bad_entry, bad_zstd, good[:24])]
        report("damaged fatbins -> INVALID_IMAGE", results == [INVALID_IMAGE] * 4, str(results))

    # cuModuleLoadDataEx: the error log names the problem, the sizes and wall time come back.
    opts = (C.c_int * 5)(5, 6, 3, 4, 2)  # ERROR_LOG_BUFFER, its size, INFO_LOG_BUFFER, its size, WALL_TIME
    elog, ilog = C.create_string_buffer(1024), C.create_string_buffer(1024)
    vals = (C.c_void_p * 5)(C.cast(elog, C.c_void_p), 1024, C.cast(ilog, C.c_void_p), 1024, 0)
    mod = C.c_void_p()
    bad_ptx = b".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { frobnicate; ret; }\n\0"
    # Loaded lazily (the default) with no error log asked for, an instruction ptx-jit does not know
    # (which may be valid PTX beyond it) fails the kernel where it is looked up; PTX that is invalid
    # for sure (an undeclared register) fails the load, as NVIDIA's driver fails it (an H200, lazy or
    # not); with an error log, every error fails the load and is in the log.
    r = call("cuModuleLoadData", C.byref(mod), bad_ptx)
    f = C.c_void_p()
    r2 = call("cuModuleGetFunction", C.byref(f), mod, b"k") if r == SUCCESS else r
    report("lazy load of unknown PTX fails at cuModuleGetFunction", r == SUCCESS and r2 == NOT_SUPPORTED, f"{r} {r2}")
    invalid_ptx = b".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { mov.u32 %r9, 1; ret; }\n\0"
    r = call("cuModuleLoadData", C.byref(mod), invalid_ptx)
    report("lazy load of invalid PTX fails at cuModuleLoadData", r == INVALID_PTX, str(r))
    r = call("cuModuleLoadDataEx", C.byref(mod), bad_ptx, 5, opts, vals)
    text = elog.value.decode()
    report("cuModuleLoadDataEx error log on bad PTX", r in (INVALID_PTX, NOT_SUPPORTED) and "frobnicate" in text and vals[1] == len(text) + 1, repr(text[:70]))
    vals = (C.c_void_p * 5)(C.cast(elog, C.c_void_p), 1024, C.cast(ilog, C.c_void_p), 1024, 0)
    good_ptx = nvrtc_ptx(KERNEL, "tag.cu", rdc=False)
    r = call("cuModuleLoadDataEx", C.byref(mod), good_ptx, 5, opts, vals)
    wall = C.c_float.from_buffer_copy(C.c_uint32(vals[4] or 0)).value
    report("cuModuleLoadDataEx info log and wall time", r == SUCCESS and "1 kernel(s)" in ilog.value.decode() and wall > 0, f"({wall:.1f} ms)")

    # The linker: a kernel calling an extern function another PTX module defines.
    caller = nvrtc_ptx(
        'extern "C" __device__ int mix(int a, int b);\n'
        'extern "C" __global__ void use(const int *x, int *y, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = mix(x[i], i); }\n",
        "caller.cu",
        rdc=True,
    )
    callee = nvrtc_ptx('extern "C" __device__ int mix(int a, int b) { return a * 7 - b; }\n', "callee.cu", rdc=True)
    state = C.c_void_p()
    lopts = (C.c_int * 2)(5, 6)
    lvals = (C.c_void_p * 2)(C.cast(elog, C.c_void_p), 1024)
    ok(call("cuLinkCreate_v2", 2, lopts, lvals, C.byref(state)), "cuLinkCreate")
    ok(call("cuLinkAddData_v2", state, 1, caller, C.c_size_t(len(caller)), b"caller.ptx", 0, None, None), "cuLinkAddData")
    with tempfile.NamedTemporaryFile(suffix=".ptx") as f:
        f.write(callee.rstrip(b"\0"))
        f.flush()
        ok(call("cuLinkAddFile_v2", state, 1, f.name.encode(), 0, None, None), "cuLinkAddFile")
    cubin_input = b"\x7fELF" + bytes(60)
    r_cubin = call("cuLinkAddData_v2", state, 0, cubin_input, C.c_size_t(len(cubin_input)), b"machine.cubin", 0, None, None)
    log = elog.value.decode()
    report("cuLinkAddData of a cubin -> NOT_SUPPORTED, with a log", r_cubin == NOT_SUPPORTED and "machine.cubin" in log, repr(log[:60]))
    image, size = C.c_void_p(), C.c_size_t()
    ok(call("cuLinkComplete", state, C.byref(image), C.byref(size)), "cuLinkComplete")
    linked = C.string_at(image, size.value)
    mod, func = C.c_void_p(), C.c_void_p()
    ok(call("cuModuleLoadData", C.byref(mod), linked), "cuModuleLoadData(linked)")
    ok(call("cuLinkDestroy", state), "cuLinkDestroy")
    ok(call("cuModuleGetFunction", C.byref(func), mod, b"use"), "cuModuleGetFunction")
    n = 777
    a = (np.arange(n, dtype=np.int32) * 13) % 1000
    din, dout = C.c_uint64(), C.c_uint64()
    ok(call("cuMemAlloc_v2", C.byref(din), C.c_size_t(a.nbytes)), "cuMemAlloc")
    ok(call("cuMemAlloc_v2", C.byref(dout), C.c_size_t(a.nbytes)), "cuMemAlloc")
    ok(call("cuMemcpyHtoD_v2", din, a.ctypes.data_as(C.c_void_p), C.c_size_t(a.nbytes)), "cuMemcpyHtoD")
    cn = C.c_int(n)
    params = (C.c_void_p * 3)(C.addressof(din), C.addressof(dout), C.addressof(cn))
    ok(call("cuLaunchKernel", func, 7, 1, 1, 128, 1, 1, 0, None, params, None), "cuLaunchKernel")
    got = np.zeros(n, dtype=np.int32)
    ok(call("cuMemcpyDtoH_v2", got.ctypes.data_as(C.c_void_p), dout, C.c_size_t(a.nbytes)), "cuMemcpyDtoH")
    report("cuLink* of two PTX modules (extern function resolved)", np.array_equal(got, a * 7 - np.arange(n)))
    state2 = C.c_void_p()
    ok(call("cuLinkCreate_v2", 2, lopts, lvals, C.byref(state2)), "cuLinkCreate")
    call("cuLinkAddData_v2", state2, 1, callee, C.c_size_t(len(callee)), b"a.ptx", 0, None, None)
    call("cuLinkAddData_v2", state2, 1, callee, C.c_size_t(len(callee)), b"b.ptx", 0, None, None)
    r = call("cuLinkComplete", state2, C.byref(image), C.byref(size))
    report("cuLink* with a duplicate definition fails with a log", r == INVALID_PTX and "duplicate definition of 'mix'" in elog.value.decode(), repr(elog.value.decode()[:60]))
    call("cuLinkDestroy", state2)
    report("cuLinkComplete on a destroyed state -> INVALID_HANDLE", call("cuLinkComplete", state2, C.byref(image), C.byref(size)) == 400)

    call("cuCtxDestroy_v2", ctx)
    print("ALL VERIFIED" if failures == 0 else "FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
