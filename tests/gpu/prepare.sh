#!/usr/bin/env bash
# Fills the ignored folder .gpu/ with what tests/gpu/run_on_device.sh needs on a GPU machine that has no
# Rust or LLVM: xz-compressed x86-64 builds of ptx-jit and libcuda.so.1, a copy of the ZLUDA execution
# corpus, and the shared libraries the binaries link that a bare machine may lack. Run from the
# repository root after `make build` (or give a folder holding ptx-jit and libcuda.so.1, or their .xz):
#
#   tests/gpu/prepare.sh [BIN_DIR (default target/release)] [CORPUS (default ../shared/corpus/zluda-run)]
set -eu
BIN=${1:-target/release}
CORPUS=${2:-../shared/corpus/zluda-run}
mkdir -p .git/info
grep -qx "/.gpu/" .git/info/exclude 2>/dev/null || echo "/.gpu/" >> .git/info/exclude
mkdir -p .gpu/fallback
for f in ptx-jit libcuda.so.1; do
  if [ -f "$BIN/$f.xz" ]; then cp "$BIN/$f.xz" .gpu/
  else xz -T0 -6 -c "$(readlink -f "$BIN/$f")" > ".gpu/$f.xz"; fi
done
if [ "$(readlink -f "$CORPUS")" != "$(readlink -f .gpu/zluda-run)" ]; then
  [ -d .gpu/zluda-run ] && chmod -R u+w .gpu/zluda-run
  rm -rf .gpu/zluda-run && cp -r "$CORPUS" .gpu/zluda-run && chmod -R u+w .gpu/zluda-run
fi
for l in libffi.so.8 libzstd.so.1 libz.so.1; do
  p=$(ldd "$(readlink -f "$BIN/ptx-jit" 2>/dev/null || echo /bin/true)" 2>/dev/null | awk -v l="$l" '$1 == l {print $3}')
  [ -n "$p" ] || p=/lib/x86_64-linux-gnu/$l
  [ -f "$p" ] && cp -L "$p" .gpu/fallback/
done
du -sh .gpu
git status --short --ignored .gpu | head -3
