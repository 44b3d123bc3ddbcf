/* Lazy and eager module loading (CUDA_MODULE_LOADING), as a driver-API program sees them.
 *
 * Lazy (the default): a load through the module API checks the whole text, as NVIDIA's driver does
 * (an H200 fails cuModuleLoadData for one broken kernel, lazy or not), then indexes the kernels and
 * places the variables; a kernel is compiled when first used. A library (cuLibraryLoadData) is
 * checked kernel by kernel as its kernels are looked up, so an error in one kernel's body fails that
 * kernel's lookup (with the code the load fails with when eager), while the other kernels and the
 * variables work. A kernel's part brings the functions and variables it names. A module of many
 * kernels loads, and runs one, without compiling the others.
 * Eager (CUDA_MODULE_LOADING=EAGER): the load fails, its error log naming the problem.
 *
 * The Makefile runs it twice, with and without the variable; it prints LAZY VERIFIED or EAGER
 * VERIFIED, or stops at the first difference. Usage: lazy */
#include "driver_util.h"
#include <string.h>
#include <time.h>

/* Two kernels, one of them broken (`%r9` is not declared), a variable, and a helper function only `good` calls. */
static const char *MIXED =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".global .u32 base = 7;\n"
    ".func (.param .u32 r) twice(.param .u32 x) {\n"
    " .reg .u32 %r<2>; ld.param.u32 %r1, [x]; add.u32 %r1, %r1, %r1; st.param.u32 [r], %r1; ret;\n}\n"
    ".visible .entry good(.param .u64 p) {\n"
    " .reg .u32 %r<5>; .reg .u64 %rd<4>;\n"
    " ld.param.u64 %rd1, [p]; mov.u32 %r1, %tid.x; mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2;\n"
    " ld.global.u32 %r2, [base];\n"
    " { .param .u32 a; .param .u32 r; st.param.u32 [a], %r1; call (r), twice, (a); ld.param.u32 %r3, [r]; }\n"
    " add.u32 %r4, %r2, %r3; st.global.u32 [%rd3], %r4; ret;\n}\n"
    ".visible .entry broken(.param .u64 p) {\n"
    " .reg .u32 %r<2>;\n"
    " mov.u32 %r9, 3;\n"
    " ret;\n}\n";

/* A kernel with a variable of its own that lives as long as the module (a function-scope `.global`,
 * after a `.loc` line as nvcc writes it): the module places it at load, and the kernel uses that one. */
