#!/usr/bin/env python3
"""One very large kernel, cost linear in its size: straight-line kernels of growing size (a dependent
chain of `fma`, `add` and `xor`, as unrolled code gives) generated here, each run once with
`ptx-jit run` (load, compile of the optimised tier, launch of one warp) and assembled by `ptxas` for
sm_75, side by side, each in its own process under /usr/bin/time: wall time and peak resident memory,
per MB of PTX. Linear cost shows as flat per-MB columns.

Usage: benches/large_kernel.py PTX_JIT PTXAS [MB …]   (default sizes 1 4 16)"""
import os
import sys
import tempfile

from peak import measure

ptx_jit, ptxas = sys.argv[1], sys.argv[2]
sizes = [float(s) for s in sys.argv[3:]] or [1, 4, 16]
HEAD = """.version 7.0
.target sm_75
.address_size 64
.visible .entry big(.param .u64 p)
{
  .reg .u32 %r<4>;
  .reg .u64 %rd<4>;
  .reg .f32 %f<2>;
  ld.param.u64 %rd1, [p];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, 0;
  mov.u32 %r3, 0;
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.f32 %f1, [%rd3];
"""
BODY = ["  fma.rn.f32 %f1, %f1, 0f3F800001, 0f3C000000;", "  add.u32 %r2, %r2, %r1;", "  xor.b32 %r3, %r3, %r2;"]
TAIL = "  st.global.f32 [%rd3], %f1;\n  ret;\n}\n"


def generate(path, mb):
    with open(path, "w") as f:
        f.write(HEAD)
        size, i = len(HEAD), 0
        while size < mb * 1e6:
            line = BODY[i % 3] + "\n"
            f.write(line)
            size += len(line)
            i += 1
        f.write(TAIL)


print(f"{'MB':>5} {'run':<8} {'time s':>8} {'peak MB':>8} {'s per MB':>9} {'MB per MB':>10} {'× ptxas time':>13}")
with tempfile.TemporaryDirectory() as d:
    for mb in sizes:
        f = os.path.join(d, f"big{mb}.ptx")
        generate(f, mb)
        base = measure([ptxas, "-arch", "sm_75", f, "-o", os.devnull])
        ours = measure([ptx_jit, "run", f, "--kernel", "big", "--block", "32", "--arg", "f32*32=1.5"])
        for name, r in [("ptxas", base), ("ptx-jit", ours)]:
            if r is None:
                print(f"{mb:>5g} {name:<8} failed")
                continue
            ratio = f"{r[0] / base[0]:.2f}" if base else "-"
            print(f"{mb:>5g} {name:<8} {r[0]:>8.2f} {r[1]:>8.0f} {r[0] / mb:>9.2f} {r[1] / mb:>10.1f} {ratio:>13}")
        sys.stdout.flush()
