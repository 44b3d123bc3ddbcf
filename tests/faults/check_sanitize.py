"""Checks the JSON log of `ptx-jit sanitize -- build/sanitize_client`: exactly the findings the
program's bugs should give (kind, kernel, PTX lines), and nothing else."""
import json
import sys

got = sorted(
    (d["severity"], d["code"], d["kernel"], tuple(sorted(a["line"] for a in d["accesses"] if a["line"])))
    for d in map(json.loads, open(sys.argv[1]))
)
want = sorted([
    ("error", "S0201", "copy", (30,)),       # initcheck: the fresh allocation's read
    ("error", "S0101", "sum", (13, 15)),     # racecheck: a store and another thread's load
    ("error", "S0101", "sum", (15, 15)),     # racecheck: two threads' stores
    ("error", "S0403", "(host)", ()),        # memcheck: the double free
    ("error", "S0401", "copy", (30,)),       # memcheck: the read of freed memory
    ("warning", "S0404", "(host)", ()),      # memcheck: the allocation left at cuCtxDestroy
])
if got != want:
    print("sanitizer findings differ:\n  got  %s\n  want %s" % (got, want))
    sys.exit(1)
print("sanitizer: %d findings as expected" % len(got))
