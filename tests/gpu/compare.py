#!/usr/bin/env python3
"""GPU comparison of ptx-jit: the same kernels, the same inputs, four ways.

Modes (each runs in its own process, since each needs a different libcuda.so.1):

  real-orig      the real NVIDIA driver, the ORIGINAL PTX (ground truth from NVIDIA's own JIT)
  real-retarget  the real NVIDIA driver, PTX retargeted by `ptx-jit compile K.ptx --arch sm_XX`
  passthrough    ptx-jit's libcuda.so.1 with PTXJIT_BACKEND=passthrough (retargets in cuModuleLoadData,
                 forwards everything to the real driver), the original PTX
  cpu            ptx-jit's libcuda.so.1, default (CPU) backend, the original PTX

Kernels: every case of the ZLUDA execution corpus (zluda-run/cases.json, with the harness semantics of
the corpus README: zeroed output, params (input, output) or (output, output), grid 1, block block_x,
1024 B of dynamic shared memory, elementwise == on the element type) and, with --ptx-tests, every
tests/ptx/*.ptx file with a `// run:` directive (its `// out:` lines are the expected buffers).

Each mode's outputs are compared with the expected values, and the modes with each other bit for bit.
A table goes to stdout; a JSON summary (every case, every mode, every mismatch) to --out.

Usage (on a machine with a GPU; without one, only the cpu mode runs):
  python3 tests/gpu/compare.py --ptx-jit PATH/ptx-jit --shim-dir DIR_WITH_OUR_libcuda.so.1 \
      --corpus ../shared/corpus/zluda-run --ptx-tests tests/ptx --out OUTDIR

The cuda-bindings package must be importable (`from cuda.bindings import driver`, or the older
`from cuda import cuda`); numpy too.
"""
import argparse
import ctypes
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

MODES = ["real-orig", "real-retarget", "passthrough", "cpu"]
# Pairs of modes whose buffers are compared bit for bit.
PAIRS = [
    ("real-orig", "real-retarget"),
    ("real-orig", "passthrough"),
    ("real-orig", "cpu"),
    ("real-retarget", "passthrough"),
    ("real-retarget", "cpu"),
]

# ---------------------------------------------------------------------------------------------------
# Element types


def elem_size(t):
    return {"u8": 1, "s8": 1, "i8": 1, "u16": 2, "s16": 2, "i16": 2, "f16": 2, "u32": 4, "s32": 4, "i32": 4,
            "f32": 4, "u64": 8, "s64": 8, "i64": 8, "f64": 8}[t]


def norm_elem(t):
    return "s" + t[1:] if t.startswith("i") else t


def encode(t, v):
    """Little-endian bytes of one value written as text (ptx_jit::args syntax)."""
    import numpy as np

    t = norm_elem(t)
    if t == "f32":
        return np.array([float(v)], dtype=np.float32).tobytes()
    if t == "f64":
        return np.array([float(v)], dtype=np.float64).tobytes()
    i = int(v, 16) if v.startswith("0x") else int(v)
    n = elem_size(t)
    if t.startswith("s"):
        if not -(1 << (8 * n - 1)) <= i < (1 << (8 * n - 1)):
            raise ValueError(f"{v} does not fit in {t}")
        i &= (1 << (8 * n)) - 1
    elif not 0 <= i < (1 << (8 * n)):
        raise ValueError(f"{v} does not fit in {t}")
    return i.to_bytes(n, "little")


def parse_arg(s):
    """`u32:7` (scalar), `f32[1,2]`, `u32*8`, `f32*8=1.5`, `u32*8=iota` (buffers)."""
    s = s.strip()
    if ":" in s:
        t, v = s.split(":", 1)
        return {"kind": "scalar", "type": norm_elem(t), "hex": encode(t, v).hex()}
    if "[" in s:
        t, rest = s.split("[", 1)
        body = rest.rstrip("]")
        vals = [x.strip() for x in body.split(",") if x.strip()]
        return {"kind": "buffer", "type": norm_elem(t), "hex": b"".join(encode(t, v) for v in vals).hex()}
    if "*" in s:
        t, rest = s.split("*", 1)
        n, _, fill = rest.partition("=")
        n = int(n)
        if not fill:
            data = bytes(n * elem_size(norm_elem(t)))
        elif fill == "iota":
            data = b"".join(encode(t, str(i)) for i in range(n))
        else:
            data = encode(t, fill) * n
        return {"kind": "buffer", "type": norm_elem(t), "hex": data.hex()}
    raise ValueError(f"not an argument: {s}")


