"""Which kernels of a PTX module the GPU's driver refuses, and why: the module is split into its
header and each `.entry` (with every `.func`, `.global`, `.const` and `.shared` item kept beside it),
each part loaded alone with cuModuleLoadDataEx and the JIT's error log printed. The module is a .ptx
file or a C file holding it as `static const char *PTX = "...";` (tests/demo/*.c).
Usage: ptx_load_probe.py FILE..."""

import re
import sys

from cuda.bindings import driver as cu


def ptx_text(path):
    s = open(path).read()
    if not path.endswith(".c"):
        return s
    body = re.search(r"static const char \*PTX =(.*?);\n", s, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return bytes("".join(parts), "utf-8").decode("unicode_escape")


def split(ptx):
    """(header and shared items, [(entry name, entry text)]): items split at each top-level `}`."""
    head = "".join(m.group(0) for m in re.finditer(r"^\s*\.(version|target|address_size)\b.*\n", ptx, re.M))
    ptx = re.sub(r"^\s*\.(version|target|address_size)\b.*\n", "", ptx, flags=re.M)
    items, depth, start = [], 0, 0
    for i, c in enumerate(ptx):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                items.append(ptx[start : i + 1])
                start = i + 1
    rest = ptx[start:]
    entries = [(re.search(r"\.entry\s+(\w+)", t).group(1), t) for t in items if ".entry" in t]
    common = head + "".join(t for t in items if ".entry" not in t) + rest
    return common, entries


def load(text):
    log = bytearray(8192)
    opts = [cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER, cu.CUjit_option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    err, mod = cu.cuModuleLoadDataEx(text.encode() + b"\0", 2, opts, [log, len(log)])
    lookups = ""
    if err == cu.CUresult.CUDA_SUCCESS:
        # Under lazy loading (the default) a kernel's code is made at its lookup, where it can fail.
        lookups = " ".join(f"{n}:{int(cu.cuModuleGetFunction(mod, n.encode())[0])}" for n in re.findall(r"\.entry\s+(\w+)", text))
        cu.cuModuleUnload(mod)
    return int(err), (lookups + " " + log.split(b"\0")[0].decode(errors="replace")).strip()


def main():
    cu.cuInit(0)
    _, dev = cu.cuDeviceGet(0)
    _, ctx = cu.cuDevicePrimaryCtxRetain(dev)
    cu.cuCtxSetCurrent(ctx)
    for path in sys.argv[1:]:
        ptx = ptx_text(path)
        err, log = load(ptx)
        print(f"{path}: whole module {err} {log}")
        common, entries = split(ptx)
        for name, text in entries:
            err, log = load(common + text)
            print(f"  {name}: {err} {log}")


main()