static const char *STATIC =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry k(.param .u64 p) {\n"
    " .loc 1 2 3\n .global .u32 counter = 40;\n .reg .u32 %r<3>; .reg .u64 %rd<2>;\n"
    " ld.param.u64 %rd1, [p]; atom.global.add.u32 %r1, [counter], 2;\n"
    " ld.global.u32 %r2, [counter]; st.global.u32 [%rd1], %r2; ret;\n}\n";

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* A module of `n` kernels k0..k{n-1}, each storing its number plus one. */
static char *many_kernels(int n) {
    const char *head = ".version 7.0\n.target sm_75\n.address_size 64\n";
    size_t cap = strlen(head) + (size_t)n * 256;
    char *s = malloc(cap), *at = s;
    at += sprintf(at, "%s", head);
    for (int i = 0; i < n; i++) {
        at += sprintf(at,
                      ".visible .entry k%d(.param .u64 p) {\n .reg .u32 %%r<2>; .reg .u64 %%rd<2>;\n"
                      " ld.param.u64 %%rd1, [p]; mov.u32 %%r1, %d; add.u32 %%r1, %%r1, 1;\n"
                      " st.global.u32 [%%rd1], %%r1; ret;\n}\n",
                      i, i);
    }
    return s;
}

static void lazy(void) {
    CUmoduleLoadingMode mode;
    CHECK(cuModuleGetLoadingMode(&mode));
    ASSERT(mode == CU_MODULE_LAZY_LOADING);

    /* The module API checks the whole text at load. */
    CUmodule m;
    EXPECT(cuModuleLoadData(&m, MIXED), CUDA_ERROR_INVALID_PTX);

    /* A library's load compiles nothing: its info log says the kernels were indexed. */
    CUlibrary lib;
    char info[256] = "";
    CUjit_option opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {info, (void *)(size_t)sizeof info};
    CHECK(cuLibraryLoadData(&lib, MIXED, opts, vals, 2, NULL, NULL, 0));
    ASSERT(strstr(info, "2 kernel(s) indexed") != NULL);
    CHECK(cuLibraryGetModule(&m, lib));
    unsigned count = 0;
    CHECK(cuModuleGetFunctionCount(&count, m));
    ASSERT(count == 2);

    /* Enumerated handles are not loaded until used; the broken kernel fails to load, alone. */
    CUfunction all[3] = {0};
    CHECK(cuModuleEnumerateFunctions(all, 3, m));
    ASSERT(all[0] && all[1] && !all[2]);
    int loaded = -1;
    CHECK(cuFuncIsLoaded((CUfunctionLoadingState *)&loaded, all[1]));
    ASSERT(loaded == CU_FUNCTION_LOADING_STATE_UNLOADED);
    EXPECT(cuFuncLoad(all[1]), CUDA_ERROR_INVALID_PTX);
    CHECK(cuFuncLoad(all[0]));
    CHECK(cuFuncIsLoaded((CUfunctionLoadingState *)&loaded, all[0]));
    ASSERT(loaded == CU_FUNCTION_LOADING_STATE_LOADED);
    /* The variables are placed at load. */
    CUdeviceptr base;
    size_t bytes;
    unsigned v = 0;
    CHECK(cuModuleGetGlobal(&base, &bytes, m, "base"));
    CHECK(cuMemcpyDtoH(&v, base, 4));
    ASSERT(bytes == 4 && v == 7);
    v = 100;
    CHECK(cuMemcpyHtoD(base, &v, 4));

    /* The broken kernel fails where it is looked up, every time; the good one runs. */
    CUfunction good, broken;
    EXPECT(cuModuleGetFunction(&broken, m, "broken"), CUDA_ERROR_INVALID_PTX);
    EXPECT(cuModuleGetFunction(&broken, m, "broken"), CUDA_ERROR_INVALID_PTX);
    EXPECT(cuModuleGetFunction(&broken, m, "missing"), CUDA_ERROR_NOT_FOUND);
    CHECK(cuModuleGetFunction(&good, m, "good"));
    CUdeviceptr out;
    CHECK(cuMemAlloc(&out, 32 * 4));
    void *args[] = {&out};
    CHECK(cuLaunchKernel(good, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    unsigned host[32];
    CHECK(cuMemcpyDtoH(host, out, sizeof host));
    for (unsigned i = 0; i < 32; i++) ASSERT(host[i] == 100 + 2 * i);
    CHECK(cuLibraryUnload(lib));

    /* A function-scope variable: placed at load, shared with its kernel. */
    CHECK(cuModuleLoadData(&m, STATIC));
    CUdeviceptr counter;
    CHECK(cuModuleGetGlobal(&counter, &bytes, m, "counter"));
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, m, "k"));
    CHECK(cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK(cuMemcpyDtoH(host, out, 4));
    CHECK(cuMemcpyDtoH(&v, counter, 4));
    ASSERT(host[0] == 42 && v == 42);
    CHECK(cuModuleUnload(m));

    /* Many kernels: the load checks the text and compiles none of them; one runs. */
    int n = 4000;
    char *big = many_kernels(n);
    double t0 = seconds();
    CHECK(cuModuleLoadData(&m, big));
    double t1 = seconds();
    CHECK(cuModuleGetFunctionCount(&count, m));
    ASSERT(count == (unsigned)n);
    CUfunction last;
    CHECK(cuModuleGetFunction(&last, m, "k3999"));
    CHECK(cuLaunchKernel(last, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    double t2 = seconds();
    CHECK(cuMemcpyDtoH(host, out, 4));
    ASSERT(host[0] == 4000);
    printf("%d kernels (%zu bytes): load %.1f ms, first launch of one %.1f ms\n", n, strlen(big),
           (t1 - t0) * 1e3, (t2 - t1) * 1e3);
    CHECK(cuModuleUnload(m));
    free(big);
    CHECK(cuMemFree(out));
    printf("LAZY VERIFIED\n");
}

static void eager(void) {
    CUmoduleLoadingMode mode;
    CHECK(cuModuleGetLoadingMode(&mode));
    ASSERT(mode == CU_MODULE_EAGER_LOADING);
    CUmodule m;
    char log[1024] = "";
    CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *)(size_t)sizeof log};
    EXPECT(cuModuleLoadDataEx(&m, MIXED, 2, opts, vals), CUDA_ERROR_INVALID_PTX);
    ASSERT(strstr(log, "%r9") != NULL);
    printf("EAGER VERIFIED\n");
}

int main(void) {
    context_on_device0();
    const char *mode = getenv("CUDA_MODULE_LOADING");
    if (mode && strcmp(mode, "EAGER") == 0)
        eager();
    else
        lazy();
    return 0;
}
