/* A plain CUDA driver API program: it knows nothing about ptx-jit. Built against NVIDIA's cuda.h and
 * linked with -lcuda, it runs on whatever libcuda.so.1 the loader finds. */
#include <cuda.h>
#include "driver_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "kernels.ptx";
    const int n = 1 << 22;
    char *ptx = read_file(path);

    CHECK(cuInit(0));
    int version = 0, count = 0;
    CHECK(cuDriverGetVersion(&version));
    CHECK(cuDeviceGetCount(&count));
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    char name[128];
    int major = 0, minor = 0, sms = 0;
    CHECK(cuDeviceGetName(name, sizeof name, dev));
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    printf("driver %d, %d device(s): %s, compute %d.%d, %d SMs\n", version, count, name, major, minor, sms);

    CUcontext ctx;
    CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    char log[4096] = {0};
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(size_t)sizeof log};
    CUmodule mod;
    CUresult lr = cuModuleLoadDataEx(&mod, ptx, 2, opts, vals);
    if (lr != CUDA_SUCCESS) {
        fprintf(stderr, "cuModuleLoadDataEx failed (%d):\n%s\n", (int)lr, log);
        return 1;
    }
    CUfunction vecadd, saxpy;
    CHECK(cuModuleGetFunction(&vecadd, mod, "vecadd"));
    CHECK(cuModuleGetFunction(&saxpy, mod, "saxpy"));

    size_t bytes = (size_t)n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    for (int i = 0; i < n; i++) { a[i] = (float)i; b[i] = 2.0f * (float)(n - i); }
    CUdeviceptr da, db, dc;
    CHECK(cuMemAlloc(&da, bytes));
    CHECK(cuMemAlloc(&db, bytes));
    CHECK(cuMemAlloc(&dc, bytes));
    CHECK(cuMemcpyHtoD(da, a, bytes));
    CHECK(cuMemcpyHtoD(db, b, bytes));
    CHECK(cuMemsetD32(dc, 0xffffffffu, n));

    int block = 256, grid = (n + block - 1) / block, nn = n;
    void *args[] = {&da, &db, &dc, &nn};
    CHECK(cuLaunchKernel(vecadd, grid, 1, 1, block, 1, 1, 0, NULL, args, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(c, dc, bytes));
    long bad = 0;
    for (int i = 0; i < n; i++)
        if (c[i] != a[i] + b[i]) { if (bad++ < 5) fprintf(stderr, "vecadd c[%d] = %g, want %g\n", i, c[i], a[i] + b[i]); }
    printf("vecadd: %d elements, %ld wrong -> %s\n", n, bad, bad ? "FAIL" : "verified");

    float alpha = 0.5f;
    void *sargs[] = {&alpha, &da, &db, &nn};
    CHECK(cuLaunchKernel(saxpy, grid, 1, 1, block, 1, 1, 0, NULL, sargs, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(c, db, bytes));
    long bad2 = 0;
    for (int i = 0; i < n; i++) {
        float want = fmaf(alpha, a[i], b[i]);
        if (c[i] != want) { if (bad2++ < 5) fprintf(stderr, "saxpy y[%d] = %g, want %g\n", i, c[i], want); }
    }
    printf("saxpy:  %d elements, %ld wrong -> %s\n", n, bad2, bad2 ? "FAIL" : "verified");

    /* Bad input gets an error code, not a crash. */
    CUresult e1 = cuMemcpyHtoD(da + bytes, a, 16);
    CUresult e2 = cuLaunchKernel(vecadd, grid, 1, 1, 2048, 1, 1, 0, NULL, args, NULL);
    CUresult e3 = cuModuleGetFunction(&vecadd, mod, "no_such_kernel");
    printf("out-of-range copy -> %d, 2048-thread block -> %d, unknown kernel -> %d\n", (int)e1, (int)e2, (int)e3);

    /* A module the CPU backend cannot run (a multi-sample texture, which the driver API cannot even
     * make) fails with a clear code, and the JIT error log says why. */
    const char *unsupported =
        ".version 8.5\n.target sm_80\n.address_size 64\n"
        ".visible .entry bits(.param .u64 p, .param .u64 t) {\n"
        "  .reg .b32 %r<6>;\n  .reg .b64 %rd<3>;\n"
        "  ld.param.u64 %rd1, [p];\n  ld.param.u64 %rd2, [t];\n  mov.u32 %r1, 0;\n"
        "  tex.2dms.v4.s32.s32 {%r2, %r3, %r4, %r5}, [%rd2, {%r1, %r1, %r1, %r1}];\n"
        "  st.global.u32 [%rd1], %r2;\n  ret;\n}\n";
    CUmodule rejected;
    log[0] = 0;
    vals[1] = (void *)(size_t)sizeof log;
    CUresult e4 = cuModuleLoadDataEx(&rejected, unsupported, 2, opts, vals);
    /* Loading is lazy, as NVIDIA's default: the kernel's errors come with its lookup. */
    CUfunction bits;
    CUresult e5 = e4 == CUDA_SUCCESS ? cuModuleGetFunction(&bits, rejected, "bits") : e4;
    /* Loaded eagerly, the module fails at once, and the JIT error log names the instruction. */
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    log[0] = 0;
    vals[1] = (void *)(size_t)sizeof log;
    CUresult e6 = cuModuleLoadDataEx(&rejected, unsupported, 2, opts, vals);
    unsetenv("CUDA_MODULE_LOADING");
    printf("unsupported module -> %d, its kernel -> %d, loaded eagerly -> %d, error log: %s\n", (int)e4, (int)e5,
           (int)e6, log);

    CHECK(cuMemFree(da));
    CHECK(cuMemFree(db));
    CHECK(cuMemFree(dc));
    CHECK(cuModuleUnload(mod));
    CHECK(cuCtxDestroy(ctx));
    free(a); free(b); free(c); free(ptx);
    int ok = bad == 0 && bad2 == 0 && e1 == CUDA_ERROR_INVALID_VALUE && e2 == CUDA_ERROR_INVALID_VALUE &&
             e3 == CUDA_ERROR_NOT_FOUND && e4 == CUDA_SUCCESS && e5 == CUDA_ERROR_NOT_SUPPORTED &&
             e6 == CUDA_ERROR_NOT_SUPPORTED && strstr(log, "multi-sample") != NULL;
    printf("%s\n", ok ? "ALL VERIFIED" : "FAILED");
    return ok ? 0 : 1;
}
