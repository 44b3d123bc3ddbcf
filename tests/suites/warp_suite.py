"""warp-lang's own test suite on ptx-jit (issue 22), from the installed wheel: the tests of its CUDA
device (`-k cuda`), with kernels compiled by NVRTC to PTX as warp does by default and run on our
libcuda.so.1.

Each test file runs in a process of its own through warp's runner (`python -m warp.tests -s
autodetect -p FILE -k cuda`), two at a time, each with a kernel cache of its own (the runner clears
its cache as it starts) and bounded in time. `make test-suites` runs the files of warp's `cuda`
directory (streams, graphs, memory pools, textures, IPC, ...) and the geometry ones that sort and
search on the device; `--all` runs every file (about an hour on two cores).

A test may fail only if it matches a pattern in KNOWN below, with its cause; the suite fails on any
other failure or error, on a file whose run crashes or times out, and on fewer than MIN_PASSED passes
(for the default files). A known pattern that nothing matched is reported, so the list can shrink.

usage: warp_suite.py PYTHON LIBDIR OUT_DIR [--all | FILE...]
Prints per-file counts, each known and unexpected failure, and `WARP SUITE PASSED` or
`WARP SUITE FAILED`.
"""

import concurrent.futures
import fnmatch
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from suite_common import finish, test_files

# What fails here and why (fnmatch patterns over `Class.test`, as warp's report names tests); the
# README's section on warp-lang says the same.
KNOWN = {
    # These tests compile their kernels to cubins (`module_options={"cuda_output": "cubin"}`), GPU
    # machine code, which a CPU device cannot run: the load fails with CUDA_ERROR_NO_BINARY_FOR_GPU.
    "TestTextureCompiler.*_cubin_*": "asks NVRTC for a cubin",
    "TestTexture.test_texture2d_array_cuda_0": "asks NVRTC for a cubin",
    "TestTexture.test_texture3d_array_cuda_0": "asks NVRTC for a cubin",
    "TestTexture.test_texture_32bit_int_struct_and_array_cuda_0": "asks NVRTC for a cubin",
    "TestTexture.test_texture_sample_grad_moderate_cancellation_cuda_0": "asks NVRTC for a cubin",
    "TestTexture.test_texture_sample_grad_texture_array_cuda_0": "asks NVRTC for a cubin",
    "TestModuleAOT.test_load_aot_cuda_without_apic_cache_files": "its fresh guest binary is a cubin",
    # With memory pools off, a copy that needs a staging buffer during a capture gets a refused
    # cudaMalloc (as the test expects); the static CUDA runtime then keeps error 900 as its last
    # error, and the next non-contiguous copy in the process reads it with cudaGetLastError. Whether a
    # GPU's runtime does the same is not measured.
    "TestAsync.test_copy_*_SrcPoolOff_DstPoolOff_*": "the runtime's last error after a refused cudaMalloc in a capture",
    # Copies on a high-priority stream must take less time than on a low-priority one: stream
    # priorities are kept but not scheduled by, so this is a coin toss.
    "TestStreams.test_stream_priority_timings_cuda_0": "priorities do not schedule",
    # An orthogonality residual of 1.07e-8 against a tolerance of 1e-8: NVRTC's PTX has plain
    # mul.f32/add.f32, which ptxas fuses into fma; ptx-jit rounds each as written.
    "TestFemLinalg.test_qr_inverse_cuda_0": "ptxas fuses plain mul.f32 and add.f32; ptx-jit does not",
}

# The files `make test-suites` runs: warp's `cuda` directory, and the device sorts and searches.
DEFAULT = ["cuda/*", "geometry/test_hash_grid.py", "geometry/test_bvh.py", "geometry/test_mesh_query_point.py"]

# The least number of passing tests of the default files.
MIN_PASSED = 2700
FILE_SECONDS = 1800


def outcomes(path):
    """(test id, outcome) for each test case of warp's JUnit report (`Class.test`): ok, FAIL, ERROR or
    skipped."""
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname')}.{case.get('name')}"
        kinds = {child.tag for child in case}
        yield test, ("FAIL" if "failure" in kinds else "ERROR" if "error" in kinds else
                     "skipped" if "skipped" in kinds else "ok")


def chosen_files(python, chosen):
    """The test files under warp.tests (paths relative to it) that `chosen` patterns pick (all: None)."""
    return [f for f in test_files(python, "warp.tests") if chosen is None or any(fnmatch.fnmatchcase(f, p) for p in chosen)]


def run_file(python, lib, out_dir, rel):
    name = rel.replace(os.sep, ".")[:-3]
    report = os.path.join(out_dir, name + ".xml")
    env = dict(os.environ, LD_LIBRARY_PATH=lib, PYTHONUNBUFFERED="1",
               WARP_CACHE_PATH=os.path.join(out_dir, "cache", name))
    t = time.monotonic()
    with open(os.path.join(out_dir, name + ".log"), "w") as log:
        try:
            code = subprocess.run([python, "-m", "warp.tests", "-s", "autodetect", "-p", os.path.basename(rel),
                                   "-k", "cuda", "-j", "1", "--junit-report-xml", report],
                                  env=env, stdout=log, stderr=subprocess.STDOUT, cwd=out_dir,
                                  timeout=FILE_SECONDS).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    return rel, code, report, time.monotonic() - t


def main():
    python, out_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[3])
    lib = ":".join(os.path.abspath(p) for p in sys.argv[2].split(":"))
    args = sys.argv[4:]
    chosen = None if args == ["--all"] else (args or DEFAULT)
    os.makedirs(out_dir, exist_ok=True)
    files = chosen_files(python, chosen)
    totals = dict.fromkeys(["ok", "FAIL", "ERROR", "skipped"], 0)
    unexpected, troubles, matched = [], [], set()
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for rel, code, report, seconds in pool.map(lambda f: run_file(python, lib, out_dir, f), files):
            counts = dict.fromkeys(totals, 0)
            if os.path.exists(report):
                for test, kind in outcomes(report):
                    counts[kind] += 1
                    if kind in ("FAIL", "ERROR"):
                        known = [p for p in KNOWN if fnmatch.fnmatchcase(test, p)]
                        matched.update(known)
                        if not known:
                            unexpected.append(f"{rel}: {test}: {kind}")
            trouble = None
            if code == "timeout":
                trouble = f"timed out after {FILE_SECONDS} s"
            elif not os.path.exists(report):
                trouble = f"exit status {code} and no report"
            if trouble:
                troubles.append(f"{rel}: {trouble}")
            for k, n in counts.items():
                totals[k] += n
            print(f"{rel:50} {counts['ok']:5} ok {counts['FAIL'] + counts['ERROR']:4} failed "
                  f"{counts['skipped']:4} skipped {seconds:7.1f} s" + (f"  {trouble}" if trouble else ""), flush=True)
    print(f"\n{len(files)} files in {time.monotonic() - start:.0f} s: {totals['ok']} passed, {totals['FAIL']} failed, "
          f"{totals['ERROR']} errors, {totals['skipped']} skipped")
    known = [f"{p}: {KNOWN[p]}" + ("" if p in matched else " (nothing failed this time)") for p in sorted(KNOWN)]
    floor = MIN_PASSED if chosen == DEFAULT else 1
    if totals["ok"] < floor:
        troubles.append(f"{totals['ok']} passed, fewer than {floor}")
    finish("WARP", known, unexpected, troubles, not unexpected and not troubles)


if __name__ == "__main__":
    main()
