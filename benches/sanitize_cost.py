#!/usr/bin/env python3
"""What the sanitizers cost: each of the three reference kernels (benches/kernels, compiled to PTX by
nvcc) and every `tests/ptx` file test with a `// run:` directive, run by `ptx-jit run` in the default
mode, in checked mode and under each sanitizer. Each time is the best of --repeat runs of the kernel
alone (ptx-jit run reports it apart from compilation); the table gives ratios to the default mode
measured in the same run.

Usage: benches/sanitize_cost.py PTX_JIT KERNELS_PTX [--repeat N]"""
import os
import re
import subprocess
import sys

MODES = [("default", []), ("checked", ["--checked"])] + [
    (t, ["--sanitize", t]) for t in ["memcheck", "racecheck", "initcheck", "synccheck", "all"]
]

ptx_jit, kernels = sys.argv[1], sys.argv[2]
repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

REFERENCE = [
    ("saxpy, 2^22", [kernels, "--kernel", "saxpy", "--grid", "16384", "--block", "256", "--arg", "u32:4194304",
                     "--arg", "f32:2", "--arg", "f32*4194304=1", "--arg", "f32*4194304=2"]),
    ("reduction, 2^22", [kernels, "--kernel", "reduce_sum", "--grid", "128", "--block", "256",
                         "--arg", "f32*4194304=1", "--arg", "f32*128", "--arg", "u32:4194304"]),
    ("sgemm, 256^2", [kernels, "--kernel", "sgemm", "--grid", "16,16", "--block", "16,16", "--arg", "u32:256",
                      "--arg", "f32*65536=1", "--arg", "f32*65536=1", "--arg", "f32*65536"]),
]


def file_tests():
    out = []
    d = os.path.join(root, "tests", "ptx")
    for name in sorted(os.listdir(d)):
        text = open(os.path.join(d, name)).read()
        m = re.search(r"^// run: (.*)$", text, re.M)
        if not m:
            continue
        f = dict(kv.split("=", 1) for kv in m.group(1).split())
        args = [os.path.join(d, name), "--kernel", f["kernel"], "--grid", f.get("grid", "1"), "--block", f.get("block", "1")]
        if "shared" in f:
            args += ["--shared", f["shared"]]
        for a in f.get("args", "").split(";"):
            if a:
                args += ["--arg", a]
        out.append(args)
    return out


def time_ms(args, mode):
    best = None
    for _ in range(repeat):
        p = subprocess.run([ptx_jit, "run"] + args + mode, capture_output=True, text=True)
        m = re.search(r"ran \S+ over .* in ([0-9.]+) ms", p.stderr)
        if not m:
            return None
        t = float(m.group(1))
        best = t if best is None else min(best, t)
    return best


rows = [(name, [time_ms(a, m) for _, m in MODES]) for name, a in REFERENCE]
tests = file_tests()
sums = [0.0] * len(MODES)
for a in tests:
    for i, (_, m) in enumerate(MODES):
        t = time_ms(a, m)
        sums[i] += t if t is not None else float("nan")
rows.append(("%d file tests (sum)" % len(tests), sums))

print("| kernel | " + " | ".join(n for n, _ in MODES) + " |")
print("|---" * (len(MODES) + 1) + "|")
for name, ts in rows:
    base = ts[0]
    cells = ["%.2f ms" % base] + ["%.1f× (%.1f ms)" % (t / base, t) if t is not None else "failed" for t in ts[1:]]
    print("| %s | %s |" % (name, " | ".join(cells)))
