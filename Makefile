# ptx-jit: `make demo` runs the main job, `make test` runs every test. Both install what is missing
# (LLVM 22, a Python venv with NVIDIA's CPU-side tools) on a fresh Debian 12 machine, as root.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export LLVM_SYS_221_PREFIX ?= /usr/lib/llvm-22
export PATH := $(HOME)/.cargo/bin:$(PATH)

REL    := target/release
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# NVIDIA wheels, pinned to their major version, and what numba-cuda's own test modules import.
# cuda-bindings stays at 13.3: numba-cuda 0.30's IPC handles use CUipcMemHandle.reserved, which 13.5
# no longer has (with 13.3, as on an H200 with it, numba's IPC tests pass).
WHEELS := "nvidia-cuda-nvcc==13.*" "nvidia-cuda-nvrtc==13.*" "nvidia-cuda-runtime==13.*" \
          "nvidia-cuda-crt==13.*" "nvidia-cuda-cccl==13.*" "cuda-bindings==13.3.*" "numba-cuda==0.*" \
          "filecheck==1.*" "pytest==9.*" "cffi==2.*"
CU13    = $(firstword $(wildcard $(VENV)/lib/python3*/site-packages/nvidia/cu13))

.PHONY: all build demo test test-suites test-suites-full lint-rust bench bench-suite bench-textures fuzz deps llvm venv libs cupy opencl browser clean

all: build

# ---- dependencies ----------------------------------------------------------------------------------

deps:
	@if ! command -v cc >/dev/null || ! command -v c++ >/dev/null || ! command -v pkg-config >/dev/null; then \
	  echo "== installing a C toolchain"; apt-get update -qq; \
	  apt-get install -y --no-install-recommends build-essential pkg-config ca-certificates curl; fi
	@if ! command -v cargo >/dev/null; then \
	  echo "== installing Rust"; curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal; fi

llvm: deps
	@if ! command -v llvm-config-22 >/dev/null; then \
	  echo "== installing LLVM 22"; apt-get update -qq; \
	  apt-get install -y --no-install-recommends llvm-22-dev libpolly-22-dev clang-22 libzstd-dev zlib1g-dev; fi

# A headless browser, for the test that renders `ptx-jit bench`'s HTML reports.
browser:
	@if ! command -v chromium >/dev/null; then \
	  echo "== installing Chromium"; apt-get update -qq; \
	  apt-get install -y --no-install-recommends chromium; fi

venv: $(STAMP)
$(STAMP):
	@if ! python3 -m venv --help >/dev/null 2>&1; then apt-get update -qq; apt-get install -y --no-install-recommends python3-venv; fi
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q $(WHEELS)
	touch $@

# NVIDIA's libraries whose own PTX the tests run, unmodified (issue 21), at versions known to ship PTX
# (the fat binaries of nvidia-curand 10.4.5.25 hold sm_120 machine code and no PTX), in a venv of their
# own: cuSPARSE brings nvJitLink, and numba-cuda, finding nvJitLink, links its kernels with LTO, which
# needs this project's nvJitLink loaded first (LD_PRELOAD). The same venv holds numba-cuda as its
# documentation installs it (numba-cuda[cu13], with NVIDIA's nvJitLink), for that test. A failed
# download skips their tests with a message; it does not fail the build.
LIB_WHEELS := "nvidia-curand==10.4.2.66" "nvidia-cublas==13.4.1.3" "nvidia-cusparse==12.7.10.12" \
              "nvidia-cufft==12.2.0.57"
LIBS_VENV  := .venv-nvidia
LIBS_STAMP := $(LIBS_VENV)/.installed
LIBS_PY     = $(LIBS_VENV)/bin/python
LIBS_LIB    = $(firstword $(wildcard $(LIBS_VENV)/lib/python3*/site-packages/nvidia/cu13/lib))
# numba-cuda as documented, and what its own test modules import.
NUMBA13      := "numba-cuda[cu13]==0.30.4" "cuda-bindings==13.3.*" "pytest==9.*" "filecheck==1.*" "cffi==2.*"
NUMBA13_STAMP = $(LIBS_VENV)/.numba-cu13
libs: $(LIBS_STAMP) $(NUMBA13_STAMP)
$(LIBS_STAMP): $(STAMP)
	(python3 -m venv $(LIBS_VENV) && $(LIBS_VENV)/bin/pip install -q numpy $(LIB_WHEELS) && touch $@) \
	  || echo "skipped: cannot install $(LIB_WHEELS)"
$(NUMBA13_STAMP): $(LIBS_STAMP)
	([ -x $(LIBS_PY) ] && $(LIBS_PY) -m pip install -q $(NUMBA13) && touch $@) \
	  || echo "skipped: cannot install $(NUMBA13)"
# CuPy (its wheel links the CUDA runtime statically and compiles kernels with NVRTC) and what its own
# test suite needs, beside NVIDIA's libraries it calls, for `make test-suites`.
CUPY       := "cupy-cuda13x==14.2.0" "nvidia-cuda-nvrtc==13.*" "nvidia-cuda-runtime==13.*" "pytest==9.*" \
              "pytest-timeout==2.*"
