"""numba-cuda's own test suite on ptx-jit (issue 22), from the installed wheel, without nvJitLink
(`pip install numba-cuda`: numba links PTX through the driver's cuLink*).

Each test module runs in a process of its own (`python -m numba.runtests -v MODULE`), as some of
numba's tests end a kernel with a fault on purpose, and a GPU's error is sticky on the context: a
module after it in the same process would fail for that reason alone. The modules run two at a time,
each bounded in time.

A test may fail only if it is listed in KNOWN below with its cause; the suite fails on any other
failure or error, on a module that crashes or times out, and on fewer than MIN_PASSED passes. A known
failure that passes is reported, so the list can shrink.

usage: numba_suite.py PYTHON LIBDIR OUT_DIR [MODULE_PREFIX...]
Prints per-module counts and `NUMBA SUITE PASSED` or `NUMBA SUITE FAILED`.
"""

import concurrent.futures
import os
import re
import subprocess
import sys
import time

# What fails here and why; the README's section on numba-cuda says the same. Keys are test ids as
# unittest prints them (`test_name (module.Class.test_name)`, shortened to `module.Class.test_name`).
KNOWN = {
    # Caching a function compiled for the CPU and CUDA targets at once: these fail on an H200 as well
    # (tests/gpu/README.md).
    "numba.cuda.tests.cudapy.test_caching.CUDAAndCPUCachingTest.test_cpu_and_cuda_reuse": "fails on a GPU too",
    "numba.cuda.tests.cudapy.test_caching.CUDAAndCPUCachingTest.test_cpu_and_cuda_targets": "fails on a GPU too",
    # ptx-jit reports one register count for every kernel (the most at which a multiprocessor's
    # threads all fit), not an estimate per kernel.
    "numba.cuda.tests.cudadrv.test_linker.TestLinker.test_set_registers_no_max": "one register count for every kernel",
    # With cuda-bindings 13.3 (see the Makefile), numba warns that cuda.bindings has no nvJitLink
    # at each link, and these tests require no warning at all: the venv's doing, a GPU's too.
    "numba.cuda.tests.cudapy.test_debug.TestDebugOutput.test_dump_assembly": "numba's warning that cuda.bindings lacks nvJitLink",
    "numba.cuda.tests.cudapy.test_warning.TestWarnings.test_efficient_launch_configuration":
        "numba's warning that cuda.bindings lacks nvJitLink",
    # The module imports ml_dtypes, which the venv lacks (and then requires CuPy 14).
    "unittest.loader._FailedTest.test_bfloat16": "imports ml_dtypes, which the venv lacks",
}

# The least number of passing tests: 1,742 passed in session 24 (numba-cuda 0.30.4, cuda-bindings 13.3,
# no CuPy in the venv, whose tests count as skipped).
MIN_PASSED = 1700
MODULE_SECONDS = 900

RESULT = re.compile(r"^(test\w*) \(([\w.]+)\)(?:\n.*?)?\s\.\.\.\s(ok|FAIL|ERROR|skipped.*|expected failure|unexpected success)$",
                    re.M)


def modules(python, prefixes):
    out = subprocess.run([python, "-c", "import numba.cuda.tests as t, os; print(os.path.dirname(t.__file__))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    found = []
    for root, _, files in os.walk(out):
        for f in files:
            if f.startswith("test_") and f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f[:-3]), out).replace(os.sep, ".")
                name = "numba.cuda.tests." + rel
                if not prefixes or any(name.startswith(p) for p in prefixes):
                    found.append(name)
    return sorted(found)


def run_module(python, lib, out_dir, module):
    env = dict(os.environ, LD_LIBRARY_PATH=lib, NUMBA_CUDA_ENABLE_PYNVJITLINK="0", PYTHONUNBUFFERED="1")
    t = time.monotonic()
    try:
        p = subprocess.run([python, "-m", "numba.runtests", "-v", module], env=env, capture_output=True,
                           text=True, errors="replace", timeout=MODULE_SECONDS, cwd=out_dir)
        text, code = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        code = "timeout"
    with open(os.path.join(out_dir, module + ".log"), "w") as f:
        f.write(text)
    return module, code, text, time.monotonic() - t


