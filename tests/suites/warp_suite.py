"""warp-lang's own test suite on ptx-jit (issue 22), from the installed wheel: every test of its CUDA
device (`python -m warp.tests -k cuda`), run by warp's own parallel runner (two processes), with
kernels compiled by NVRTC to PTX as warp does by default and run on our libcuda.so.1.

A test may fail only if it matches a pattern in KNOWN below, with its cause; the suite fails on any
other failure or error, on a run that does not finish, and on fewer than MIN_PASSED passes. A known
pattern that nothing matched is reported, so the list can shrink.

usage: warp_suite.py PYTHON LIBDIR OUT_DIR [FILE_PATTERN]
(FILE_PATTERN, such as `test_streams.py`, runs those test files only, without the count's floor.)
Prints the counts, each known and unexpected failure, and `WARP SUITE PASSED` or `WARP SUITE FAILED`.
"""

import fnmatch
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

# What fails here and why (fnmatch patterns over `Class.test`, as warp's report names tests); the
# README's section on warp-lang says the same.
KNOWN = {
    # These tests compile their kernels to cubins (`module_options={"cuda_output": "cubin"}`), GPU
    # machine code, which a CPU device cannot run: the load fails with CUDA_ERROR_NO_BINARY_FOR_GPU.
    "TestTextureCompiler.*_cubin_*": "asks NVRTC for a cubin",
    "TestTexture.test_texture2d_array_cuda_0": "asks NVRTC for a cubin",
    "TestTexture.test_texture3d_array_cuda_0": "asks NVRTC for a cubin",
    "TestTexture.test_texture_32bit_int_struct_and_array_cuda_0": "asks NVRTC for a cubin",
    "TestTexture.test_texture_sample_grad_moderate_cancellation_cuda_0":
        "asks NVRTC for a cubin",
    "TestTexture.test_texture_sample_grad_texture_array_cuda_0": "asks NVRTC for a cubin",
    "TestModuleAOT.test_load_aot_cuda_without_apic_cache_files":
        "its fresh guest binary is a cubin",
    # With memory pools off, a copy that needs a staging buffer during a capture gets a refused
    # cudaMalloc (as the test expects); the static CUDA runtime then keeps error 900 as its last
    # error, and the next non-contiguous copy in the process reads it with cudaGetLastError. Whether a
    # GPU's runtime does the same is not measured.
    "TestAsync.test_copy_*_SrcPoolOff_DstPoolOff_*":
        "the runtime's last error after a refused cudaMalloc in a capture",
    # Copies on a high-priority stream must take less time than on a low-priority one: stream
    # priorities are kept but not scheduled by, so this is a coin toss.
    "TestStreams.test_stream_priority_timings_cuda_0": "priorities do not schedule",
}

# The least number of passing tests (see the README's count).
MIN_PASSED = 3800
SECONDS = 4800


def outcomes(path):
    """(test id, outcome) for each test case of warp's JUnit report (`Class.test`): ok, FAIL, ERROR or
    skipped."""
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname')}.{case.get('name')}"
        kinds = {child.tag for child in case}
        yield test, ("FAIL" if "failure" in kinds else "ERROR" if "error" in kinds else
                     "skipped" if "skipped" in kinds else "ok")


def main():
    python, out_dir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[3])
    lib = ":".join(os.path.abspath(p) for p in sys.argv[2].split(":"))
    pattern = sys.argv[4:5]
    os.makedirs(out_dir, exist_ok=True)
    report = os.path.join(out_dir, "junit.xml")
    if os.path.exists(report):
        os.remove(report)
    env = dict(os.environ, LD_LIBRARY_PATH=lib, PYTHONUNBUFFERED="1",
               WARP_CACHE_PATH=os.path.join(out_dir, "kernel-cache"))
    start = time.monotonic()
    with open(os.path.join(out_dir, "warp.log"), "w") as log:
        try:
            code = subprocess.run([python, "-m", "warp.tests", "-s", "autodetect", "-k", "cuda", "-j", "2",
                                   "--timeout", str(SECONDS), "--junit-report-xml", report]
                                  + [a for p in pattern for a in ("-p", p)],
                                  env=env, stdout=log, stderr=subprocess.STDOUT, cwd=out_dir,
                                  timeout=SECONDS + 120).returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
    seconds = time.monotonic() - start
    if not os.path.exists(report):
        print(f"TROUBLE warp's runner ended ({code}) after {seconds:.0f} s without a report; see {log.name}")
        print("WARP SUITE FAILED")
        sys.exit(1)
    counts = dict.fromkeys(["ok", "FAIL", "ERROR", "skipped"], 0)
    unexpected, matched = [], set()
    for test, kind in outcomes(report):
        counts[kind] += 1
        if kind in ("FAIL", "ERROR"):
            known = [p for p in KNOWN if fnmatch.fnmatchcase(test, p)]
            matched.update(known)
            if not known:
                unexpected.append(f"{test}: {kind}")
    print(f"warp-lang's CUDA tests in {seconds:.0f} s: {counts['ok']} passed, {counts['FAIL']} failed, "
          f"{counts['ERROR']} errors, {counts['skipped']} skipped")
    for p in sorted(KNOWN):
        print(f"known: {p}: {KNOWN[p]}" + ("" if p in matched else " (nothing failed this time)"))
    for u in unexpected:
        print(f"UNEXPECTED {u}")
    floor = 1 if pattern else MIN_PASSED
    ok = not unexpected and counts["ok"] >= floor
    if counts["ok"] < floor:
        print(f"TROUBLE {counts['ok']} passed, fewer than {floor}")
    print("WARP SUITE PASSED" if ok else "WARP SUITE FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
