/* Runs tests/ptx-host/shared_align.ptx (kernel `k`, 2 blocks of 32 threads, 64 bytes of dynamic shared
 * memory) on the real driver and prints its four words: shared variables' absolute alignment and where
 * the dynamic array starts. An H200 (driver 580.159.04) printed `0 0 0 1280`, the file test's `out:`.
 * Usage: shared_align_probe FILE.ptx */
#include "../../demo/driver_util.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    char *src = read_file(argv[1]);
    CUmodule m; CUfunction k; CUdeviceptr out; unsigned h[4];
    context_on_device0();
    CUresult r = cuModuleLoadData(&m, src); if (r) { printf("load %d\n", r); return 1; }
    cuModuleGetFunction(&k, m, "k"); cuMemAlloc(&out, 16);
    void *args[] = {&out};
    r = cuLaunchKernel(k, 2, 1, 1, 32, 1, 1, 64, NULL, args, NULL); printf("launch %d sync %d\n", r, cuCtxSynchronize());
    cuMemcpyDtoH(h, out, 16); printf("%u %u %u %u\n", h[0], h[1], h[2], h[3]); return 0;
}