CUPY_STAMP  = $(LIBS_VENV)/.cupy
cupy: $(CUPY_STAMP)
$(CUPY_STAMP): $(LIBS_STAMP)
	([ -x $(LIBS_PY) ] && $(LIBS_PY) -m pip install -q $(CUPY) && touch $@) \
	  || echo "skipped: cannot install $(CUPY)"

# ---- build -----------------------------------------------------------------------------------------

build: llvm
	cargo build --release -p ptx-jit -p cuda-shim -p nvjitlink-shim
	@# Cargo names the cdylib libcuda.so; clients load libcuda.so.1 (its SONAME).
	cp -f --remove-destination $(REL)/deps/libcuda.so $(REL)/libcuda.so.1
	ln -sfn libcuda.so.1 $(REL)/libcuda.so
	@# nvJitLink in a directory of its own: a client that finds it turns LTO on (README, "nvJitLink").
	mkdir -p $(REL)/nvjitlink
	cp -f --remove-destination $(REL)/libnvJitLink.so $(REL)/nvjitlink/libnvJitLink.so.13
	ln -sfn libnvJitLink.so.13 $(REL)/nvjitlink/libnvJitLink.so
	@echo "built $(REL)/ptx-jit, $(REL)/libcuda.so.1 and $(REL)/nvjitlink/libnvJitLink.so.13"

build/client: tests/demo/client.c venv
	mkdir -p build
	cc -O2 -Wall -I$(CU13)/include $< -o $@ -L$(REL) -lcuda -lm

# The C programs of the driver API (clients, probes, fault tests), each built from its source alike.
DRIVER_PROGRAMS := build/faults build/launch_limits build/lazy_no_binary build/device_attributes \
	build/devices build/peer_probe build/pointer_attributes build/sanitize_client build/lazy build/graphs build/texture_probe build/textures \
	build/texrefs build/ipc build/memops build/device_heap build/lazy_ptx build/tma
build/faults: tests/faults/faults.c
build/launch_limits: tests/gpu/probes_c/launch_limits.c
build/lazy_no_binary: tests/gpu/probes_c/lazy_no_binary.c
build/device_attributes: tests/gpu/probes_c/device_attributes.c
build/devices: tests/demo/devices.c
build/lazy: tests/demo/lazy.c
build/lazy_ptx: tests/gpu/probes_c/lazy_ptx.c
build/graphs: tests/demo/graphs.c
build/texture_probe: tests/gpu/probes_c/texture_probe.c
build/textures: tests/demo/textures.c
build/tma: tests/demo/tma.c
build/texrefs: tests/demo/texrefs.c
build/ipc: tests/demo/ipc.c
build/memops: tests/demo/memops.c
build/device_heap: tests/demo/device_heap.c
build/peer_probe: tests/gpu/probes_c/peer_probe.c
build/pointer_attributes: tests/gpu/probes_c/pointer_attributes.c
build/sanitize_client: tests/faults/sanitize.c
$(DRIVER_PROGRAMS): venv
	mkdir -p build
	cc -O2 -Wall -I$(CU13)/include $(filter %.c,$^) -o $@ -L$(REL) -lcuda

# Linked with this project's libnvJitLink.so.13 as a program built against NVIDIA's would be.
build/nvjitlink: tests/demo/nvjitlink.c venv
	mkdir -p build
	cc -O2 -Wall -I$(CU13)/include $< -o $@ -L$(REL)/nvjitlink -L$(REL) -lnvJitLink -lcuda

build/no_ptx.fatbin: tests/gpu/probes_c/no_ptx.cu venv
	mkdir -p build
	$(CU13)/bin/nvcc -fatbin -gencode arch=compute_90,code=sm_90 $< -o $@

# An ordinary CUDA program built by the venv's nvcc: static CUDA runtime (nvcc's default) and, for the
# shared one, libcudart.so.13 from the nvidia-cuda-runtime wheel. -arch=sm_75 embeds sm_75 machine code
# and compute_75 PTX; the driver runs the PTX.
NVCC_PROGRAMS := build/nvcc_program build/nvcc_devices build/nvcc_faults build/nvcc_printf build/nvcc_graphs \
	build/nvcc_textures build/nvcc_cooperative
build/nvcc_program: tests/nvcc/program.cu
build/nvcc_devices: tests/nvcc/devices.cu
build/nvcc_faults: tests/nvcc/faults.cu
build/nvcc_printf: tests/nvcc/printf_assert.cu
build/nvcc_graphs: tests/nvcc/graphs.cu
build/nvcc_textures: tests/nvcc/textures.cu
build/nvcc_cooperative: tests/nvcc/cooperative.cu
$(NVCC_PROGRAMS): venv
	mkdir -p build
	$(CU13)/bin/nvcc -O2 -arch=sm_75 -I$(CU13)/include -L$(CU13)/lib $(filter %.cu,$^) -o $@

