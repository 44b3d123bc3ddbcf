#!/usr/bin/env python3
"""`ptx-jit bench kernel` and `ptx-jit bench program` as a user runs them: the phases, samples and
statistics in their JSON, the CSV rows, the exit status of the program, and their HTML reports
rendered in a headless Chromium (the plots laid out and painted, no console message).

usage: bench_harness.py PATH/TO/ptx-jit   (PTXAS=… adds `--against ptxas`; PTXJIT_REQUIRE_BROWSER=1
makes a missing Chromium a failure instead of a skip)
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def run(cmd, expect=0):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != expect:
        sys.exit(f"`{' '.join(cmd)}` exited {p.returncode}, expected {expect}:\n{p.stdout}\n{p.stderr}")
    return p


def png_pixels(path):
    """The RGBA pixels of an 8-bit, non-interlaced RGB or RGBA PNG (what Chromium writes)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, channels = 8, b"", 0, 0, 4
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format"
            channels = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def colour_count(path, rgb):
    _, _, channels, rows = png_pixels(path)
    want = bytes(rgb)
    return sum(
        1 for row in rows for i in range(0, len(row), channels) if row[i : i + 3] == want
    )


def browser_check(page, what, plots):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        if os.environ.get("PTXJIT_REQUIRE_BROWSER") == "1":
            check(False, f"{what}: Chromium is installed")
        else:
            print(f"skip  {what}: no chromium on the PATH (make test installs it)")
        return
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"]
    url = "file://" + os.path.abspath(page)
    dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    figures = open(page).read().count("<figure>")
    check(figures == plots, f"{what}: the page has its {plots} plots ({figures})")
    check(f'data-plots="{figures}"' in dom.stdout, f"{what}: the browser laid out all {figures} plots")
    console = [l for l in dom.stderr.splitlines() if "CONSOLE" in l]
    check(not console, f"{what}: no console message" + (f" ({console[0]})" if console else ""))
    shot = os.path.join(os.path.dirname(page), "screenshot.png")
    subprocess.run(flags + ["--window-size=900,2600", f"--screenshot={shot}", url], capture_output=True, timeout=120)
    # The first two colours of the palette fill the first plot's bars.
    blue, orange = colour_count(shot, (0x00, 0x72, 0xB2)), colour_count(shot, (0xE6, 0x9F, 0x00))
    check(blue > 400 and orange > 400, f"{what}: the screenshot shows the plots' bars ({blue} and {orange} pixels)")


