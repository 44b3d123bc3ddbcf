#!/usr/bin/env bash
# The GPU's answers for issue 19's fault and sanitizer tests, on a machine with an NVIDIA GPU, its driver,
# CUDA's toolkit (nvcc, compute-sanitizer) and python3 with cuda-bindings; nothing built here. From the
# repository root:
#
#   tests/gpu/faults_on_device.sh [OUT_DIR]
#
# 1. tests/faults/faults.c on the real driver, each case in its own process (without the runaway
#    kernels, which a GPU never ends): the error each faulting launch gives and whether it is sticky.
# 2. tests/nvcc/faults.cu built by nvcc and run on the real driver, each case in its own process.
# 3. NVIDIA's compute-sanitizer over every tests/sanitize/*.ptx kernel (each tool its directive names,
#    `all` meaning the four) and over tests/faults/sanitize.c: which findings NVIDIA's tools report
#    where ours do (sanitize_oracle.py writes sanitize.json); SKIP_SANITIZERS=1 leaves this out.
# 4. tests/sanitize's kernels without a tool: how the GPU itself ends each launch.
set -u
OUT=${1:-${OUT:-/tmp/gpu-out}}
W=/tmp/ptxjit-gpu/faults
mkdir -p "$W" "$OUT"
REAL=$(ldconfig -p | awk '$1 == "libcuda.so.1" {print $NF; exit}')
echo "real libcuda: $REAL"
CUDA=/usr/local/cuda
export PATH="$CUDA/bin:$PATH"
which nvcc compute-sanitizer
cc -O2 -I"$CUDA/include" tests/faults/faults.c -o "$W/faults" "$REAL" -lm || echo "faults.c: build failed"
cc -O2 -I"$CUDA/include" tests/faults/sanitize.c -o "$W/sanitize" "$REAL" || echo "sanitize.c: build failed"

echo "== faults.c on the real driver, each case in its own process (not the runaway kernels: no timeout)"
for c in null wild past freed after_barrier after_shuffle on_fiber trap barrier_counts async_store clusters divide recurse two_contexts bad_calls map_count fresh; do
  timeout 60 stdbuf -oL "$W/faults" tests/faults/faults.ptx $c 2>&1 | grep -v "ALL VERIFIED"
  echo "   exit ${PIPESTATUS[0]}"
done 2>&1 | tee "$OUT/faults.real.txt"

echo "== nvcc faults.cu on the real driver"
ARCH=sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
nvcc -O2 -arch="$ARCH" tests/nvcc/faults.cu -o "$W/nvcc_faults" 2>&1 | tail -3
for c in null past trap correct; do
  timeout 60 "$W/nvcc_faults" $c 2>&1
  echo "   exit $?"
done 2>&1 | tee "$OUT/nvcc_faults.real.txt"

if [ -z "${SKIP_SANITIZERS:-}" ]; then
  echo "== compute-sanitizer over tests/sanitize"
  timeout 300 python3 -u tests/gpu/sanitize_oracle.py --work "$W/san" --out "$OUT/sanitize.json"
  echo "== compute-sanitizer over sanitize.c"
  for t in memcheck initcheck racecheck synccheck; do
    extra=""; [ $t = memcheck ] && extra="--leak-check full"
    echo "-- $t"
    timeout 60 compute-sanitizer --tool $t $extra "$W/sanitize" tests/faults/sanitize.ptx 2>&1 |
      tee "$OUT/sanitize_c.$t.txt" | grep -v "^=========     " | head -40
  done
fi

echo "== tests/sanitize without a sanitizer (how the GPU ends each launch)"
timeout 120 python3 -u tests/gpu/sanitize_oracle.py --plain --work "$W/plain" --out "$OUT/sanitize_plain.json"
