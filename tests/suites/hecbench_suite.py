#!/usr/bin/env python3
"""HeCBench's CUDA programs (../shared/hecbench), unmodified, on ptx-jit's libcuda.so.1: each listed in
hecbench.json is built with the venv's nvcc (sm_80, so the binary carries PTX and the static CUDA
runtime), run with arguments sized for a 2-core CPU, and verified by its own check (exit 0, no FAIL,
its success text, and its `check` value within bounds where it prints one). Programs listed with a
`known` cause must fail (a pass means the list is stale); any other failure fails the suite.

usage: hecbench_suite.py --hecbench DIR --lib DIR --cu13 DIR --out DIR [--only NAME,...] [--jobs N]
"""
import concurrent.futures
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benches", "hecbench"))
from suite import arguments, build_cuda, copy_tree, run, verified  # noqa: E402  (the bench suite's own steps)
from suite_common import finish  # noqa: E402


def one(b, a, src):
    """Builds and runs program `b`, copied under `src`: (verified, wall seconds, what went wrong)."""
    try:
        return build_and_run(b, a, src)
    except OSError as e:  # a build that left no program, say: this program fails, the rest go on
        return False, 0.0, f"{type(e).__name__}: {e}"


def build_and_run(b, a, src):
    name = b["name"]
    cuda = os.path.join(src, f"{name}-cuda")
    log = os.path.join(a.out, f"{name}-cuda.build.log")
    if not build_cuda(cuda, b, a.cu13, log):
        return False, 0.0, f"build failed (log: {log})"
    env = dict(os.environ, LD_LIBRARY_PATH=a.lib)
    code, out, wall = run(["./main"] + b["args"], cuda, env, b.get("timeout", 120))
    with open(os.path.join(a.out, f"{name}-cuda.run.log"), "w") as f:
        f.write(out)
    if verified(code, out, b):
        return True, wall, ""
    return False, wall, f"exit {code}: " + " | ".join(out.strip().splitlines()[-3:])[-300:]


def main():
    ap = arguments()
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.hecbench, "src")):
        print(f"skipped: {a.hecbench} is not here")
        print("HECBENCH SUITE SKIPPED")
        return
    listed = json.load(open(os.path.join(HERE, "hecbench.json")))["programs"]
    only = set(filter(None, a.only.split(",")))
    programs = [b for b in listed if not only or b["name"] in only]
    os.makedirs(a.out, exist_ok=True)
    t0 = time.monotonic()
    src = [copy_tree(a.hecbench, a.out, b["name"], models=("cuda",)) for b in programs]
    # Builds are nvcc's and runs are ptx-jit's: two at a time keep both cores busy.
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        results = list(pool.map(lambda b, s: one(b, a, s), programs, src))
    known, unexpected, passed = [], [], 0
    for b, (ok, wall, why) in zip(programs, results):
        name = b["name"]
        if ok and not b.get("known"):
            passed += 1
            print(f"{name:28} verified in {wall:5.2f} s ({' '.join(b['args'])})")
        elif ok:
            unexpected.append(f"{name}: passes, but hecbench.json lists it as failing ({b['known']})")
        elif b.get("known"):
            known.append(f"{name}: {b['known']}")
        else:
            unexpected.append(f"{name}: {why}")
    print(f"hecbench: {passed} verified, {len(known)} known failures, {len(unexpected)} unexpected, "
          f"of {len(programs)} programs, in {time.monotonic() - t0:.0f} s")
    finish("HECBENCH", known, unexpected, [], not unexpected)


if __name__ == "__main__":
    main()