# Relocatable device code: two translation units whose device code calls across them, joined by nvcc's
# device link (the runtime then hands the driver each unit's fat binary to link).
build/nvcc_rdc: tests/nvcc/rdc_main.cu tests/nvcc/rdc_unit.cu venv
	mkdir -p build
	$(CU13)/bin/nvcc -O2 -arch=sm_75 -rdc=true -I$(CU13)/include -L$(CU13)/lib $(filter %.cu,$^) -o $@

# Hopper's warpgroup MMA as CUTLASS's CuTe drives it: the nvidia-cutlass wheel carries CuTe's headers
# (installed without its Python dependencies, which would move cuda-bindings). PTX only, compute_90a.
CUTLASS       := "nvidia-cutlass==4.*"
CUTLASS_STAMP  = $(VENV)/.cutlass
CUTLASS_SRC    = $(firstword $(wildcard $(VENV)/lib/python3*/site-packages/cutlass_library/source))
CUTLASS_INC    = $(CUTLASS_SRC)/include
$(CUTLASS_STAMP): $(STAMP)
	$(VENV)/bin/pip install -q --no-deps $(CUTLASS)
	touch $@
build/nvcc_wgmma: tests/nvcc/wgmma.cu $(CUTLASS_STAMP)
	mkdir -p build
	$(CU13)/bin/nvcc -std=c++17 -O2 --expt-relaxed-constexpr -gencode arch=compute_90a,code=compute_90a \
	  -I$(CUTLASS_INC) -I$(CU13)/include -L$(CU13)/lib $< -o $@

# warp-lang, NVIDIA's Python framework for simulation and graphics, for its own test suite in `make
# test-suites`: its native library loads libcuda.so.1 and links the CUDA runtime statically; NVRTC
# (inside it) compiles its kernels to PTX. Its one dependency, numpy, is in the venv already.
WARP       := "warp-lang==1.19.0"
WARP_STAMP  = $(VENV)/.warp
$(WARP_STAMP): $(STAMP)
	$(VENV)/bin/pip install -q --no-deps $(WARP)
	touch $@

# CUTLASS's own Hopper GEMM example (49: warp-specialised, ping-pong, cooperative and stream-K
# schedules; TMA, wgmma, clusters of two CTAs), unmodified. Its reference GEMM fills its inputs
# with cuRAND's device API, whose headers come with the libraries' venv.
LIBS_INC    = $(firstword $(wildcard $(LIBS_VENV)/lib/python3*/site-packages/nvidia/cu13/include))
CUTLASS_49  = examples/49_hopper_gemm_with_collective_builder/49_collective_builder.cu
build/cutlass_49: $(CUTLASS_STAMP) $(LIBS_STAMP)
	mkdir -p build
	if [ -f "$(LIBS_INC)/curand_kernel.h" ]; then \
	  $(CU13)/bin/nvcc -std=c++17 -O2 --expt-relaxed-constexpr -gencode arch=compute_90a,code=compute_90a \
	    -I$(CUTLASS_INC) -I$(CUTLASS_SRC)/tools/util/include -I$(CUTLASS_SRC)/examples/common -I$(CU13)/include \
	    -I$(LIBS_INC) -L$(CU13)/lib $(CUTLASS_SRC)/$(CUTLASS_49) -o $@; \
	else echo "skipped: no cuRAND headers (the libraries' venv did not install)"; fi

build/nvcc_program_shared: tests/nvcc/program.cu venv
	mkdir -p build/cudart
	ln -sfn $(abspath $(CU13))/lib/libcudart.so.13 build/cudart/libcudart.so
	$(CU13)/bin/nvcc -O2 -arch=sm_75 -cudart=shared -I$(CU13)/include -Lbuild/cudart $< -o $@

# ---- the main job ----------------------------------------------------------------------------------

demo: build venv build/client
	@echo; echo "== (a) an unmodified driver-API C program on libcuda.so.1 (vecadd and saxpy over 2^22 elements)"
	LD_LIBRARY_PATH=$(REL) ./build/client tests/demo/kernels.ptx
	@echo; echo "== (b) lint: a PTX file with deliberate mistakes"
	./$(REL)/ptx-jit lint tests/demo/broken.ptx || test $$? -eq 1
	@echo; echo "== (c) retarget: the same kernels as sm_90 PTX, checked by NVIDIA's ptxas"
	./$(REL)/ptx-jit compile tests/demo/kernels.ptx --arch sm_90 -o build/kernels.sm_90.ptx
	head -n 24 build/kernels.sm_90.ptx
	$(CU13)/bin/ptxas -arch=sm_90 build/kernels.sm_90.ptx -o build/kernels.sm_90.cubin
	@echo "ptxas accepted build/kernels.sm_90.ptx"

# ---- benchmarks -----------------------------------------------------------------------------------

