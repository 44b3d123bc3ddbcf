// Two kernels, built by `make` into a fat binary with machine code for sm_90 only and no PTX, for
// tests/gpu/probes_c/lazy_no_binary.c: code no device of this backend can run.
__global__ void k() {}
__global__ void j(int *p) { *p = 1; }
