#!/usr/bin/env python3
"""`make bench-suite`: HeCBench programs, each CUDA version on ptx-jit's libcuda.so.1 beside the
OpenMP version of the same algorithm run natively (g++ -O3 -march=native -fopenmp, 2 threads).

For every benchmark in suite.json: copy both versions out of ../shared/hecbench into the build
directory, build them (the CUDA one with the venv's nvcc for sm_80, so the binary carries PTX and the
static CUDA runtime), run them back to back --repeat times with the CPU-sized arguments listed, on
the same --threads cores (taskset; OpenMP's threads and ptx-jit's workers both that many), check both
succeed (exit 0, the success text, no FAIL, and a `check` value within its bound where the program
prints one), and take each one's best kernel time (the line benchmarks.yaml's regex matches, as each
program reports it) and best wall time. The report gives per benchmark the ratio ptx-jit / OpenMP of
both, their geometric means, and every benchmark over 3x. It fails when any benchmark does.

usage: suite.py --hecbench DIR --lib DIR --cu13 DIR --out DIR [--only NAME,…] [--repeat N] [--threads N]
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def yaml_regex(yaml_text, name):
    """The `test: regex:` of benchmark `name` in HeCBench's benchmarks.yaml (its format is fixed:
    a top-level `name:` line, then indented keys)."""
    m = re.search(r"^" + re.escape(name) + r":\n((?:[ \t].*\n|\n)*)", yaml_text, re.M)
    if not m:
        return None
    r = re.search(r"regex: '(.*)'", m.group(1))
    return r.group(1) if r else None


def copy_tree(hecbench, out, name, models=("cuda", "omp")):
    """The versions of `name` (both, unless `models` says) under OUT/src, beside links to the shared
    headers and data that their Makefiles name by relative paths."""
    src = os.path.join(out, "src")
    os.makedirs(src, exist_ok=True)
    for shared in ("include", "data"):
        target = os.path.abspath(os.path.join(hecbench, "src", shared))
        link = os.path.join(src, shared)
        if os.path.isdir(target) and not os.path.lexists(link):
            os.symlink(target, link)
    for model in models:
        d = os.path.join(src, f"{name}-{model}")
        if not os.path.isdir(d):
            shutil.copytree(os.path.join(hecbench, "src", f"{name}-{model}"), d)
    return src


def build(directory, variables, log):
    # -B: flags in suite.json may have changed since the last build.
    cmd = ["make", "-B", "-C", directory] + [f"{k}={v}" for k, v in variables.items()]
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n" + p.stdout + p.stderr)
    return p.returncode == 0


def run(cmd, cwd, env, timeout):
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.monotonic() - t
    except subprocess.TimeoutExpired:
        return None, "timed out", time.monotonic() - t


def verified(code, out, b):
    """Whether a run succeeded: exit 0, no FAIL, the success text, not the `fail` text, and the checked
    value (the first group of `check.regex`) at most `check.max`."""
    if code != 0 or "FAIL" in out or (b.get("success") and b["success"] not in out):
        return False
    # Programs that print only on a mismatch name that text.
    if b.get("fail") and b["fail"] in out:
        return False
    check = b.get("check")
    if check:
        m = re.search(check["regex"], out)
        return bool(m) and abs(float(m.group(1))) <= check["max"]
    return True


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def arguments():
    """The options this script and tests/suites/hecbench_suite.py share."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--hecbench", required=True)
    ap.add_argument("--lib", required=True, help="the directory of ptx-jit's libcuda.so.1")
    ap.add_argument("--cu13", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    return ap


def build_cuda(directory, b, cu13, log):
    """Builds benchmark `b`'s CUDA version with the venv's nvcc for sm_80: the binary carries PTX and
    the static CUDA runtime."""
    nvcc = os.path.join(cu13, "bin", "nvcc")
    return build(directory, {"CC": nvcc, "NVCC": nvcc, "LDFLAGS": f"-L{cu13}/lib " + b.get("cuda_ldflags", ""),
                             "CFLAGS": f"-std=c++17 -O3 -arch=sm_80 -I{cu13}/include " + b.get("cuda_flags", "")},
                 log)


def main():
    ap = arguments()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    suite = json.load(open(os.path.join(HERE, "suite.json")))
    yaml_text = open(os.path.join(a.hecbench, "benchmarks.yaml")).read()
    only = set(filter(None, a.only.split(",")))
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for b in suite["benchmarks"]:
        name = b["name"]
        if only and name not in only:
            continue
        row = {"name": name, "args": b["args"]}
        rows.append(row)
        regex = b.get("regex") or yaml_regex(yaml_text, name)
        src = copy_tree(a.hecbench, a.out, name)
        cuda, omp = os.path.join(src, f"{name}-cuda"), os.path.join(src, f"{name}-omp")
        ok_cuda = build_cuda(cuda, b, a.cu13, os.path.join(a.out, f"{name}-cuda.build.log"))
        # Some Makefiles leave a file to make's built-in C++ rule, which reads CXX and CXXFLAGS.
        omp_flags = "-std=c++17 -O3 -march=native -fopenmp -foffload=disable " + b.get("omp_flags", "")
        ok_omp = build(omp, {"CC": "g++", "CXX": "g++", "CFLAGS": omp_flags, "CXXFLAGS": omp_flags,
                             "LDFLAGS": "-fopenmp " + b.get("omp_ldflags", "")},
                       os.path.join(a.out, f"{name}-omp.build.log"))
        if not (ok_cuda and ok_omp):
            row["error"] = "build failed: " + ("" if ok_cuda else "cuda ") + ("" if ok_omp else "omp")
            print(f"{name:24} {row['error']} (logs in {a.out})")
            continue
        n = str(a.threads)
        env_cuda = dict(os.environ, LD_LIBRARY_PATH=a.lib, RAYON_NUM_THREADS=n)
        env_omp = dict(os.environ, OMP_NUM_THREADS=n, OMP_PROC_BIND="true")
        cores = ["taskset", "-c", f"0-{a.threads - 1}"] if shutil.which("taskset") else []
        best = {"cuda": [math.inf, math.inf], "omp": [math.inf, math.inf]}
        for _ in range(a.repeat):
            for model, d, env in (("omp", omp, env_omp), ("cuda", cuda, env_cuda)):
                code, out, wall = run(cores + ["./main"] + b["args"], d, env, b.get("timeout", 300))
                if not verified(code, out, b):
                    row["error"] = f"{model} run failed (exit {code}): " + out.strip()[-300:]
                    break
                m = re.search(regex, out) if regex else None
                if not m:
                    row["error"] = f"{model} printed no timing line matching {regex!r}"
                    break
                best[model][0] = min(best[model][0], float(m.group(1)))
                best[model][1] = min(best[model][1], wall)
            if "error" in row:
                break
        if "error" in row:
            print(f"{name:24} {row['error']}")
            continue
        row.update(omp_time=best["omp"][0], cuda_time=best["cuda"][0], omp_wall=best["omp"][1], cuda_wall=best["cuda"][1])
        row["verified_by"] = "check" if b.get("check") else "success text" if b.get("success") else "exit status"
        row["kernel_ratio"] = row["cuda_time"] / row["omp_time"] if row["omp_time"] > 0 else math.nan
        row["wall_ratio"] = row["cuda_wall"] / row["omp_wall"]
        print(f"{name:24} kernel {row['cuda_time']:>10.4g} vs {row['omp_time']:>10.4g}  x{row['kernel_ratio']:6.2f}   "
              f"wall {row['cuda_wall']:6.2f} s vs {row['omp_wall']:6.2f} s  x{row['wall_ratio']:6.2f}")
    done = [r for r in rows if "error" not in r]
    kernel = [r["kernel_ratio"] for r in done if r["kernel_ratio"] > 0]
    wall = [r["wall_ratio"] for r in done]
    summary = {
        "benchmarks": len(rows), "verified": len(done),
        "geomean_kernel_ratio": geomean(kernel), "geomean_wall_ratio": geomean(wall),
        "over_3x": [r["name"] for r in done if r["kernel_ratio"] > 3 or r["wall_ratio"] > 3],
        "exit_status_only": [r["name"] for r in done if r["verified_by"] == "exit status"],
        "failed": {r["name"]: r["error"] for r in rows if "error" in r},
    }
    print(f"\n{len(done)} of {len(rows)} benchmarks verified on both; ptx-jit / OpenMP (2 threads), geometric mean: "
          f"kernel time x{summary['geomean_kernel_ratio']:.2f}, wall time x{summary['geomean_wall_ratio']:.2f}")
    if summary["over_3x"]:
        print("over 3x: " + ", ".join(summary["over_3x"]))
    if summary["exit_status_only"]:
        print("verified by their exit status only (they print no check): " + ", ".join(summary["exit_status_only"]))
    json.dump({"summary": summary, "rows": rows}, open(os.path.join(a.out, "results.json"), "w"), indent=1)
    sys.exit(0 if done and len(done) == len(rows) else 1)


if __name__ == "__main__":
    main()