# A failing test's report: its id and traceback.
REPORT = re.compile(r"^(?:ERROR|FAIL): \w+ \(([\w.]+)\)\n-+\n(.*?)(?=^=+$|^-+\nRan )", re.M | re.S)


def classify(module, code, text):
    """Each test's outcome, and the module's own trouble (a crash, a timeout, an import that failed).
    A test that raised pytest's Skipped (`pytest.importorskip("cupy")` where CuPy is absent) is
    skipped, though unittest reports it as an error."""
    tests = {}
    for m in RESULT.finditer(text):
        outcome = m.group(3)
        tests[m.group(2)] = "skipped" if outcome.startswith("skipped") else outcome
    skipped_errors = 0
    for m in REPORT.finditer(text):
        if re.search(r"^Skipped: ", m.group(2), re.M):
            tests[m.group(1)] = "skipped"
            skipped_errors += 1
    trouble = None
    if code == "timeout":
        trouble = f"timed out after {MODULE_SECONDS} s"
    elif isinstance(code, int) and code < 0:
        trouble = f"died of signal {-code}"
    elif not tests:
        skip = re.search(r"^(?:Skipped|unittest\.case\.SkipTest): (.*)$", text, re.M)
        if skip:
            tests[module] = "skipped"
        elif code != 0:
            trouble = "no test ran: " + text.strip()[-300:]
    elif code != 0 and not skipped_errors and not any(v in ("FAIL", "ERROR") for v in tests.values()):
        trouble = f"exit status {code} with no failing test: " + text.strip()[-300:]
    return tests, trouble


def main():
    # The modules run in OUT_DIR (numba's cache tests write beside them): paths made absolute first.
    python, out_dir = os.path.abspath(sys.argv[1]), sys.argv[3]
    lib = ":".join(os.path.abspath(p) for p in sys.argv[2].split(":"))
    prefixes = sys.argv[4:]
    os.makedirs(out_dir, exist_ok=True)
    mods = modules(python, prefixes)
    totals = {"ok": 0, "FAIL": 0, "ERROR": 0, "skipped": 0, "expected failure": 0, "unexpected success": 0}
    unexpected, troubles, fixed = [], [], []
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for module, code, text, seconds in pool.map(lambda m: run_module(python, lib, out_dir, m), mods):
            tests, trouble = classify(module, code, text)
            counts = {k: sum(1 for v in tests.values() if v == k) for k in totals}
            for k, n in counts.items():
                totals[k] += n
            bad = [t for t, v in tests.items() if v in ("FAIL", "ERROR", "unexpected success")]
            unexpected += [f"{t}: {tests[t]}" for t in bad if t not in KNOWN]
            fixed += [t for t, v in tests.items() if t in KNOWN and v == "ok"]
            if trouble:
                troubles.append(f"{module}: {trouble}")
            print(f"{module:60} {counts['ok']:4} ok {counts['FAIL'] + counts['ERROR']:3} failed "
                  f"{counts['skipped']:3} skipped {seconds:6.1f} s" + (f"  {trouble}" if trouble else ""), flush=True)
    print(f"\n{len(mods)} modules in {time.monotonic() - start:.0f} s: {totals['ok']} passed, {totals['FAIL']} failed, "
          f"{totals['ERROR']} errors, {totals['skipped']} skipped, {totals['expected failure']} expected failures, "
          f"{totals['unexpected success']} unexpected successes")
    for t in sorted(KNOWN):
        print(f"known: {t}: {KNOWN[t]}" + (" (passed this time)" if t in fixed else ""))
    for u in unexpected:
        print(f"UNEXPECTED {u}")
    for t in troubles:
        print(f"TROUBLE {t}")
    ok = not unexpected and not troubles and (prefixes or totals["ok"] >= MIN_PASSED)
    print("NUMBA SUITE PASSED" if ok else "NUMBA SUITE FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
