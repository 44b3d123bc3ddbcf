#!/usr/bin/env bash
# The GPU's answers to what README.md's "Waiting for a GPU" lists, on a machine with an NVIDIA GPU, its
# driver, CUDA's toolkit and python3 with cuda-bindings, numpy and numba-cuda; nothing built here. From
# the repository root:
#
#   tests/gpu/pending_on_device.sh [OUT_DIR]
#
# 1. The driver-API programs whose expected codes were chosen without a GPU (tests/demo/graphs.c,
#    textures.c, memops.c, device_heap.c, nvjitlink.c with NVIDIA's libnvJitLink), built with
#    -DKEEP_GOING so that every differing answer is printed, not only the first; tests/nvcc/textures.cu.
# 2. The probes: lazy_ptx.c under CUDA_MODULE_LOADING=LAZY and EAGER, texture_probe.c (whole output to
#    OUT_DIR/texture_probe.txt, for `cmp` with texture_probe.expected).
#    heap_probe.c: how much the device heap holds; ptx_load_probe.py: which of textures.c's kernels the
#    driver refuses, and its JIT log.
# 3. NVIDIA's cuRAND on the GPU against its host generator (tests/python/curand_client.py); its device
#    results go to OUT_DIR/curand.npz.
# 4. The numba-cuda test modules that fail on ptx-jit (NUMBA_MODULES), on the real driver: which of
#    their tests fail on a GPU too (OUT_DIR/numba.txt).
set -u
OUT=${1:-${OUT:-/tmp/gpu-out}}
W=/tmp/ptxjit-gpu/pending
mkdir -p "$W" "$OUT"
REAL=${REAL_LIBCUDA:-$(ldconfig -p | awk '$1 == "libcuda.so.1" {print $NF; exit}')}
CUDA=${CUDA:-/usr/local/cuda}
export PATH="$CUDA/bin:$PATH"
echo "real libcuda: $REAL"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
ARCH=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
PY=${PY:-python3}
SITE=$($PY -c "import site; print(site.getsitepackages()[0])")
$PY -m pip list 2>/dev/null | grep -i -E "^(numba|numba-cuda|cuda-bindings|nvidia-curand|nvidia-nvjitlink) "
# ONLY (a list of names) runs only those programs; NUMBA_MODULES=none leaves numba-cuda out.
run() { # NAME COMMAND...: runs with a time limit (LIMIT seconds, default 30), prints the exit status
  local name=$1; shift
  case " ${ONLY:-$name} " in *" ${name%% *} "*) ;; *) return;; esac
  echo "== $name"
  timeout "${LIMIT:-30}" "$@" 2>&1
  echo "   exit $?"
}

{
# memops.c needs a cuda.h of CUDA 13.1 or later (atomic reductions); HEADERS may name a folder with one.
for p in graphs textures memops device_heap tma; do
  cc -O2 -DKEEP_GOING ${HEADERS:+-I"$HEADERS"} -I"$CUDA/include" tests/demo/$p.c -o "$W/$p" "$REAL" || echo "$p.c: build failed"
done
NVJ=$(find "$SITE/nvidia" "$CUDA/lib64" -name 'libnvJitLink.so.13*' 2>/dev/null | head -1)
echo "NVIDIA's nvJitLink: $NVJ"
# nvJitLink.h names versioned symbols (__nvJitLinkCreate_13_5): rename them to the library's version.
V=$(nm -D "$NVJ" | grep -o '__nvJitLinkCreate_[0-9_]*' | sort -V | tail -1 | sed 's/__nvJitLinkCreate//')
mkdir -p "$W/inc" && sed -E "s/(__nvJitLink[A-Za-z]+)_[0-9]+_[0-9]+/\1$V/g" "$CUDA/include/nvJitLink.h" > "$W/inc/nvJitLink.h"
echo "nvJitLink's symbols: $V"
cc -O2 -DKEEP_GOING -I"$W/inc" -I"$CUDA/include" tests/demo/nvjitlink.c -o "$W/nvjitlink" "$NVJ" -Wl,-rpath,"$(dirname "$NVJ")" "$REAL" || echo "nvjitlink.c: build failed"
cc -O2 -I"$CUDA/include" tests/gpu/probes_c/lazy_ptx.c -o "$W/lazy_ptx" "$REAL" || echo "lazy_ptx.c: build failed"
cc -O2 -I"$CUDA/include" tests/gpu/probes_c/texture_probe.c -o "$W/texture_probe" "$REAL" || echo "texture_probe.c: build failed"
cc -O2 -I"$CUDA/include" tests/gpu/probes_c/heap_probe.c -o "$W/heap_probe" "$REAL" || echo "heap_probe.c: build failed"
nvcc -O2 -arch="$ARCH" tests/nvcc/textures.cu -o "$W/nvcc_textures" 2>&1 | tail -3
} 2>&1 | tee "$OUT/build.txt"

{
  run graphs "$W/graphs" "$W/graph.dot"
  run textures "$W/textures"
  run tma "$W/tma"
  run nvcc_textures "$W/nvcc_textures"
  run memops "$W/memops"
  run device_heap "$W/device_heap"
  run nvjitlink "$W/nvjitlink"
  CUDA_MODULE_LOADING=LAZY run "lazy_ptx LAZY" "$W/lazy_ptx"
  CUDA_MODULE_LOADING=EAGER run "lazy_ptx EAGER" "$W/lazy_ptx"
  echo "== texture_probe"
  timeout 30 "$W/texture_probe" > "$OUT/texture_probe.txt"
  echo "   exit $? ($(wc -l < "$OUT/texture_probe.txt") lines)"
  CURAND=$(find "$SITE/nvidia" -name 'libcurand.so.10*' 2>/dev/null | head -1)
  echo "cuRAND: $CURAND"
  if [ -n "$CURAND" ]; then (cd tests/python && LIMIT=120 run curand $PY -u curand_client.py "$CURAND" "$OUT/curand.npz"); fi
  run heap_probe "$W/heap_probe"
  run "ptx_load_probe" $PY tests/gpu/ptx_load_probe.py tests/demo/textures.c tests/gpu/load_probes/texture_queries.ptx
} 2>&1 | tee "$OUT/pending.txt"

NUMBA_MODULES=${NUMBA_MODULES:-"cudadrv.test_cuda_driver cudadrv.test_cuda_ndarray cudadrv.test_linker cudapy.test_caching
  cudapy.test_cooperative_groups cudapy.test_cuda_array_interface cudapy.test_datetime cudapy.test_debuginfo
  cudapy.test_dispatcher cudapy.test_ipc cudapy.test_multiprocessing doc_examples.test_cg
  doc_examples.test_laplace doc_examples.test_sessionize nrt.test_nrt"}
echo "== numba-cuda modules on the real driver" | tee "$OUT/numba.txt"
[ "$NUMBA_MODULES" = none ] && NUMBA_MODULES=""
for m in $NUMBA_MODULES; do
  echo "-- $m" >> "$OUT/numba.txt"
  (cd "$W" && timeout 60 $PY -m numba.runtests -v "numba.cuda.tests.$m" >> "$OUT/numba.txt" 2>&1)
  echo "$m: exit $? $(tail -1 "$OUT/numba.txt")"
done