def elements(t, b):
    """(bits as int, display text) per element."""
    import numpy as np

    n = elem_size(t)
    out = []
    for i in range(0, len(b) - len(b) % n, n):
        chunk = b[i:i + n]
        bits = int.from_bytes(chunk, "little")
        if t in ("f16", "f32", "f64"):
            v = np.frombuffer(chunk, dtype={"f16": np.float16, "f32": np.float32, "f64": np.float64}[t])[0]
            text = repr(float(v))
        elif t.startswith("s"):
            text = str(bits - (1 << (8 * n)) if bits >> (8 * n - 1) else bits)
        else:
            text = str(bits)
        out.append((bits, text))
    return out


def same_value(t, g, w):
    """Rust `==` on the element type (floats as IEEE values: +0 == -0, NaN only if the bits agree)."""
    import numpy as np

    if g == w:
        return True
    if t in ("f16", "f32", "f64"):
        dt = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[t]
        return bool(np.frombuffer(g, dtype=dt)[0] == np.frombuffer(w, dtype=dt)[0])
    return False


def first_mismatch(t, got, want, ieee):
    """None when equal, else a description of the first differing element."""
    n = elem_size(t)
    if len(got) != len(want):
        return {"what": f"{len(got)} bytes, expected {len(want)}"}
    bad = []
    for i in range(0, len(got), n):
        g, w = got[i:i + n], want[i:i + n]
        if (same_value(t, g, w) if ieee else g == w):
            continue
        bad.append(i // n)
    if not bad:
        return None
    i = bad[0]
    (gb, gt), = elements(t, got[i * n:(i + 1) * n])
    (wb, wt), = elements(t, want[i * n:(i + 1) * n])
    w = 2 * n
    return {"element": i, "count": len(bad), "of": len(got) // n, "got": gt, "got_bits": f"0x{gb:0{w}x}",
            "want": wt, "want_bits": f"0x{wb:0{w}x}"}


# ---------------------------------------------------------------------------------------------------
# Jobs


def zluda_jobs(corpus):
    cases = json.load(open(os.path.join(corpus, "cases.json")))
    jobs = []
    for c in cases:
        out = c["output"]
        size = elem_size(norm_elem(out["type"]))
        want = b"".join(int(b, 16).to_bytes(size, "little") for b in out["bits"])
        args = []
        if c["input"] is not None:
            inp = c["input"]
            isz = elem_size(norm_elem(inp["type"]))
            data = b"".join(int(b, 16).to_bytes(isz, "little") for b in inp["bits"])
            args.append({"kind": "buffer", "type": norm_elem(inp["type"]), "hex": data.hex()})
            args.append({"kind": "buffer", "type": norm_elem(out["type"]), "hex": bytes(len(want)).hex()})
        else:
            args.append({"kind": "alias", "of": 1})
            args.append({"kind": "buffer", "type": norm_elem(out["type"]), "hex": bytes(len(want)).hex()})
        # The alias points at the later buffer: put the real one first in allocation order.
        jobs.append({
            "id": "zluda/" + c["name"],
            "ptx": os.path.abspath(os.path.join(corpus, c["ptx"])),
            "kernel": c["kernel"],
            "grid": c["grid"],
            "block": c["block"],
            "shared": c["dynamic_shared_bytes"],
            "args": args,
            "outs": [{"arg": 1, "type": norm_elem(out["type"]), "hex": want.hex()}],
        })
    return jobs


def directive_jobs(folder):
    jobs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.ptx"))):
        run, outs = None, []
        for line in open(path):
            c = line.strip()
            if not c.startswith("//"):
                continue
            c = c[2:].strip()
            if c.startswith("run:"):
                run = {"grid": [1, 1, 1], "block": [1, 1, 1], "shared": 0, "args": []}
                for kv in c[4:].split():
                    k, v = kv.split("=", 1)
                    if k == "kernel":
                        run["kernel"] = v
                    elif k in ("grid", "block"):
                        d = [int(x) for x in v.split(",")]
                        run[k] = (d + [1, 1])[:3]
                    elif k == "shared":
                        run["shared"] = int(v)
                    elif k == "args":
                        run["args"] = [parse_arg(a) for a in v.split(";")]
            elif c.startswith("out:"):
                k, v = c[4:].strip().split("=", 1)
                a = parse_arg(v)
                outs.append({"arg": int(k.strip()[3:]), "type": a["type"], "hex": a["hex"]})
        if run is None:
            continue
        prefix = "ptx" if os.path.basename(os.path.normpath(folder)) == "ptx" else os.path.basename(os.path.normpath(folder))
        jobs.append({"id": prefix + "/" + os.path.basename(path)[:-4], "ptx": os.path.abspath(path), **run, "outs": outs})
    return jobs


# ---------------------------------------------------------------------------------------------------
# The worker: one process, one libcuda.so.1, every job


def load_driver():
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        from cuda import cuda as cu
    return cu


def worker(mode, jobs_file, results_file, skip):
    import numpy as np

    cu = load_driver()
    jobs = json.load(open(jobs_file))
    res = open(results_file, "a", buffering=1)

    def emit(obj):
        res.write(json.dumps(obj) + "\n")
        res.flush()

    def name(r):
        return r.name if hasattr(r, "name") else str(r)

    r = cu.cuInit(0)[0]
    libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcuda" in l})
    info = {"init": name(r), "libcuda": libs}
    if r != cu.CUresult.CUDA_SUCCESS:
        emit({"info": info})
        return 3
    dev = cu.cuDeviceGet(0)[1]
    info["device"] = cu.cuDeviceGetName(128, dev)[1].split(b"\0")[0].decode()
    A = cu.CUdevice_attribute
    info["cc"] = [cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)[1],
                  cu.cuDeviceGetAttribute(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)[1]]
    info["driver_version"] = cu.cuDriverGetVersion()[1]
    emit({"info": info})

    def new_ctx():
        err, ctx = cu.cuCtxCreate(None, 0, dev) if _ctx_create_takes_params(cu) else cu.cuCtxCreate(0, dev)
        if err != cu.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"cuCtxCreate: {name(err)}")
        return ctx

    ctx = new_ctx()
    for job in jobs[skip:]:
        emit({"start": job["id"]})
        out = {"id": job["id"]}
        ptx = job["ptx_by_mode"][mode]
        if ptx is None:
            out["skipped"] = "no PTX for this mode (retargeting failed)"
            emit(out)
            continue
        text = open(ptx, "rb").read() + b"\0"
        t0 = time.time()
        err, mod = cu.cuModuleLoadData(text)
        out["load"] = name(err)
        out["load_ms"] = round((time.time() - t0) * 1000, 2)
        if err != cu.CUresult.CUDA_SUCCESS:
            # Again with an error log buffer, for the JIT's message.
            try:
                J = cu.CUjit_option
                log = bytes(16384)
                cu.cuModuleLoadDataEx(text, 2, [J.CU_JIT_ERROR_LOG_BUFFER, J.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES],
                                      [log, len(log)])
                out["jit_log"] = log.split(b"\0")[0].decode(errors="replace")[:3000]
            except Exception as ex:  # the log is a nicety
                out["jit_log"] = f"(no log: {ex})"
            emit(out)
            continue
        err, fn = cu.cuModuleGetFunction(mod, job["kernel"].encode())
        if err != cu.CUresult.CUDA_SUCCESS:
            out["get_function"] = name(err)
            cu.cuModuleUnload(mod)
            emit(out)
            continue
        # Buffers: allocated, zeroed with cuMemsetD8, then filled (zero buffers stay as memset left them).
        ptrs, holders, host = {}, [], {}
        for i, a in enumerate(job["args"]):
            if a["kind"] == "buffer":
                data = bytes.fromhex(a["hex"])
                e, p = cu.cuMemAlloc(max(len(data), 1))
                assert e == cu.CUresult.CUDA_SUCCESS, name(e)
                cu.cuMemsetD8(p, 0, max(len(data), 1))
                if any(data):
                    arr = np.frombuffer(data, dtype=np.uint8).copy()
                    e = cu.cuMemcpyHtoD(p, arr.ctypes.data, len(data))[0]
                    assert e == cu.CUresult.CUDA_SUCCESS, name(e)
                ptrs[i] = p
                host[i] = len(data)
        params = []
        for i, a in enumerate(job["args"]):
            if a["kind"] == "buffer":
                v = ctypes.c_uint64(int(ptrs[i]))
            elif a["kind"] == "alias":
                v = ctypes.c_uint64(int(ptrs[a["of"]]))
            else:
                data = bytes.fromhex(a["hex"])
                v = (ctypes.c_ubyte * len(data)).from_buffer_copy(data)
            holders.append(v)
            params.append(ctypes.addressof(v))
        parr = (ctypes.c_void_p * max(len(params), 1))(*params)
        g, b = job["grid"], job["block"]
        t0 = time.time()
        err = cu.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], job["shared"], 0,
                                ctypes.addressof(parr), 0)[0]
        out["launch"] = name(err)
        serr = cu.cuCtxSynchronize()[0]
        out["sync"] = name(serr)
        out["run_ms"] = round((time.time() - t0) * 1000, 2)
        bufs = {}
        for i, n in host.items():
            arr = np.zeros(max(n, 1), dtype=np.uint8)
            e = cu.cuMemcpyDtoH(arr.ctypes.data, ptrs[i], max(n, 1))[0]
            if e != cu.CUresult.CUDA_SUCCESS:
                out.setdefault("copy_back", name(e))
            bufs[str(i)] = arr[:n].tobytes().hex()
        out["bufs"] = bufs
        for p in ptrs.values():
            cu.cuMemFree(p)
        cu.cuModuleUnload(mod)
        bad = err != cu.CUresult.CUDA_SUCCESS or serr != cu.CUresult.CUDA_SUCCESS or "copy_back" in out
        if bad:
            # A failed launch may leave the context unusable (sticky errors): start a fresh one.
            cu.cuCtxDestroy(ctx)
            try:
                ctx = new_ctx()
            except RuntimeError as ex:
                out["recover"] = str(ex)
                emit(out)
                return 4
        emit(out)
    cu.cuCtxDestroy(ctx)
    emit({"done": True})
    return 0


