#!/usr/bin/env bash
# The GPU validation of ptx-jit, on a machine with an NVIDIA GPU, its driver, python3 with cuda-bindings
# and numpy (numba-cuda and nvcc optional). Run from the repository root:
#
#   tests/gpu/run_on_device.sh [GPU_DIR] [OUT_DIR]
#
# GPU_DIR (default .gpu, an ignored folder) holds ptx-jit.xz and libcuda.so.1.xz (x86-64 builds of
# target/release/ptx-jit and target/release/libcuda.so.1; or uncompressed ptx-jit / libcuda.so.1), a
# copy of ../shared/corpus/zluda-run (cases.json + *.ptx) and optionally fallback/ with shared libraries
# the binaries need that the machine lacks (libffi.so.8, libzstd.so.1, libz.so.1).
# OUT_DIR (default $OUT, else /tmp/gpu-out) receives log, table.txt, summary.json, clients.log, work.tar.xz.
#
# Steps: environment checks; tests/gpu/compare.py over zluda-run and tests/ptx in four modes (real
# driver with the original PTX, real driver with `ptx-jit compile --arch sm_XX` output, our shim with
# PTXJIT_BACKEND=passthrough, our shim's CPU backend); then the repository's clients (C driver-API
# client, cuda-bindings+NVRTC, numba-cuda, nvcc-built programs) on the real driver and on our shim in
# passthrough mode.
set -u
G=${1:-.gpu}
OUT=${2:-${OUT:-/tmp/gpu-out}}
mkdir -p "$OUT"
T0=$(date +%s)
left() { echo $(( ${DEADLINE:-560} - ($(date +%s) - T0) )); }
B=/tmp/ptxjit-gpu/bin
L=/tmp/ptxjit-gpu/lib
W=/tmp/ptxjit-gpu/work
FB=/tmp/ptxjit-gpu/fallback
rm -rf /tmp/ptxjit-gpu && mkdir -p "$B" "$L" "$W" "$FB"
EXTRA=""

echo "== unpack"
if [ -f "$G/ptx-jit.xz" ]; then xz -dc "$G/ptx-jit.xz" > "$B/ptx-jit"; else cp "$G/ptx-jit" "$B/ptx-jit"; fi
if [ -f "$G/libcuda.so.1.xz" ]; then xz -dc "$G/libcuda.so.1.xz" > "$L/libcuda.so.1"; else cp "$G/libcuda.so.1" "$L/libcuda.so.1"; fi
chmod +x "$B/ptx-jit" "$L/libcuda.so.1"
ln -sf libcuda.so.1 "$L/libcuda.so"
sha256sum "$B/ptx-jit" "$L/libcuda.so.1"

echo "== machine"
nvidia-smi || true
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv || true
uname -a; (. /etc/os-release; echo "$PRETTY_NAME"); ldd --version | head -1
which python3 nvcc gcc cc 2>&1
python3 - <<'EOF'
import importlib
for m in ("numpy", "cuda.bindings", "cuda", "numba", "numba.cuda"):
    try:
        x = importlib.import_module(m)
        print(m, getattr(x, "__version__", "?"), getattr(x, "__file__", ""))
    except Exception as e:
        print(m, "MISSING:", e)
try:
    from cuda.bindings import driver
    print("from cuda.bindings import driver: ok")
except Exception as e:
    print("from cuda.bindings import driver:", e)
    try:
        from cuda import cuda
        print("from cuda import cuda: ok")
    except Exception as e:
        print("from cuda import cuda:", e)
