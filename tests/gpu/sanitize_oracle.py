"""NVIDIA's compute-sanitizer as the oracle for tests/sanitize: every file's `// run:` kernel runs on the
real driver (compare.py's worker, mode real-orig) under each tool its `// sanitize:` directive names
(`all`: the four; `--plain`: none, for how the GPU itself ends each launch), and the findings NVIDIA's tool reports are set beside the `// report:` lines we expect.
Writes a JSON list of {file, tool, expected, errors, hazards, lines} and prints a table."""
import argparse, concurrent.futures, json, os, re, subprocess, sys

sys.path.insert(0, os.path.dirname(__file__))
import compare  # noqa: E402

TOOLS = ["memcheck", "racecheck", "initcheck", "synccheck"]


def directives(path):
    tools, reports = [], []
    for line in open(path):
        c = line.strip()
        if c.startswith("// sanitize:"):
            for t in c.split(":", 1)[1].replace("=", ",").split(","):
                t = t.strip()
                tools += TOOLS if t == "all" else [t]
        elif c.startswith("// report:"):
            reports.append(c.split(":", 1)[1].strip())
    return sorted(set(tools), key=TOOLS.index), reports


def run_one(job, tool, work):
    tag = f"{job['id'].replace('/', '_')}.{tool}"
    jobs_file = os.path.join(work, tag + ".jobs.json")
    json.dump([dict(job, ptx_by_mode={"real-orig": job["ptx"]})], open(jobs_file, "w"))
    results = os.path.join(work, tag + ".results.jsonl")
    tool_cmd = ["compute-sanitizer", "--tool", tool, "--print-limit", "20"] if tool != "none" else []
    cmd = tool_cmd + [sys.executable, compare.__file__, "--worker", "real-orig", "--jobs", jobs_file, "--results", results]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        text = p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        text = f"TIMEOUT {e}"
    res = [json.loads(l) for l in open(results)] if os.path.exists(results) else []
    run = next((r for r in res if "id" in r), {})
    errors = re.search(r"ERROR SUMMARY: (\d+) error", text)
    hazards = re.search(r"RACECHECK SUMMARY: (\d+) hazard", text)
    lines = [l for l in text.splitlines() if l.startswith("========= ") and not l.startswith("=========     ")]
    return {"tool": tool, "errors": int(errors.group(1)) if errors else None,
            "hazards": int(hazards.group(1)) if hazards else None, "launch": run.get("launch"),
            "sync": run.get("sync"), "lines": lines[:30]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", default="tests/sanitize")
    ap.add_argument("--work", default="/tmp/ptxjit-sanitize-oracle")
    ap.add_argument("--out", default="sanitize.json")
    ap.add_argument("--plain", action="store_true", help="run each kernel without a tool (how the GPU ends it)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    todo = []
    for job in compare.directive_jobs(a.folder):
        tools, reports = directives(job["ptx"])
        for t in ["none"] if a.plain else tools or ["memcheck"]:
            todo.append((job, t, reports))
    out = []
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        futs = [(job, reports, ex.submit(run_one, job, t, a.work)) for job, t, reports in todo]
        for job, reports, f in futs:
            r = f.result()
            r.update(file=os.path.basename(job["ptx"]), expected=reports)
            out.append(r)
            print(f"{r['file']:32} {r['tool']:10} errors={r['errors']} hazards={r['hazards']} "
                  f"launch={r['launch']} sync={r['sync']} expected={reports}", flush=True)
            for l in r["lines"][:8]:
                print("    " + l[:200])
    json.dump(out, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