def _ctx_create_takes_params(cu):
    """cuda-bindings 13 has cuCtxCreate(ctxCreateParams, flags, dev); 12.x has cuCtxCreate(flags, dev)."""
    import inspect

    try:
        return len(inspect.signature(cu.cuCtxCreate).parameters) >= 3
    except (TypeError, ValueError):
        doc = cu.cuCtxCreate.__doc__ or ""
        return "ctxCreateParams" in doc or "CUctxCreateParams" in doc


# ---------------------------------------------------------------------------------------------------
# The orchestrator


def find_real_libcuda(shim_dir):
    """The NVIDIA driver's libcuda.so.1 (not ours), or None."""
    cands = []
    try:
        for line in subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines():
            if "libcuda.so.1" in line and "=>" in line:
                cands.append(line.split("=>")[1].strip())
    except OSError:
        pass
    cands += ["/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
              "/usr/lib64/libcuda.so.1", "/usr/local/cuda/compat/libcuda.so.1"]
    ours = os.path.realpath(os.path.join(shim_dir, "libcuda.so.1")) if shim_dir else None
    for c in cands:
        if not os.path.exists(c) or os.path.realpath(c) == ours:
            continue
        try:
            with open(c, "rb") as f:
                if b"ptxjit_shim_marker" in f.read():
                    continue
        except OSError:
            continue
        return c
    return None