def bench_kernel(ptx_jit, tmp):
    out = os.path.join(tmp, "kernel")
    cmd = [ptx_jit, "bench", "kernel", f"{ROOT}/tests/ptx/vecadd.ptx", "--kernel", "vecadd", "--grid", "4",
           "--block", "64", "--arg", "f32*256=1", "--arg", "f32*256=2", "--arg", "f32*256", "--arg", "u32:256",
           "--compiles", "3", "--max-launches", "50", "--precision", "1e-12", "--budget", "60",
           "--json", out + ".json", "--csv", out + ".csv", "--report", out]
    ptxas = os.environ.get("PTXAS")
    if ptxas:
        cmd += ["--against", "ptxas", "--ptxas", ptxas]
    p = run(cmd)
    r = json.load(open(out + ".json"))
    stages = []
    for ph in r["phases"]:
        if ph["stage"] not in stages:
            stages.append(ph["stage"])
    check(stages == ["load", "prepare", "quick", "optimised"], f"bench kernel: the stages in order ({stages})")
    names = lambda s: [ph["name"] for ph in r["phases"] if ph["stage"] == s]
    check(names("prepare") == ["parse", "check", "lower"], "bench kernel: preparation's phases")
    quick = ["parse", "lower", "ssa", "addressing", "nan", "optimise", "blocks", "codegen", "link"]
    check(names("quick") == quick, f"bench kernel: the quick tier's phases ({names('quick')})")
    full = ["parse", "lower", "ssa", "addressing", "guards", "nan", "large", "optimise", "blocks", "codegen", "link"]
    check(names("optimised") == full, f"bench kernel: the optimised tier's phases ({names('optimised')})")
    check(all(len(ph["samples_ms"]) == 3 and ph["summary"]["n"] == 3 for ph in r["phases"]),
          "bench kernel: every phase has one sample per compile")
    check(all(ph["summary"]["min"] <= ph["summary"]["median"] <= ph["summary"]["max"] for ph in r["phases"]),
          "bench kernel: min <= median <= max")
    check(all(ph["summary"]["median"] > 0 for ph in r["phases"] if ph["name"] in ("lower", "codegen", "link")),
          "bench kernel: lowering, code generation and linking take time")
    firsts = r["first_launches"]
    check(len(firsts) == 3 and all(f["tier"] == "quick" and 0 < f["jit_ms"] <= f["wall_ms"] for f in firsts),
          "bench kernel: a small first launch runs the quick tier, its JIT within its wall time")
    for s in r["steady"]:
        m = s["summary"]
        check(s["stopped_by"] == "launches" and m["n"] == 50 == len(s["samples_ms"]),
              f"bench kernel: {s['tier']} tier stops at --max-launches (50)")
        check(m["min"] <= m["mean"] <= m["max"] and m["ci95"] > 0, f"bench kernel: {s['tier']} tier's statistics")
    check([s["tier"] for s in r["steady"]] == ["quick", "optimised"], "bench kernel: both tiers' steady state")
    if ptxas:
        peer = r["peers"][0]
        check(peer["peer"] == "ptxas" and len(peer["samples_ms"]) == 3, "bench kernel: ptxas timed beside")
        check("ptxas: median" in p.stdout, "bench kernel: the table compares with ptxas")
    rows = open(out + ".csv").read().splitlines()
    samples = sum(len(ph["samples_ms"]) for ph in r["phases"]) + len(r["compile_peak_mb"]) + 2 * len(firsts)
    samples += sum(len(s["samples_ms"]) for s in r["steady"]) + sum(len(p["samples_ms"]) for p in r["peers"])
    check(rows[0] == "kind,stage,name,index,ms" and len(rows) == 1 + samples, "bench kernel: one CSV row per sample")
    check("steady state (ms per launch):" in p.stdout, "bench kernel: the terminal table")
    browser_check(os.path.join(out, "index.html"), "bench kernel's report", 4)


