"""CuPy's own test suite on ptx-jit's libcuda.so.1: the tests of the installed CuPy's source release
(PyPI's sdist, checked against the index's sha256), run with pytest group by group as a CuPy
developer would, on the `future` device (where NVIDIA's libraries CuPy calls run from their PTX) with
CuPy's kernels compiled to PTX (CUPY_COMPILE_WITH_PTX=1). Prints each group's counts and every
failure, and fails when a group passes fewer than GOAL of the tests it runs (issue 22's goal).

Usage: cupy_suite.py PYTHON LIBDIRS WORKDIR [GROUP ...]
  PYTHON   the interpreter of a venv with cupy-cuda13x, pytest and pytest-timeout
  LIBDIRS  LD_LIBRARY_PATH for the tests: ptx-jit's libcuda.so.1 first, then NVIDIA's libraries
  WORKDIR  where the source release and the results go (kept between runs)
  GROUP    cupy_tests/GROUP_tests directories (default: GROUPS)"""

import hashlib
import os
import re
import subprocess
import sys
import tarfile
import time
import urllib.request
import xml.etree.ElementTree as ET

GOAL = 0.95
GROUP_SECONDS = 3 * 3600
GROUPS = ["creation", "manipulation", "indexing", "sorting", "statistics", "math", "core"]
INDEX = "https://pypi.org/simple/cupy/"


def source(python, workdir):
    """The tests of the installed CuPy's source release, downloaded and unpacked once."""
    version = subprocess.run([python, "-c", "import cupy; print(cupy.__version__)"], check=True,
                             capture_output=True, text=True).stdout.strip()
    root = os.path.join(workdir, f"cupy-{version}")
    if os.path.isdir(os.path.join(root, "tests")):
        return root
    page = urllib.request.urlopen(INDEX, timeout=60).read().decode()
    m = re.search(rf'href="([^"]*/cupy-{re.escape(version)}\.tar\.gz)#sha256=([0-9a-f]+)"', page)
    if not m:
        raise SystemExit(f"no source release of cupy {version} on {INDEX}")
    data = urllib.request.urlopen(m.group(1), timeout=300).read()
    if hashlib.sha256(data).hexdigest() != m.group(2):
        raise SystemExit("the source release does not match the index's sha256")
    tarball = os.path.join(workdir, f"cupy-{version}.tar.gz")
    with open(tarball, "wb") as f:
        f.write(data)
    with tarfile.open(tarball) as t:
        members = [x for x in t.getmembers()
                   if x.name.startswith(f"cupy-{version}/tests/") or x.name == f"cupy-{version}/pyproject.toml"]
        # The "data" filter (no links out, no devices) where this Python has it.
        t.extractall(workdir, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return root


def run_group(python, libdirs, root, group, workdir):
    """Runs one group; returns (passed, failed, errors, skipped, failures, seconds)."""
    xml = os.path.join(workdir, f"{group}.xml")
    if os.path.exists(xml):
        os.remove(xml)  # a crashed run must not read the last run's results
    env = dict(os.environ, LD_LIBRARY_PATH=libdirs, PTXJIT_DEVICE="future", CUPY_COMPILE_WITH_PTX="1",
               CUPY_CACHE_DIR=os.path.join(workdir, "kernel-cache"))
    t = time.time()
    try:
        # pytest-timeout's thread method ends a test stuck inside the driver, and the group as a whole
        # has a bound of its own.
        subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow and not multi_gpu",
                        "--timeout", "900", "--timeout-method", "thread", f"--junitxml={xml}",
                        f"tests/cupy_tests/{group}_tests"],
                       cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=GROUP_SECONDS)
    except subprocess.TimeoutExpired:
        return 0, 0, 1, 0, [f"{group}: not finished in {GROUP_SECONDS} s"], time.time() - t
    seconds = time.time() - t
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures = []
    if not os.path.exists(xml):
        return 0, 0, 1, 0, [f"{group}: pytest wrote no results (it crashed or was killed)"], seconds
    for case in ET.parse(xml).getroot().iter("testcase"):
        kinds = {c.tag for c in case}
        name = f"{case.get('classname')}::{case.get('name')}"
        if "failure" in kinds:
            counts["failed"] += 1
            failures.append(name)
        elif "error" in kinds:
            counts["errors"] += 1
            failures.append(name + " (error)")
        elif "skipped" in kinds:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts["passed"], counts["failed"], counts["errors"], counts["skipped"], failures, seconds


def main():
    python, libdirs, workdir = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    groups = sys.argv[4:] or GROUPS
    os.makedirs(workdir, exist_ok=True)
    try:
        root = source(python, workdir)
    except OSError as e:  # no network: skipped with a message, as the wheels' installs are
        print(f"CUPY SUITE SKIPPED: cannot download CuPy's source release: {e}")
        return
    print(f"{'group':14} {'passed':>7} {'failed':>7} {'errors':>7} {'skipped':>8} {'pass rate':>10} {'time':>7}")
    short, total = [], [0, 0, 0, 0]
    for group in groups:
        passed, failed, errors, skipped, failures, seconds = run_group(python, libdirs, root, group, workdir)
        ran = passed + failed + errors
        rate = passed / ran if ran else 0.0
        print(f"{group:14} {passed:7} {failed:7} {errors:7} {skipped:8} {rate:10.1%} {seconds:6.0f}s", flush=True)
        for f in failures:
            print(f"    {f}")
        total = [a + b for a, b in zip(total, [passed, failed, errors, skipped])]
        if rate < GOAL:
            short.append(group)
    print(f"{'all':14} {total[0]:7} {total[1]:7} {total[2]:7} {total[3]:8}")
    if short:
        print(f"CUPY SUITE BELOW {GOAL:.0%}: {', '.join(short)}")
        sys.exit(1)
    print("CUPY SUITE PASSED")


main()