# PoCL (an OpenCL CPU runtime) for the OpenCL variant, and the headers and ICD loader to build against.
opencl: deps
	@if [ ! -e /usr/include/CL/cl.h ] || [ ! -e /etc/OpenCL/vendors/pocl.icd ] || ! ldconfig -p | grep -q libOpenCL.so; then \
	  echo "== installing PoCL"; apt-get update -qq; \
	  apt-get install -y --no-install-recommends pocl-opencl-icd ocl-icd-opencl-dev opencl-headers; fi

# Three kernels, four variants each (ptx-jit, native C, PoCL, memcpy), side by side; see benches/kernels.
bench: build venv opencl
	mkdir -p build
	$(CU13)/bin/nvcc -ptx -arch=sm_80 -O3 benches/kernels/kernels.cu -o build/kernels.ptx
	gcc -O3 -march=native -fopenmp -Wall -I$(CU13)/include benches/kernels/bench.c -o build/bench \
	  -L$(REL) -lcuda -lOpenCL -lm
	LD_LIBRARY_PATH=$(REL) OMP_NUM_THREADS=2 ./build/bench build/kernels.ptx benches/kernels/kernels.cl \
	  $(CU13)/bin/ptxas build/bench.json

# HeCBench programs (benches/hecbench/suite.json): each CUDA version on ptx-jit beside its OpenMP
# version run natively, after the reference kernels of `make bench`. HECBENCH_ONLY=a,b picks some.
HECBENCH ?= ../shared/hecbench
bench-suite: bench
	python3 benches/hecbench/suite.py --hecbench $(HECBENCH) --lib $(abspath $(REL)) \
	  --cu13 $(abspath $(CU13)) --out build/bench-suite --only "$(HECBENCH_ONLY)"

# Texture fetches per second on the CPU (benches/texture_fetch.c).
bench-textures: build venv
	mkdir -p build
	cc -O2 -Wall -I$(CU13)/include benches/texture_fetch.c -o build/texture_fetch -L$(REL) -lcuda
	LD_LIBRARY_PATH=$(REL) ./build/texture_fetch

# ---- fuzzing ---------------------------------------------------------------------------------------

# Each target (parse, lower, fatbin, driver; FUZZ_TARGETS picks some) replays tests/fuzz/corpus, then
# mutates seeds for FUZZ_SECONDS; findings are saved under target/fuzz/findings and fail the run.
FUZZ_SECONDS ?= 60
FUZZ_TEST_SECONDS ?= 3
FUZZ_TARGETS ?=
fuzz: llvm
	FUZZ_SECONDS=$(FUZZ_SECONDS) cargo test --release -p ptx-jit-tests --test fuzz -- $(FUZZ_TARGETS)

# ---- tests -----------------------------------------------------------------------------------------

# Habits: the tree stays rustfmt-clean and clippy-clean (every target, warnings as errors).
lint-rust: llvm
	rustup component add rustfmt clippy 2>/dev/null || true
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --release -- -D warnings

# Real frameworks' own test suites on ptx-jit (issue 22), apart from `make test` to keep it fast:
# numba-cuda's whole suite (tests/suites/numba_suite.py: every failure must be a known one); warp-lang's
# CUDA tests (tests/suites/warp_suite.py, likewise); the
# groups of CuPy's suite that CI runs (a cold run spends most of its time in NVRTC, as it would on a
# GPU); `make test-suites-full` runs every group the README counts.
CUPY_SUITE = $(PY) tests/suites/cupy_suite.py $(abspath $(LIBS_PY)) $(abspath $(REL)):$(abspath $(LIBS_LIB)) build/cupy-suite
test-suites: build venv libs cupy build/cutlass_49 $(WARP_STAMP)
	mkdir -p build
	@echo; echo "== CUTLASS's Hopper GEMM example 49, unmodified: seven schedules against its reference GEMM (h100 profile)"
	if [ -x build/cutlass_49 ]; then PTXJIT_DEVICE=h100 LD_LIBRARY_PATH=$(REL) ./build/cutlass_49 --m=256 --n=256 --k=128 \
	  | tee build/cutlass_49.out; [ "$$(grep -c ': Passed$$' build/cutlass_49.out)" = 7 ]; \
	  else echo "skipped: build/cutlass_49 was not built"; fi
	@echo; echo "== numba-cuda's own test suite (numba-cuda without nvJitLink, each module in a process of its own)"
	$(PY) tests/suites/numba_suite.py $(PY) $(REL) build/numba-suite | tee build/numba_suite.out
	grep -q "NUMBA SUITE PASSED" build/numba_suite.out
	@echo; echo "== warp-lang's own test suite: every test of its CUDA device, by warp's own runner"
	$(PY) tests/suites/warp_suite.py $(PY) $(REL) build/warp-suite | tee build/warp_suite.out
	grep -q "WARP SUITE PASSED" build/warp_suite.out
	@echo; echo "== HeCBench's CUDA programs, unmodified, each verified by its own check (tests/suites/hecbench.json)"
	python3 tests/suites/hecbench_suite.py --hecbench $(HECBENCH) --lib $(abspath $(REL)) --cu13 $(abspath $(CU13)) \
	  --out build/hecbench-suite | tee build/hecbench_suite.out
	grep -qE "HECBENCH SUITE (PASSED|SKIPPED)" build/hecbench_suite.out
	@echo; echo "== CuPy, unmodified: its own kernels and cuBLAS, cuRAND and cuFFT through it, against numpy"
	if [ -f $(CUPY_STAMP) ]; then PTXJIT_DEVICE=future CUPY_COMPILE_WITH_PTX=1 LD_LIBRARY_PATH=$(REL):$(LIBS_LIB) \
	  $(LIBS_PY) tests/python/cupy_client.py | tee build/cupy.out; grep -q "CUPY VERIFIED" build/cupy.out; \
	  else echo "skipped: CuPy is not installed"; fi
	@echo; echo "== CuPy's own tests (creation, manipulation, indexing), on the future device"
	if [ -f $(CUPY_STAMP) ]; then $(CUPY_SUITE) creation manipulation indexing | tee build/cupy_suite.out; \
	  grep -qE "CUPY SUITE (PASSED|SKIPPED)" build/cupy_suite.out; else echo "skipped: CuPy is not installed"; fi