def bench_counters(ptx_jit, tmp):
    """tests/bench/counters.ptx, one CTA of 64 threads, counted by hand: blocks of 12, 3 and 4
    instructions, the middle one skipped by threads 0-7."""
    out = os.path.join(tmp, "counters")
    run([ptx_jit, "bench", "kernel", f"{ROOT}/tests/bench/counters.ptx", "--kernel", "counts", "--block", "64",
         "--arg", "f32*64", "--arg", "f32*64=1", "--compiles", "1", "--max-launches", "20", "--counters",
         "--json", out + ".json", "--report", out])
    c = json.load(open(out + ".json"))["counters"]
    classes = {k["class"]: (k["thread_instructions"], k["warp_instructions"]) for k in c["classes"] if k["thread_instructions"]}
    check(classes == {"fp32": (112, 4), "integer": (384, 12), "conversion": (56, 2), "move": (128, 4),
                      "control": (128, 4), "memory.global": (128, 4), "memory.shared": (64, 2),
                      "memory.param": (128, 4), "sync": (64, 2)}, f"counters: the instruction mix ({classes})")
    check(c["thread_instructions"] == 64 * 12 + 56 * 3 + 64 * 4 == sum(k["thread_instructions"] for k in c["classes"]),
          "counters: the classes sum to the thread instructions (1192)")
    check(c["warp_instructions"] == 38 and abs(c["active_lanes"] - 1192 / 38) < 1e-9, "counters: warp instructions, active lanes")
    check((c["ctas"], c["warps"], c["branches"], c["divergent_branches"], c["barriers"], c["warp_barriers"]) == (1, 2, 2, 1, 64, 2),
          "counters: CTAs, warps, branches (one divergent), barriers")
    spaces = {s["space"]: s for s in c["spaces"]}
    g, sh = spaces["global"], spaces["shared"]
    check((g["accesses"], g["bytes"], g["requests"], g["sectors"]) == (128, 512, 4, 16),
          "counters: global accesses, bytes, requests and sectors (coalesced)")
    check((sh["accesses"], sh["bytes"], sh["requests"], sh["wavefronts"], sh["ideal_wavefronts"], sh["bank_conflicts"])
          == (64, 256, 2, 4, 2, 2), "counters: shared accesses and two-way bank conflicts")
    check(not c["truncated"] and c["launch_ms"] > 0, "counters: the counted launch, traced whole")
    browser_check(os.path.join(out, "index.html"), "bench kernel's report with counters", 5)
    # `strided`: four CTAs run as a thread loop. Blocks of 2, 7 and 1 instructions; the loop's block
    # entered twice by threads 0-15 (80 entries, 3 by warps, per CTA); its predicated load made by
    # threads 16-63 in their first pass and by threads 0-15 in their second: 3 requests per CTA of
    # 16, 32 and 16 threads at 8-byte strides, touching 4, 8 and 4 sectors.
    run([ptx_jit, "bench", "kernel", f"{ROOT}/tests/bench/counters.ptx", "--kernel", "strided", "--grid", "4",
         "--block", "64", "--arg", "u32*160", "--compiles", "1", "--max-launches", "10", "--counters",
         "--json", out + "-strided.json"])
    c = json.load(open(out + "-strided.json"))["counters"]
    classes = {k["class"]: (k["thread_instructions"], k["warp_instructions"]) for k in c["classes"] if k["thread_instructions"]}
    check(classes == {"integer": (1600, 60), "move": (256, 8), "control": (576, 20), "memory.global": (320, 12),
                      "memory.param": (256, 8)}, f"counters, thread loop: the instruction mix ({classes})")
    check((c["ctas"], c["warps"], c["thread_instructions"], c["warp_instructions"]) == (4, 8, 3008, 108),
          "counters, thread loop: CTAs, warps and instructions")
    check((c["branches"], c["divergent_branches"]) == (12, 4), "counters, thread loop: one divergent loop exit per CTA")
    g = {s["space"]: s for s in c["spaces"]}["global"]
    check((g["accesses"], g["bytes"], g["requests"], g["sectors"]) == (256, 1024, 12, 64),
          "counters, thread loop: predicated loads pair by block entry (12 requests, 64 sectors)")


def bench_program(ptx_jit, tmp):
    client = os.path.join(ROOT, "build", "client")
    out = os.path.join(tmp, "program")
    kernels = f"{ROOT}/tests/demo/kernels.ptx"
    p = run([ptx_jit, "bench", "program", "--json", out + ".json", "--report", out, "--", client, kernels])
    r = json.load(open(out + ".json"))
    check(r["processes"] == 1 and r["exit_code"] == 0, "bench program: one process, its exit status")
    launched = {k["name"]: k for k in r["kernels"]}
    check(sorted(launched) == ["saxpy", "vecadd"], f"bench program: the kernels launched ({sorted(launched)})")
    check(all(k["launches"] == 1 and k["threads"] >= 1 << 22 and k["exec_ms"] > 0 for k in launched.values()),
          "bench program: each kernel's launch, threads and run time")
    check(os.path.getsize(kernels) in [m["bytes"] for m in r["modules"]], "bench program: the module's PTX size")
    check(sum(k["exec_ms"] for k in r["kernels"]) < r["wall_ms"], "bench program: run time within the wall time")
    check("all kernels" in p.stdout, "bench program: the terminal table")
    p = subprocess.run([ptx_jit, "bench", "program", "--", "sh", "-c", "exit 3"], capture_output=True, text=True)
    check(p.returncode == 3 and "0 process(es) used the driver" in p.stdout,
          "bench program: a program that never loads the driver, its exit status passed on")
    browser_check(os.path.join(out, "index.html"), "bench program's report", 2)


def main():
    ptx_jit = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="ptx-jit-bench-")
    bench_kernel(ptx_jit, tmp)
    bench_counters(ptx_jit, tmp)
    bench_program(ptx_jit, tmp)
    shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("bench harness: all checks passed")


if __name__ == "__main__":
    main()