EOF
echo "-- ldconfig -p | grep libcuda"; ldconfig -p | grep -i libcuda
echo "-- ldd ptx-jit / our libcuda.so.1"
ldd "$B/ptx-jit"; ldd "$L/libcuda.so.1"
if ldd "$B/ptx-jit" "$L/libcuda.so.1" | grep -q "not found"; then
  echo "missing libraries: using $G/fallback"
  cp "$G"/fallback/* "$FB"/ 2>/dev/null
  EXTRA=$FB
  export LD_LIBRARY_PATH="$FB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  ldd "$B/ptx-jit" "$L/libcuda.so.1" | grep "not found" && echo "STILL MISSING LIBRARIES"
fi
"$B/ptx-jit" --version

REAL=$(python3 -B -c "import sys; sys.path.insert(0, 'tests/gpu'); import compare; print(compare.find_real_libcuda('$L') or '')")
echo "real libcuda: $REAL -> $(readlink -f "$REAL" 2>/dev/null)"
ARCH=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
[ "$ARCH" = sm_ ] && ARCH=sm_90
echo "arch: $ARCH"

echo; echo "== compare.py (zluda-run + tests/ptx, four modes)"
timeout $(( $(left) - 200 )) python3 -u tests/gpu/compare.py --ptx-jit "$B/ptx-jit" --shim-dir "$L" \
  --corpus "$G/zluda-run" --ptx-tests ${PTX_TESTS:-tests/ptx,tests/gpu/probes,tests/ptx-host} --arch "$ARCH" ${REAL:+--real-libcuda "$REAL"} \
  --work "$W/compare" --out "$OUT" --case-timeout 30 ${EXTRA:+--extra-lib-path "$EXTRA"}
echo "compare.py exit: $?"

echo; echo "== clients (each on the real driver, then on our shim with PTXJIT_BACKEND=passthrough)" | tee "$OUT/clients.log"
CUDA_INC=""
for d in /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include $(python3 -c "import nvidia, os; [print(os.path.join(p, 'cu13/include')) for p in nvidia.__path__]" 2>/dev/null); do
  [ -f "$d/cuda.h" ] && CUDA_INC=$d && break
done
[ -d /usr/local/cuda ] && export CUDA_HOME=/usr/local/cuda
pt() { env LD_LIBRARY_PATH="$L${EXTRA:+:$EXTRA}" PTXJIT_BACKEND=passthrough ${REAL:+PTXJIT_REAL_LIBCUDA="$REAL"} PTXJIT_TRACE="$W/trace.$1" "${@:2}"; }
show() { # what a client printed: its verdict lines, then the end of the output
  grep -a -E "verified|MISMATCH|FAIL|ALL VERIFIED|->|Error|error" "$1" | grep -av "cuGetProcAddress(.*): not found" | head -40
  echo "   [...] last lines:"; grep -av "cuGetProcAddress(.*): not found" "$1" | tail -6
}
client() { # name timeout command...
  local name=$1 to=$2; shift 2
  local rl=$(left); [ "$rl" -lt 20 ] && { echo "$name: SKIPPED (time)" | tee -a "$OUT/clients.log"; return; }
  [ "$to" -gt "$rl" ] && to=$rl
  echo "-- $name (real driver)" | tee -a "$OUT/clients.log"
  env ${REAL:+LD_LIBRARY_PATH="$(dirname "$REAL")"} timeout "$to" "$@" > "$W/$name.real.out" 2>&1
  local rc=$?
  show "$W/$name.real.out" | tee -a "$OUT/clients.log"
  echo "   exit $rc" | tee -a "$OUT/clients.log"
  echo "-- $name (ptx-jit passthrough)" | tee -a "$OUT/clients.log"
  pt "$name" timeout "$to" "$@" > "$W/$name.passthrough.out" 2>&1
  rc=$?
  show "$W/$name.passthrough.out" | tee -a "$OUT/clients.log"
  echo "   exit $rc" | tee -a "$OUT/clients.log"
  if [ -f "$W/trace.$name" ]; then
    echo "   trace: $(wc -l < "$W/trace.$name") lines; failing calls (cuGetProcAddress misses left out):" | tee -a "$OUT/clients.log"
    grep -av "= CUDA_SUCCESS$" "$W/trace.$name" | grep -av "^#" | grep -av "^cuGetProcAddress" | sed 's/0x[0-9a-f]\{6,\}/0x…/g' | sort | uniq -c | sort -rn | head -15 | tee -a "$OUT/clients.log"
    grep -a "passthrough:" "$W/trace.$name" | sort | uniq -c | head -10 | tee -a "$OUT/clients.log"
  fi
}
if [ -n "$CUDA_INC" ] && command -v cc >/dev/null; then
  cc -O2 -I"$CUDA_INC" tests/demo/client.c -o "$W/client" -L"$L" -Wl,-rpath-link="$FB" -lcuda -lm && \
    client c_client 60 "$W/client" tests/demo/kernels.ptx
  "$B/ptx-jit" compile tests/demo/kernels.ptx --arch "$ARCH" -o "$W/kernels.$ARCH.ptx" && \
    client c_client_retargeted 60 "$W/client" "$W/kernels.$ARCH.ptx"
else
  echo "no cuda.h or cc: C client skipped" | tee -a "$OUT/clients.log"
fi
client bindings_client 90 python3 tests/python/bindings_client.py
# numba-cuda releases before numpy 2.4 use np.row_stack, which numpy 2.4 removed: alias it if missing.
NUMBA_CMD=(python3 -c "import numpy as np, runpy, sys; np.row_stack = getattr(np, 'row_stack', np.vstack); sys.argv = ['tests/python/numba_client.py']; runpy.run_path(sys.argv[0], run_name='__main__')")
# ... and once more with the driver's linker (cuLink*) instead of nvJitLink, so PTX reaches the driver.
client numba_client_culink 150 env NUMBA_CUDA_ENABLE_PYNVJITLINK=0 "${NUMBA_CMD[@]}"
client numba_client 150 "${NUMBA_CMD[@]}"
if command -v nvcc >/dev/null && [ "$(left)" -gt 60 ]; then
  nvcc -O2 -arch=sm_75 tests/nvcc/program.cu -o "$W/nvcc_program" 2>&1 | tail -5 && client nvcc_program 60 "$W/nvcc_program"
fi

echo; echo "== pack"
( cd "$W" && tar cJf "$OUT/work.tar.xz" . ) 2>&1 | tail -3
ls -la "$OUT"
echo "total $(( $(date +%s) - T0 )) s"
