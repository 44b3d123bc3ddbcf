#!/usr/bin/env python3
"""Compares the device ptx-jit presents for PTXJIT_DEVICE=h100 with what an H100 answered
(device_attributes.h100.txt, recorded on the GPU): the attributes a client sizes its work by must be
the card's. Those the CPU engine answers for itself (total memory, bounded by the host's; features it
lacks, such as textures and ECC; its copy engines) are listed apart and may differ.

Usage: check_profile.py OURS.txt [GPU.txt]"""
import os
import sys

# cuda.h attribute numbers that must match the card.
SAME = {
    1: "MAX_THREADS_PER_BLOCK", 2: "MAX_BLOCK_DIM_X", 3: "MAX_BLOCK_DIM_Y", 4: "MAX_BLOCK_DIM_Z",
    5: "MAX_GRID_DIM_X", 6: "MAX_GRID_DIM_Y", 7: "MAX_GRID_DIM_Z", 8: "MAX_SHARED_MEMORY_PER_BLOCK",
    9: "TOTAL_CONSTANT_MEMORY", 10: "WARP_SIZE", 12: "MAX_REGISTERS_PER_BLOCK", 13: "CLOCK_RATE",
    16: "MULTIPROCESSOR_COUNT", 36: "MEMORY_CLOCK_RATE", 37: "GLOBAL_MEMORY_BUS_WIDTH", 38: "L2_CACHE_SIZE",
    39: "MAX_THREADS_PER_MULTIPROCESSOR", 75: "COMPUTE_CAPABILITY_MAJOR", 76: "COMPUTE_CAPABILITY_MINOR",
    81: "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 82: "MAX_REGISTERS_PER_MULTIPROCESSOR",
    97: "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 106: "MAX_BLOCKS_PER_MULTIPROCESSOR",
}


def read(path):
    out = {}
    for line in open(path):
        parts = line.split()
        if parts and parts[0] == "attr":
            out[int(parts[1])] = " ".join(parts[2:])
        elif parts:
            out[parts[0]] = " ".join(parts[1:])
    return out


ours = read(sys.argv[1])
gpu = read(sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(__file__), "device_attributes.h100.txt"))
bad = 0
for a, name in sorted(SAME.items()):
    verdict = "ok" if ours.get(a) == gpu.get(a) else "DIFFERS"
    bad += verdict != "ok"
    print(f"{a:>4} {name:<40} H100 {gpu.get(a):>12}  ptx-jit {ours.get(a):>12}  {verdict}")
if not ours.get("name", "").endswith(gpu["name"]):
    print(f"name: {ours.get('name')!r} does not present {gpu['name']!r}")
    bad += 1
others = sorted(a for a in gpu if isinstance(a, int) and a not in SAME and gpu[a] != ours.get(a))
print(f"answered by the engine itself ({len(others)}): " + ", ".join(str(a) for a in others))
print("PROFILE MATCHES" if bad == 0 else f"{bad} DIFFER")
sys.exit(1 if bad else 0)
