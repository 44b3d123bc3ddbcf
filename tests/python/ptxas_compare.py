"""Runs NVIDIA's ptxas and `ptx-jit lint` on ten typical PTX mistakes and prints a Markdown table of
both tools' messages (the README's comparison is this script's output).

usage: ptxas_compare.py PATH/TO/ptxas PATH/TO/ptx-jit
"""
import json
import os
import subprocess
import sys
import tempfile

PTXAS, PTX_JIT = sys.argv[1], sys.argv[2]
HEAD = ".version 8.5\n.target sm_90\n.address_size 64\n.global .u32 g;\n.visible .entry k(.param .u64 p)\n{\n\t.reg .b32 %r<4>;\n\t.reg .f32 %f<4>;\n\t.reg .b64 %rd<4>;\n\t.reg .pred %p<2>;\n\tld.param.u64 %rd1, [p];\n"
TAIL = "\tret;\n}\n"
MISTAKES = [
    ("misspelt state space", "\tld.glbal.u32 %r1, [%rd1];\n"),
    ("register out of its `<N>` range", "\tmov.u32 %r4, 1;\n"),
    ("operand of the wrong type", "\tadd.f32 %f1, %f2, %rd1;\n"),
    ("missing operand", "\tadd.s32 %r1, %r2;\n"),
    ("integer literal in a float instruction", "\tadd.f32 %f1, %f2, 1;\n"),
    ("branch to a misspelt label", "\t@%p1 bra DONE;\nDNOE:\n"),
    ("variable accessed in the wrong space", "\tld.shared.u32 %r1, [g];\n"),
    ("float-to-int `cvt` without rounding", "\tcvt.s32.f32 %r1, %f1;\n"),
    ("instruction above the target", "\twgmma.fence.sync.aligned;\n"),
    ("memory order without a scope", "\tld.relaxed.global.u32 %r1, [%rd1];\n"),
    ("missing `;`", "\tmov.u32 %r1, 1\n\tmov.u32 %r2, 2;\n"),
]


def main():
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for what, body in MISTAKES:
            path = os.path.join(d, "k.ptx")
            with open(path, "w") as f:
                f.write(HEAD + body + TAIL)
            px = subprocess.run([PTXAS, "-arch=sm_90", path, "-o", os.devnull], capture_output=True, text=True)
            ptxas = next((l for l in px.stderr.splitlines() if "error" in l or "fatal" in l), "(accepted)")
            ptxas = ptxas.replace(path, "k.ptx")
            js = subprocess.run([PTX_JIT, "lint", "--format", "json", path], capture_output=True, text=True)
            errs = [json.loads(l) for l in js.stdout.splitlines() if l.strip()]
            errs = [e for e in errs if e["severity"] == "error"] or errs
            if errs:
                e = errs[0]
                ours = f"k.ptx:{e['line']}:{e['column']} [{e['code']}] {e['message']}"
                if e.get("help"):
                    ours += f" — help: {e['help']}"
            else:
                ours = "(accepted)"
            rows.append((what, ptxas, ours))
    print("| Mistake | ptxas 13 | ptx-jit lint |")
    print("| --- | --- | --- |")
    for what, a, b in rows:
        esc = lambda s: s.replace("|", "\\|")
        print(f"| {what} | `{esc(a)}` | {esc(b)} |")


main()