test-suites-full: build venv libs cupy
	mkdir -p build
	if [ -f $(CUPY_STAMP) ]; then $(CUPY_SUITE) | tee build/cupy_suite_full.out; \
	  grep -qE "CUPY SUITE (PASSED|SKIPPED)" build/cupy_suite_full.out; else echo "skipped: CuPy is not installed"; fi

test: lint-rust build venv build/client build/faults build/launch_limits build/device_attributes build/lazy_no_binary build/no_ptx.fatbin build/sanitize_client build/nvcc_faults build/nvcc_program build/nvcc_program_shared build/nvcc_printf build/devices build/nvcc_devices build/peer_probe build/pointer_attributes build/lazy build/graphs build/nvcc_graphs build/texture_probe build/textures build/texrefs build/tma build/nvcc_textures build/ipc build/memops build/device_heap build/nvjitlink build/lazy_ptx build/nvcc_cooperative build/nvcc_rdc build/nvcc_wgmma libs browser
	@echo "== reference values of the file-driven engine tests agree with their formulas"
	python3 tests/python/reference.py
	PTXAS=$(abspath $(CU13))/bin/ptxas INSTA_UPDATE=no cargo test --release --workspace
	@echo; echo "== fuzzing: the regression corpus and $(FUZZ_TEST_SECONDS) s of mutants per target (make fuzz runs longer)"
	FUZZ_SECONDS=$(FUZZ_TEST_SECONDS) cargo test --release -p ptx-jit-tests --test fuzz
	@echo; echo "== C client"
	LD_LIBRARY_PATH=$(REL) ./build/client tests/demo/kernels.ptx | tee build/client.out
	grep -q "ALL VERIFIED" build/client.out
	@echo; echo "== the C client traced (PTXJIT_TRACE): every call logged with its result"
	PTXJIT_TRACE=build/client.trace LD_LIBRARY_PATH=$(REL) ./build/client tests/demo/kernels.ptx >/dev/null
	grep -c "^cuLaunchKernel(f=0x[0-9a-f]*, .*) = CUDA_SUCCESS$$" build/client.trace
	grep -q "^cuMemcpy[A-Za-z]*_v2(.*) = CUDA_ERROR_INVALID_VALUE$$" build/client.trace
	rm -f build/client.trace
	@echo; echo "== faulting, trapping and runaway kernels end their launch, never the process (default mode)"
	LD_LIBRARY_PATH=$(REL) ./build/faults tests/faults/faults.ptx | tee build/faults.out
	grep -q "ALL VERIFIED" build/faults.out
	@echo; echo "== launch limits (.maxntid, .reqntid) and profiler calls: the H100's answers, line for line"
	LD_LIBRARY_PATH=$(REL) ./build/launch_limits > build/launch_limits.out
	diff tests/gpu/probes_c/launch_limits.expected build/launch_limits.out
	PTXJIT_DEVICE=h100 LD_LIBRARY_PATH=$(REL) ./build/device_attributes > build/device_attributes.h100.out
	python3 tests/gpu/probes_c/check_profile.py build/device_attributes.h100.out
	! PTXJIT_DEVICE=no-such-card LD_LIBRARY_PATH=$(REL) ./build/device_attributes
	@# A program that exits right after cuInit, 30 times: exit once raced the JIT's warm-up thread
	@# ("pure virtual method called", about one run in ten).
	for i in $$(seq 30); do LD_LIBRARY_PATH=$(REL) ./build/device_attributes > /dev/null || exit 1; done
	LD_LIBRARY_PATH=$(REL) ./build/lazy_no_binary build/no_ptx.fatbin _Z1kv > build/lazy_no_binary.out
	diff tests/gpu/probes_c/lazy_no_binary.expected build/lazy_no_binary.out
	@echo; echo "== lazy loading (the default) and CUDA_MODULE_LOADING=EAGER"
	LD_LIBRARY_PATH=$(REL) ./build/lazy | tee build/lazy.out
	grep -q "LAZY VERIFIED" build/lazy.out
	CUDA_MODULE_LOADING=EAGER LD_LIBRARY_PATH=$(REL) ./build/lazy | tee build/eager.out
	grep -q "EAGER VERIFIED" build/eager.out
	@# Where PTX errors surface, lazy and eager, against an H200's answers.
	(LD_LIBRARY_PATH=$(REL) ./build/lazy_ptx && CUDA_MODULE_LOADING=EAGER LD_LIBRARY_PATH=$(REL) ./build/lazy_ptx) > build/lazy_ptx.out
	diff tests/gpu/probes_c/lazy_ptx.expected build/lazy_ptx.out
	@echo; echo "== CUDA graphs: stream capture across streams, an explicit graph, capture's errors"
	LD_LIBRARY_PATH=$(REL) ./build/graphs build/graph.dot | tee build/graphs.out
	grep -q "GRAPHS VERIFIED" build/graphs.out
	@echo; echo "== Textures: an H100's answers for filtering, addressing, formats and gathers, bit for bit"
	LD_LIBRARY_PATH=$(REL) ./build/texture_probe > build/texture_probe.out
	cmp build/texture_probe.out tests/gpu/probes_c/texture_probe.expected
	LD_LIBRARY_PATH=$(REL) ./build/textures | tee build/textures.out
	grep -q "TEXTURES VERIFIED" build/textures.out
	LD_LIBRARY_PATH=$(REL) ./build/texrefs | tee build/texrefs.out
	grep -q "TEXREFS VERIFIED" build/texrefs.out
	@echo; echo "== Tensor copies (TMA): tensor maps, loads, stores and reductions against the manual's rules"
	LD_LIBRARY_PATH=$(REL) ./build/tma | tee build/tma.out
	grep -q "TMA VERIFIED" build/tma.out
	LD_LIBRARY_PATH=$(REL) ./build/tma "a box larger than the shared buffer" | grep -q "TMA VERIFIED"
	@echo; echo "== Device memory shared between two processes (cuIpcGetMemHandle, cuIpcOpenMemHandle)"
	LD_LIBRARY_PATH=$(REL) ./build/ipc | tee build/ipc.out
	grep -q "IPC VERIFIED" build/ipc.out
	@echo; echo "== Stream memory operations: waits, writes, atomic reductions, capture, cancellation"
	LD_LIBRARY_PATH=$(REL) ./build/memops | tee build/memops.out
	grep -q "MEMOPS VERIFIED" build/memops.out
	@echo; echo "== The device heap (malloc and free in kernels): its size, exhaustion, a foreign free, a new context's heap"
	LD_LIBRARY_PATH=$(REL) ./build/device_heap | tee build/device_heap.out
	grep -q "DEVICE HEAP VERIFIED" build/device_heap.out
	LD_LIBRARY_PATH=$(REL) ./build/nvcc_textures | tee build/nvcc_textures.out
	grep -q "TEXTURES VERIFIED" build/nvcc_textures.out
	grep -q 'label="kernel add' build/graph.dot
	LD_LIBRARY_PATH=$(REL) ./build/nvcc_graphs | tee build/nvcc_graphs.out
	grep -q "GRAPHS VERIFIED" build/nvcc_graphs.out
	@echo; echo "== NVIDIA's cuRAND, unmodified, from the compute_121 PTX it ships: device generators against its host generator"
	if [ -f $(LIBS_STAMP) ]; then PTXJIT_DEVICE=sm_121 LD_LIBRARY_PATH=$(REL):$(LIBS_LIB) $(LIBS_PY) \
	  tests/python/curand_client.py $(LIBS_LIB)/libcurand.so.10 | tee build/curand.out; \
	  grep -q "CURAND VERIFIED" build/curand.out; else echo "skipped: nvidia-curand is not installed"; fi
	@echo; echo "== NVIDIA's cuBLAS, unmodified, from the compute_120 PTX it ships: levels 1 and 2 and the GEMMs against numpy"
	@echo "   (on a future device, where cuBLASLt runs its forward-compatible PTX; on sm_120 its GEMMs ship as machine code only: a status)"
	if [ -f $(LIBS_STAMP) ]; then PTXJIT_DEVICE=future LD_LIBRARY_PATH=$(REL):$(LIBS_LIB) $(LIBS_PY) \
	  tests/python/cublas_client.py $(LIBS_LIB)/libcublas.so.13 | tee build/cublas.out; \
	  grep -q "CUBLAS VERIFIED" build/cublas.out; \
	  PTXJIT_DEVICE=sm_120 LD_LIBRARY_PATH=$(REL):$(LIBS_LIB) $(LIBS_PY) tests/python/cublas_client.py \
	  $(LIBS_LIB)/libcublas.so.13 --required Saxpy,Sgemv,Sdot,Snrm2 | tee build/cublas_sm120.out; \
	  grep -q "refused with a status: Sgemm (status 14)" build/cublas_sm120.out; \
	  grep -q "CUBLAS VERIFIED" build/cublas_sm120.out; else echo "skipped: nvidia-cublas is not installed"; fi
	@echo; echo "== NVIDIA's cuSPARSE, unmodified, from its compute_120 PTX: CSR SpMV and SpMM against numpy"
	if [ -f $(LIBS_STAMP) ]; then PTXJIT_DEVICE=sm_120 LD_LIBRARY_PATH=$(REL):$(LIBS_LIB) $(LIBS_PY) \
	  tests/python/cusparse_client.py $(LIBS_LIB)/libcusparse.so.12 | tee build/cusparse.out; \
	  grep -q "CUSPARSE VERIFIED" build/cusparse.out; else echo "skipped: nvidia-cusparse is not installed"; fi
	@echo; echo "== NVIDIA's cuFFT, unmodified, from the PTX in its private fat binaries: 1-D and 2-D transforms against numpy"
	if [ -f "$(LIBS_LIB)/libcufft.so.12" ]; then PTXJIT_DEVICE=future LD_LIBRARY_PATH=$(REL):$(LIBS_LIB) $(LIBS_PY) \
	  tests/python/cufft_client.py $(LIBS_LIB)/libcufft.so.12 | tee build/cufft.out; \
	  grep -q "CUFFT VERIFIED" build/cufft.out; else echo "skipped: nvidia-cufft is not installed"; fi
	@echo; echo "== several presented devices (PTXJIT_DEVICE_COUNT): the driver API on two, the CUDA runtime on three"
	PTXJIT_DEVICE_COUNT=2 LD_LIBRARY_PATH=$(REL) ./build/devices | tee build/devices.out
	grep -q "DEVICES VERIFIED" build/devices.out
	PTXJIT_DEVICE_COUNT=3 LD_LIBRARY_PATH=$(REL) ./build/nvcc_devices | tee build/nvcc_devices.out
	grep -q "DEVICES VERIFIED" build/nvcc_devices.out
	! PTXJIT_DEVICE_COUNT=0 LD_LIBRARY_PATH=$(REL) ./build/devices
	LD_LIBRARY_PATH=$(REL) ./build/peer_probe > build/peer_probe.out
	diff tests/gpu/probes_c/peer_probe.expected build/peer_probe.out
	@echo; echo "== pointer attributes as the CUDA runtime asks for them: the H200's answers, line for line"
	LD_LIBRARY_PATH=$(REL) ./build/pointer_attributes > build/pointer_attributes.out
	diff tests/gpu/probes_c/pointer_attributes.expected build/pointer_attributes.out
	@echo; echo "== an nvcc-built program whose kernels fault: sticky errors, cudaDeviceReset, then exact results"
	LD_LIBRARY_PATH=$(REL) ./build/nvcc_faults | tee build/nvcc_faults.out
	grep -q "ALL VERIFIED" build/nvcc_faults.out
	@echo; echo "== ptx-jit sanitize: an unmodified program's race, uninitialised read, double free, use after free and leak"
	rm -f build/sanitize.jsonl
	status=0; ./$(REL)/ptx-jit sanitize --log build/sanitize.jsonl -- ./build/sanitize_client tests/faults/sanitize.ptx \
	  > build/sanitize_bugs.out 2>&1 || status=$$?; \
	  cat build/sanitize_bugs.out; test $$status -eq 1 || { echo "ptx-jit sanitize exited $$status, not 1"; exit 1; }
	grep -q "^kernel on freed memory -> 700" build/sanitize_bugs.out
	python3 tests/faults/check_sanitize.py build/sanitize.jsonl
	@echo; echo "== ptx-jit sanitize: the C client is clean"
	status=0; ./$(REL)/ptx-jit sanitize -- ./build/client tests/demo/kernels.ptx > build/sanitize_clean.out 2>&1 \
	  || status=$$?; cat build/sanitize_clean.out; test $$status -eq 0
	grep -q "ALL VERIFIED" build/sanitize_clean.out
	grep -q "^ptx-jit sanitize: 0 error(s)" build/sanitize_clean.out
	@echo; echo "== ptx-jit sanitize: an nvcc-built program, cuda-bindings and numba-cuda run clean too"
	for p in ./build/nvcc_program "$(PY) tests/python/bindings_client.py" "$(PY) tests/python/numba_client.py"; do \
	  ./$(REL)/ptx-jit sanitize -- $$p > build/sanitize_clients.out 2>&1 \
	    && grep -q "ALL VERIFIED" build/sanitize_clients.out \
	    && grep -q "^ptx-jit sanitize: 0 error(s)" build/sanitize_clients.out \
	    || { cat build/sanitize_clients.out; echo "not clean under ptx-jit sanitize: $$p"; exit 1; }; \
	  echo "clean: $$p"; done
	@echo; echo "== ptx-jit bench kernel and bench program: phases, samples, statistics, CSV, and their reports in Chromium"
	PTXAS=$(abspath $(CU13))/bin/ptxas PTXJIT_REQUIRE_BROWSER=1 python3 tests/python/bench_harness.py $(REL)/ptx-jit
	@echo; echo "== cuda-bindings + NVRTC client"
	LD_LIBRARY_PATH=$(REL) $(PY) tests/python/bindings_client.py
	@echo; echo "== nvcc-built program, static CUDA runtime, unmodified"
	LD_LIBRARY_PATH=$(REL) ./build/nvcc_program
	@echo; echo "== the same program with the shared CUDA runtime"
	LD_LIBRARY_PATH=$(REL):$(CU13)/lib ./build/nvcc_program_shared
	@echo; echo "== device-side printf and assert in an nvcc-built program"
	LD_LIBRARY_PATH=$(REL) ./build/nvcc_printf 2>&1 | tee build/printf.out
	test "$$(grep -c '^printf: thread [0-2] of 3, x=1.500, name=gpu, big=1099511627776$$' build/printf.out)" -eq 3
	grep -q "Assertion \`v > 100\` failed" build/printf.out
	grep -q "ALL VERIFIED" build/printf.out
	@echo; echo "== numba-cuda client"
	LD_LIBRARY_PATH=$(REL) $(PY) tests/python/numba_client.py
	@echo; echo "== numba-cuda's own tests of cooperative groups (grid.sync(), libcudadevrt linked through cuLink*) and IPC"
	cd build && LD_LIBRARY_PATH=$(abspath $(REL)) $(abspath $(PY)) -m numba.runtests numba.cuda.tests.cudapy.test_cooperative_groups \
	  numba.cuda.tests.doc_examples.test_cg numba.cuda.tests.doc_examples.test_laplace numba.cuda.tests.cudapy.test_ipc
	@echo; echo "== Hopper's wgmma through CUTLASS's CuTe (nvcc, compute_90a PTX), on the h100 profile"
	PTXJIT_DEVICE=h100 LD_LIBRARY_PATH=$(REL) ./build/nvcc_wgmma | tee build/nvcc_wgmma.out
	grep -q "WGMMA VERIFIED" build/nvcc_wgmma.out
	@echo; echo "== an nvcc-built cooperative launch (cooperative groups' grid.sync())"
	LD_LIBRARY_PATH=$(REL) ./build/nvcc_cooperative | tee build/nvcc_cooperative.out
	grep -q "COOPERATIVE VERIFIED" build/nvcc_cooperative.out
	@echo; echo "== Relocatable device code (nvcc -rdc=true): calls, variables and kernels across translation units"
	LD_LIBRARY_PATH=$(REL) ./build/nvcc_rdc | tee build/nvcc_rdc.out
	grep -q "RDC VERIFIED" build/nvcc_rdc.out
	@echo; echo "== nvJitLink: PTX linked into an image our driver loads, and NVIDIA's errors"
	LD_LIBRARY_PATH=$(REL):$(REL)/nvjitlink ./build/nvjitlink | tee build/nvjitlink.out
	grep -q "NVJITLINK VERIFIED" build/nvjitlink.out
	@echo; echo "== numba-cuda as documented (numba-cuda[cu13], NVIDIA's nvJitLink): LTO by default, our nvJitLink preloaded"
	if [ -f $(NUMBA13_STAMP) ]; then LD_PRELOAD=$(abspath $(REL))/nvjitlink/libnvJitLink.so.13 LD_LIBRARY_PATH=$(REL) \
	  $(LIBS_PY) tests/python/numba_lto_client.py | tee build/numba_lto.out; grep -q "NUMBA LTO VERIFIED" build/numba_lto.out; \
	  cd build && LD_PRELOAD=$(abspath $(REL))/nvjitlink/libnvJitLink.so.13 LD_LIBRARY_PATH=$(abspath $(REL)) \
	  $(abspath $(LIBS_PY)) -m numba.runtests numba.cuda.tests.cudapy.test_atomics numba.cuda.tests.cudapy.test_intrinsics \
	  numba.cuda.tests.cudapy.test_cooperative_groups; \
	  else echo "skipped: numba-cuda[cu13] is not installed"; fi
	@echo; echo "== fat binaries made by nvcc, libraries, JIT logs and the linker"
	LD_LIBRARY_PATH=$(REL) $(PY) tests/python/fatbin_link_client.py $(CU13)/bin/nvcc
	@echo; echo "== fresh PTX from numba-cuda and NVRTC: lint clean, canonical form round-trips"
	$(PY) tests/python/fresh_ptx.py $(REL)/ptx-jit
	@echo; echo "== CLI"
	tests/cli.sh $(REL)/ptx-jit
	@echo; echo "all tests passed"

clean:
	cargo clean
	rm -rf build $(VENV) $(LIBS_VENV)
