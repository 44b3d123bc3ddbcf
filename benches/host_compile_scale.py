#!/usr/bin/env python3
"""Cost linear in the work, measured side by side with ptxas: `ptx-jit compile --arch host --emit llvm`
of large modules from NVIDIA's libraries (by default cuBLAS's `libcublas.so.107.sm_120.ptx`: 7.25 MB,
272 kernels, fetched and extracted by ../shared/scripts/nvidia-ptx.sh) against `ptxas` on the same file
for its own target, each in its own process under /usr/bin/time: wall time and peak resident memory,
and their ratios. ptx-jit runs at -O0 (lowering alone, as the JIT's quick tier starts from) and -O3.

Usage: benches/host_compile_scale.py PTX_JIT PTXAS [FILE.ptx …]"""
import os
import re
import subprocess
import sys

from peak import measure

ptx_jit, ptxas = sys.argv[1], sys.argv[2]
files = sys.argv[3:]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not files:
    d = subprocess.run(["bash", os.path.join(root, "..", "shared", "scripts", "nvidia-ptx.sh"),
                        "nvidia-cublas==13.4.1.3", "libcublas.so.13", os.path.join(root, ".venv")],
                       capture_output=True, text=True, check=True).stdout.strip()
    files = [os.path.join(d, "ptx", "libcublas.so.107.sm_120.ptx")]


print(f"{'file':<34} {'run':<14} {'time s':>8} {'peak MB':>8} {'× ptxas time':>13} {'× ptxas memory':>15}")
for f in files:
    target = re.search(r"^\s*\.target\s+(sm_\w+)", open(f).read(), re.M).group(1)
    base = measure([ptxas, "-arch", target, f, "-o", "/dev/null"])
    rows = [("ptxas " + target, base)]
    for opt in ["-O0", "-O3"]:
        rows.append((f"ptx-jit {opt}", measure([ptx_jit, "compile", f, "--arch", "host", "--emit", "llvm",
                                               opt, "-o", "/dev/null"])))
    for name, r in rows:
        if r is None:
            print(f"{os.path.basename(f):<34} {name:<14} failed")
            continue
        ratio = (f"{r[0] / base[0]:13.2f} {r[1] / base[1]:15.2f}") if base else ""
        print(f"{os.path.basename(f):<34} {name:<14} {r[0]:8.1f} {r[1]:8.0f} {ratio}")
