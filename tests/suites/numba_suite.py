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

from suite_common import finish, test_files

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

# The least number of passing tests: 1,917 passed in session 24 (numba-cuda 0.30.4, cuda-bindings 13.3,
# no CuPy in the venv, whose tests count as skipped).
MIN_PASSED = 1880
MODULE_SECONDS = 900

# A failing test's report: its kind, id and traceback (after the test's docstring, when it has one).
REPORT = re.compile(r"^(ERROR|FAIL|UNEXPECTED SUCCESS): \w+ \(([\w.]+)\)\n(?:[^\n]*\n)?-{20,}\n(.*?)(?=^={20,}$|^-{20,}\nRan )",
                    re.M | re.S)
# unittest's last lines: how many tests ran, and the outcome with its counts.
RAN = re.compile(r"^Ran (\d+) tests? in ", re.M)
OUTCOME = re.compile(r"^(OK|FAILED)(?: \((.*)\))?$", re.M)
KINDS = {"failures": "FAIL", "errors": "ERROR", "skipped": "skipped", "expected failures": "expected failure",
         "unexpected successes": "unexpected success"}


def modules(python, prefixes):
    names = ("numba.cuda.tests." + rel[:-3].replace(os.sep, ".") for rel in test_files(python, "numba.cuda.tests"))
    return [n for n in names if not prefixes or any(n.startswith(p) for p in prefixes)]


def run_module(python, lib, out_dir, module):
    env = dict(os.environ, LD_LIBRARY_PATH=lib, NUMBA_CUDA_ENABLE_PYNVJITLINK="0", PYTHONUNBUFFERED="1")
    t = time.monotonic()
    try:
        p = subprocess.run([python, "-m", "numba.runtests", "-v", module], env=env, capture_output=True,
                           text=True, errors="replace", timeout=MODULE_SECONDS, cwd=out_dir)
        text, code = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        text = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr))
        code = "timeout"
    with open(os.path.join(out_dir, module + ".log"), "w") as f:
        f.write(text)
    return module, code, text, time.monotonic() - t




def classify(module, code, text):
    """The module's counts (by unittest's summary, which a test's output cannot split as it can the
    `... ok` lines), each failing test's id and kind, and the module's own trouble (a crash, a
    timeout, counts that do not add up). A test that raised pytest's Skipped
    (`pytest.importorskip("cupy")` where CuPy is absent) is skipped, though unittest counts an error."""
    counts = dict.fromkeys(["ok", *KINDS.values()], 0)
    failing = {}
    ran, outcome = RAN.search(text), OUTCOME.search(text)
    if code == "timeout":
        return counts, failing, f"timed out after {MODULE_SECONDS} s"
    if isinstance(code, int) and code < 0:
        return counts, failing, f"died of signal {-code}"
    if not ran or not outcome:
        # A module that pytest skips as it is imported (it needs CuPy) ends with that, and numba's
        # runner then exits with status 1.
        if code in (0, 1) and (text.strip().splitlines()[-1:] or [""])[0].startswith("Skipped: "):
            counts["skipped"] = 1
            return counts, failing, None
        return counts, failing, f"exit status {code} and no unittest summary: " + text.strip()[-300:]
    for part in filter(None, (outcome.group(2) or "").split(", ")):
        name, _, n = part.rpartition("=")
        counts[KINDS[name]] = int(n)
    reports = REPORT.findall(text)
    if len(reports) != counts["FAIL"] + counts["ERROR"] + counts["unexpected success"]:
        return counts, failing, f"{len(reports)} failure reports where unittest counts more"
    for kind, test, body in reports:
        kind = {"FAIL": "FAIL", "ERROR": "ERROR"}.get(kind, "unexpected success")
        if (body.strip().splitlines()[-1:] or [""])[0].startswith("Skipped: "):
            counts[kind] -= 1
            counts["skipped"] += 1
        else:
            failing[test] = kind
    counts["ok"] = int(ran.group(1)) - sum(v for k, v in counts.items() if k != "ok")
    if (code == 0) != (outcome.group(1) == "OK"):
        return counts, failing, f"exit status {code} with unittest's {outcome.group(1)}"
    return counts, failing, None


def main():
    # The modules run in OUT_DIR (numba's cache tests write beside them): paths made absolute first.
    python, out_dir = os.path.abspath(sys.argv[1]), sys.argv[3]
    lib = ":".join(os.path.abspath(p) for p in sys.argv[2].split(":"))
    prefixes = sys.argv[4:]
    os.makedirs(out_dir, exist_ok=True)
    mods = modules(python, prefixes)
    totals = dict.fromkeys(["ok", *KINDS.values()], 0)
    unexpected, troubles, fixed = [], [], []
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for module, code, text, seconds in pool.map(lambda m: run_module(python, lib, out_dir, m), mods):
            counts, failing, trouble = classify(module, code, text)
            for k, n in counts.items():
                totals[k] += n
            unexpected += [f"{t}: {kind}" for t, kind in failing.items() if t not in KNOWN]
            fixed += [t for t in KNOWN if t.startswith(module + ".") and t not in failing and not trouble]
            if trouble:
                troubles.append(f"{module}: {trouble}")
            print(f"{module:60} {counts['ok']:4} ok {len(failing):3} failed "
                  f"{counts['skipped']:3} skipped {seconds:6.1f} s" + (f"  {trouble}" if trouble else ""), flush=True)
    print(f"\n{len(mods)} modules in {time.monotonic() - start:.0f} s: {totals['ok']} passed, {totals['FAIL']} failed, "
          f"{totals['ERROR']} errors, {totals['skipped']} skipped, {totals['expected failure']} expected failures, "
          f"{totals['unexpected success']} unexpected successes")
    known = [f"{t}: {KNOWN[t]}" + (" (passed this time)" if t in fixed else "") for t in sorted(KNOWN)]
    ok = not unexpected and not troubles and (prefixes or totals["ok"] >= MIN_PASSED)
    finish("NUMBA", known, unexpected, troubles, ok)


if __name__ == "__main__":
    main()
