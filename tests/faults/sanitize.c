/* Bugs for `ptx-jit sanitize` to find in an unmodified driver API program: a racy kernel, a kernel
 * reading device memory nothing wrote, a double free, a kernel reading freed memory and an allocation
 * left at context destruction.
 * The program itself runs to its end either way; its only check is that every call it expects to
 * succeed does. A clean run of a correct kernel comes first (no finding for it). */
#include <cuda.h>
#include "../demo/driver_util.h"
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    char *ptx = read_file(argc > 1 ? argv[1] : "sanitize.ptx");
    CUmodule mod;
    CUfunction sum, copy;
    CUcontext ctx = context_on_device0();
    CHECK(cuModuleLoadData(&mod, ptx));
    CHECK(cuModuleGetFunction(&sum, mod, "sum"));
    CHECK(cuModuleGetFunction(&copy, mod, "copy"));

    unsigned host[32];
    for (int i = 0; i < 32; i++) host[i] = i;
    CUdeviceptr in, out, acc;
    CHECK(cuMemAlloc(&in, sizeof host));
    CHECK(cuMemAlloc(&out, sizeof host));
    CHECK(cuMemAlloc(&acc, 4));

    /* Correct: `in` is written before the kernel reads it. */
    CHECK(cuMemcpyHtoD(in, host, sizeof host));
    void *copy_args[] = {&in, &out};
    CHECK(cuLaunchKernel(copy, 1, 1, 1, 32, 1, 1, 0, NULL, copy_args, NULL));
    CHECK(cuCtxSynchronize());

    /* initcheck: a fresh allocation read before anything wrote it. */
    CUdeviceptr fresh;
    CHECK(cuMemAlloc(&fresh, sizeof host));
    void *uninit_args[] = {&fresh, &out};
    CHECK(cuLaunchKernel(copy, 1, 1, 1, 32, 1, 1, 0, NULL, uninit_args, NULL));
    CHECK(cuCtxSynchronize());

    /* racecheck: unsynchronised read-modify-write of one word. */
    CHECK(cuMemsetD32(acc, 0, 1));
    void *sum_args[] = {&acc};
    CHECK(cuLaunchKernel(sum, 1, 1, 1, 32, 1, 1, 0, NULL, sum_args, NULL));
    CHECK(cuCtxSynchronize());

    /* memcheck: a double free (the driver refuses the second), and `fresh` is never freed. */
    CHECK(cuMemFree(in));
    CUresult again = cuMemFree(in);
    printf("second cuMemFree -> %d\n", (int)again);
    CHECK(cuMemFree(out));
    CHECK(cuMemFree(acc));

    /* memcheck: a kernel reading memory freed with cuMemFree. The launch fails and its error is
     * sticky, as on a GPU, so this comes last. */
    void *freed_args[] = {&in, &fresh};
    CHECK(cuLaunchKernel(copy, 1, 1, 1, 32, 1, 1, 0, NULL, freed_args, NULL));
    printf("kernel on freed memory -> %d\n", (int)cuCtxSynchronize());
    CHECK(cuCtxDestroy(ctx));
    printf("done\n");
    return 0;
}