def gpu_arch():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=60).stdout.split()
        if out:
            return "sm_" + out[0].replace(".", "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return None


def header(path):
    v = t = None
    for line in open(path, errors="replace"):
        s = line.split("//")[0].strip()
        if s.startswith(".version") and v is None:
            v = s.split()[1]
        elif s.startswith(".target") and t is None:
            t = " ".join(s.split()[1:])
        if v and t:
            break
    return {"version": v, "target": t}


def retarget_all(jobs, ptx_jit, arch, work, opt):
    """`ptx-jit compile` for every job's PTX; returns {id: {...}}."""
    d = os.path.join(work, "retarget")
    os.makedirs(d, exist_ok=True)
    info = {}
    for j in jobs:
        dst = os.path.join(d, j["id"].replace("/", "__") + f".{arch}.ptx")
        cmd = [ptx_jit, "compile", j["ptx"], "--arch", arch, "-o", dst] + ([f"-O{opt}"] if opt is not None else [])
        t0 = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            rc, err = p.returncode, (p.stderr + p.stdout)[-4000:]
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        ok = rc == 0 and os.path.exists(dst)
        info[j["id"]] = {"rc": rc, "ms": round((time.time() - t0) * 1000, 1), "out": dst if ok else None,
                         "stderr": err.strip() if not ok or err.strip() else "",
                         "orig": header(j["ptx"]), "new": header(dst) if ok else None}
    return info


def run_mode(mode, jobs, env, work, case_timeout, python):
    """Runs the worker for `mode`, restarting it after a crash or a hang; returns (info, {id: result})."""
    jobs_file = os.path.join(work, f"jobs.{mode}.json")
    json.dump(jobs, open(jobs_file, "w"))
    log_file = os.path.join(work, f"stderr.{mode}.log")
    results, info, skip, attempt = {}, None, 0, 0
    ids = [j["id"] for j in jobs]
    while skip < len(jobs):
        attempt += 1
        results_file = os.path.join(work, f"results.{mode}.{attempt}.jsonl")
        open(results_file, "w").close()
        e = dict(env)
        if "PTXJIT_TRACE" in e:
            e["PTXJIT_TRACE"] = f"{e['PTXJIT_TRACE']}.{attempt}"
        with open(log_file, "a") as log:
            log.write(f"--- worker {attempt} from job {skip} ({ids[skip]})\n")
            log.flush()
            p = subprocess.Popen([python, os.path.abspath(__file__), "--worker", mode, "--jobs", jobs_file,
                                  "--results", results_file, "--skip", str(skip)],
                                 env=e, stdout=log, stderr=log)
            seen, last_change, started, done, progress = 0, time.time(), None, False, 0
            while True:
                try:
                    rc = p.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    rc = None
                lines = open(results_file).read().splitlines()
                if rc is None and lines and not lines[-1].endswith("}"):
                    lines = lines[:-1]  # a line being written
                if len(lines) != seen:
                    for l in lines[seen:]:
                        try:
                            o = json.loads(l)
                        except ValueError:
                            continue
                        if "info" in o:
                            info = info or o["info"]
                        elif "start" in o:
                            started = o["start"]
                        elif "done" in o:
                            done = True
                        elif "id" in o:
                            results[o["id"]] = o
                            started = None
                            progress += 1
                    seen = len(lines)
                    last_change = time.time()
                if rc is not None:
                    break
                if time.time() - last_change > case_timeout:
                    p.kill()
                    p.wait()
                    rc = "timeout"
                    break
        if done:
            break
        if info is not None and info.get("init") not in (None, "CUDA_SUCCESS"):
            break  # no driver / no device: nothing to run in this mode
        tail = open(log_file, errors="replace").read()[-2000:]
        if started is not None:
            # Crash or hang in a case: that case is the culprit; carry on after it.
            results[started] = {"id": started, "crash": f"worker {'hung' if rc == 'timeout' else 'exited with ' + str(rc)}",
                                "stderr_tail": tail}
            skip = ids.index(started) + 1
            continue
        if progress == 0:
            info = dict(info or {}, worker_rc=rc, stderr_tail=tail)
            break
        skip = max(ids.index(i) for i in results if i in ids) + 1
    return info, results


def evaluate(job, r, approx):
    """pass / FAIL / error text for one mode's result."""
    if r is None:
        return "n/a", None
    if "skipped" in r:
        return "skip", r["skipped"]
    if "crash" in r:
        return "CRASH", r["crash"]
    if r.get("load") != "CUDA_SUCCESS":
        return "LOADERR", f"{r.get('load')}: {r.get('jit_log', '')}"
    if "get_function" in r:
        return "NOFUNC", r["get_function"]
    if r.get("launch") != "CUDA_SUCCESS" or r.get("sync") != "CUDA_SUCCESS":
        return "LAUNCHERR", f"launch {r.get('launch')}, sync {r.get('sync')}"
    diffs = []
    for o in job["outs"]:
        got = bytes.fromhex(r["bufs"].get(str(o["arg"]), ""))
        m = first_mismatch(o["type"], got, bytes.fromhex(o["hex"]), ieee=True)
        if m:
            m["arg"] = o["arg"]
            diffs.append(m)
    if diffs:
        return "FAIL", diffs
    return "pass", None


def buffer_types(job):
    t = {}
    for i, a in enumerate(job["args"]):
        if a["kind"] == "buffer":
            t[str(i)] = a["type"]
    for o in job["outs"]:
        t[str(o["arg"])] = o["type"]
    return t


def bitwise(job, ra, rb):
    """None when both ran and every buffer is bit-identical; 'n/a' when one did not run; else diffs."""
    ok = lambda r: r is not None and "bufs" in r and r.get("launch") == "CUDA_SUCCESS" and r.get("sync") == "CUDA_SUCCESS"
    if not (ok(ra) and ok(rb)):
        return "n/a"
    types = buffer_types(job)
    diffs = []
    for k in sorted(ra["bufs"], key=int):
        m = first_mismatch(types.get(k, "u8"), bytes.fromhex(rb["bufs"].get(k, "")), bytes.fromhex(ra["bufs"][k]), ieee=False)
        if m:
            m["arg"] = int(k)
            diffs.append(m)
    return diffs or None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--jobs", help=argparse.SUPPRESS)
    ap.add_argument("--results", help=argparse.SUPPRESS)
    ap.add_argument("--skip", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--ptx-jit", default="target/release/ptx-jit", help="the ptx-jit CLI")
    ap.add_argument("--shim-dir", default="target/release", help="folder holding ptx-jit's libcuda.so.1")
    ap.add_argument("--corpus", default="../shared/corpus/zluda-run", help="zluda-run folder ('' for none)")
    ap.add_argument("--ptx-tests", default="", help="comma-separated folders of .ptx files with // run: directives (e.g. tests/ptx,tests/gpu/probes)")
    ap.add_argument("--arch", help="target for ptx-jit compile (default: from nvidia-smi, else sm_90)")
    ap.add_argument("--opt", type=int, help="-O level for ptx-jit compile (default: the CLI's)")
    ap.add_argument("--real-libcuda", help="NVIDIA's libcuda.so.1 (default: found with ldconfig)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--only", default="", help="comma-separated job ids or name substrings")
    ap.add_argument("--work", default="/tmp/ptxjit-gpu-compare", help="scratch folder")
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="where summary.json / table.txt go")
    ap.add_argument("--extra-lib-path", default="", help="appended to every mode's LD_LIBRARY_PATH (libraries the shim needs)")
    ap.add_argument("--case-timeout", type=float, default=60.0, help="seconds without progress before a worker is killed")
    a = ap.parse_args()

    if a.worker:
        sys.exit(worker(a.worker, a.jobs, a.results, a.skip))

    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.makedirs(a.out, exist_ok=True)
    shim_dir = os.path.abspath(a.shim_dir)
    ptx_jit = os.path.abspath(a.ptx_jit)
    arch = a.arch or gpu_arch() or "sm_90"
    real = a.real_libcuda or find_real_libcuda(shim_dir)
    modes = [m for m in a.modes.split(",") if m]
    print(f"arch {arch}; ptx-jit {ptx_jit}; our libcuda in {shim_dir}; real libcuda {real}", flush=True)

    jobs = zluda_jobs(a.corpus) if a.corpus else []
    for folder in filter(None, a.ptx_tests.split(",")):
        jobs += directive_jobs(folder)
    if a.only:
        keys = a.only.split(",")
        jobs = [j for j in jobs if any(k == j["id"] or k in j["id"] for k in keys)]
    approx = {j["id"]: bool(re.search(r"\.approx|\b(sin|cos|ex2|lg2|rsqrt|tanh)\.", open(j["ptx"]).read())) for j in jobs}

    t0 = time.time()
    rt = retarget_all(jobs, ptx_jit, arch, work, a.opt)
    n_rt = sum(1 for v in rt.values() if v["out"])
    print(f"retargeted {n_rt}/{len(jobs)} files for {arch} in {time.time() - t0:.1f} s", flush=True)
    for j in jobs:
        j["ptx_by_mode"] = {"real-orig": j["ptx"], "real-retarget": rt[j["id"]]["out"], "passthrough": j["ptx"], "cpu": j["ptx"]}

    base = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PTXJIT_BACKEND", "PTXJIT_REAL_LIBCUDA", "PTXJIT_TRACE", "PTX_JIT_LOG")}
    base["PYTHONUNBUFFERED"] = "1"
    envs = {}
    real_dir = os.path.dirname(real) if real else None
    envs["real-orig"] = dict(base, **({"LD_LIBRARY_PATH": real_dir} if real_dir else {}))
    envs["real-retarget"] = envs["real-orig"]
    envs["passthrough"] = dict(base, LD_LIBRARY_PATH=shim_dir, PTXJIT_BACKEND="passthrough",
                               PTXJIT_TRACE=os.path.join(work, "passthrough.trace"), PTX_JIT_LOG="1",
                               **({"PTXJIT_REAL_LIBCUDA": real} if real else {}))
    envs["cpu"] = dict(base, LD_LIBRARY_PATH=shim_dir, PTX_JIT_LOG="1")

    if a.extra_lib_path:
        for m in envs:
            envs[m] = dict(envs[m], LD_LIBRARY_PATH=":".join(x for x in (envs[m].get("LD_LIBRARY_PATH"), a.extra_lib_path) if x))
    infos, results = {}, {}
    for m in modes:
        if m.startswith("real") and not real:
            infos[m] = {"unavailable": "no real libcuda.so.1 found"}
            results[m] = {}
            print(f"{m}: skipped (no real libcuda.so.1)", flush=True)
            continue
        t0 = time.time()
        infos[m], results[m] = run_mode(m, jobs, envs[m], work, a.case_timeout, sys.executable)
        infos[m] = infos[m] or {}
        infos[m]["seconds"] = round(time.time() - t0, 1)
        print(f"{m}: {json.dumps(infos[m])[:600]}", flush=True)

    # Passthrough notes from the trace: what it retargeted for, or why it passed PTX on unchanged.
    notes = []
    for tr in sorted(glob.glob(os.path.join(work, "passthrough.trace.*"))):
        for line in open(tr, errors="replace"):
            if "passthrough:" in line:
                notes.append(line.strip()[:400])
    # Tally and table.
    table, summary_cases = [], []
    counts = {m: {} for m in modes}
    agree = {f"{x}={y}": {"same": 0, "differ": 0, "n/a": 0} for x, y in PAIRS if x in modes and y in modes}
    for j in jobs:
        row = {"id": j["id"], "approx": approx[j["id"]], "retarget": {k: rt[j["id"]][k] for k in ("rc", "ms", "stderr", "orig", "new")}}
        for m in modes:
            st, detail = evaluate(j, results[m].get(j["id"]), approx[j["id"]])
            counts[m][st] = counts[m].get(st, 0) + 1
            row[m] = {"status": st}
            if detail:
                row[m]["detail"] = detail
            r = results[m].get(j["id"])
            if r:
                for k in ("load_ms", "run_ms", "stderr_tail"):
                    if k in r:
                        row[m][k] = r[k]
        row["bitwise"] = {}
        for x, y in PAIRS:
            if x in modes and y in modes:
                d = bitwise(j, results[x].get(j["id"]), results[y].get(j["id"]))
                key = f"{x}={y}"
                if d == "n/a":
                    agree[key]["n/a"] += 1
                    row["bitwise"][key] = "n/a"
                elif d is None:
                    agree[key]["same"] += 1
                    row["bitwise"][key] = "same"
                else:
                    agree[key]["differ"] += 1
                    row["bitwise"][key] = d
        summary_cases.append(row)

    short = {"real-orig": "orig", "real-retarget": "retgt", "passthrough": "pass", "cpu": "cpu"}
    w = max([len(j["id"]) for j in jobs] + [4])
    head = f"{'case':<{w}}  " + "  ".join(f"{short[m]:<9}" for m in modes) + "  bit-for-bit (" + ", ".join(
        f"{short[x]}={short[y]}" for x, y in PAIRS if x in modes and y in modes) + ")"
    table.append(head)
    for row in summary_cases:
        bits = []
        for x, y in PAIRS:
            if x in modes and y in modes:
                v = row["bitwise"][f"{x}={y}"]
                bits.append("=" if v == "same" else "." if v == "n/a" else "X")
        line = f"{row['id']:<{w}}  " + "  ".join(f"{row[m]['status']:<9}" for m in modes) + "  " + "".join(bits)
        if row["approx"]:
            line += "  (.approx)"
        table.append(line)
    table.append("")
    for m in modes:
        table.append(f"{m:<14} " + ", ".join(f"{k} {v}" for k, v in sorted(counts[m].items())))
    for k, v in agree.items():
        table.append(f"{k:<28} same {v['same']}, differ {v['differ']}, n/a {v['n/a']}")
    table.append("")
    table.append("details (every case that is not a pass everywhere and bit-identical):")
    for row in summary_cases:
        bad = [m for m in modes if row[m]["status"] not in ("pass", "n/a")]
        difs = {k: v for k, v in row["bitwise"].items() if v not in ("same", "n/a")}
        if not bad and not difs and not row["retarget"]["stderr"]:
            continue
        table.append(f"* {row['id']}{' (.approx)' if row['approx'] else ''}: retarget rc {row['retarget']['rc']} "
                     f"{row['retarget']['orig']} -> {row['retarget']['new']}")
        if row["retarget"]["stderr"]:
            table.append("    ptx-jit compile: " + row["retarget"]["stderr"][:800].replace("\n", "\n      "))
        for m in bad:
            table.append(f"    {m}: {row[m]['status']} {json.dumps(row[m].get('detail'))[:800]}")
        for k, v in difs.items():
            table.append(f"    {k}: {json.dumps(v)[:800]}")
    table.append("")
    table.append(f"passthrough notes ({len(notes)}; distinct shown):")
    for n in sorted(set(re.sub(r"0x[0-9a-f]+", "0x…", x) for x in notes))[:40]:
        table.append("    " + n)
    text = "\n".join(table)
    print(text, flush=True)
    open(os.path.join(a.out, "table.txt"), "w").write(text + "\n")
    summary = {"arch": arch, "real_libcuda": real, "modes": modes, "infos": infos, "counts": counts,
               "agreement": agree, "passthrough_notes": notes[:500], "cases": summary_cases}
    json.dump(summary, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
    # Keep the retargeted PTX of failing cases, for a look at what the driver got.
    return 0


if __name__ == "__main__":
    sys.exit(main())
