/* Kernels that fault, trap, divide by zero, recurse without end and never finish, each in a context
 * of its own, in one process on the default (fast) mode: each launch must end with the error an H100
 * gives (tests/gpu/README.md), sticky on its context, and the process must live on to run a correct
 * kernel in a new context (which a GPU's process cannot after an illegal address). A plain driver API
 * program: it knows nothing about ptx-jit. */
#include <cuda.h>
#include "../demo/driver_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static char *ptx;
static CUdevice dev;
static int failures;
static const char *only;

/* Whether the case named `name` runs. */
static int wanted(const char *name) { return only == NULL || strcmp(only, name) == 0; }


static const char *name_of(CUresult r) {
    const char *s = "?";
    cuGetErrorName(r, &s);
    return s;
}

static void expect(const char *what, CUresult got, CUresult want) {
    printf("%-58s %-28s %s\n", what, name_of(got), got == want ? "ok" : "WRONG");
    if (got != want) {
        fprintf(stderr, "  expected %s\n", name_of(want));
        failures++;
    }
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct {
    CUcontext ctx;
    CUmodule mod;
} Ctx;

static Ctx open_ctx(void) {
    Ctx c;
    CHECK(cuCtxCreate(&c.ctx, NULL, 0, dev));
    CHECK(cuModuleLoadData(&c.mod, ptx));
    return c;
}

/* Resident memory (KiB) and mappings of this process, from /proc/self. */
static void footprint(long *rss_kib, long *maps) {
    char line[512];
    FILE *f = fopen("/proc/self/status", "r");
    *rss_kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) *rss_kib = atol(line + 6);
    if (f) fclose(f);
    f = fopen("/proc/self/maps", "r");
    *maps = 0;
    while (f && fgets(line, sizeof line, f)) *maps += strchr(line, '\n') != NULL;
    if (f) fclose(f);
}

/* Launches `name` on the context's default stream without waiting. */
static CUresult start(Ctx *c, const char *name, unsigned grid, unsigned block, void **args) {
    CUfunction f;
    CHECK(cuCtxSetCurrent(c->ctx));
    CHECK(cuModuleGetFunction(&f, c->mod, name));
    return cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, NULL, args, NULL);
}

/* Launches and waits: the launch's own error, or the synchronisation's. */
static CUresult run(Ctx *c, const char *name, unsigned grid, unsigned block, void **args) {
    CUresult r = start(c, name, grid, block, args);
    return r != CUDA_SUCCESS ? r : cuCtxSynchronize();
}

/* A launch that must fail with `want`; the error must then be sticky, and the context must still
 * be destroyable. */
static void faulting(const char *what, const char *name, unsigned grid, unsigned block, void **args, CUresult want) {
    Ctx c = open_ctx();
    expect(what, run(&c, name, grid, block, args), want);
    CUdeviceptr d;
    char again[96];
    snprintf(again, sizeof again, "  ...then cuMemAlloc in the same context");
    expect(again, cuMemAlloc(&d, 16), want);
    expect("  ...then cuModuleUnload", cuModuleUnload(c.mod), want);
    expect("  ...then cuCtxDestroy", cuCtxDestroy(c.ctx), CUDA_SUCCESS);
}

/* A kernel whose arguments are a 4-byte output buffer and, when `scalar` is given, a u32; it must
 * end with `want`, and the context must then be destroyable. */
static void with_output(const char *what, const char *name, unsigned grid, unsigned block, unsigned *scalar,
                        CUresult want) {
    Ctx c = open_ctx();
    CUdeviceptr out;
    CHECK(cuMemAlloc(&out, 4));
    void *args[] = {&out, scalar};
    expect(what, run(&c, name, grid, block, args), want);
    CHECK(cuCtxDestroy(c.ctx));
}

/* vecadd in context `c`: SUCCESS only if every element is right. */
static CUresult vecadd(Ctx *c, int n) {
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *out = malloc(n * sizeof *out);
    for (int i = 0; i < n; i++) { a[i] = (float)i; b[i] = 2.0f * i + 1.0f; }
    CUdeviceptr da, db, dc;
    CHECK(cuCtxSetCurrent(c->ctx));
    CHECK(cuMemAlloc(&da, n * sizeof *a));
    CHECK(cuMemAlloc(&db, n * sizeof *b));
    CHECK(cuMemAlloc(&dc, n * sizeof *out));
    CHECK(cuMemcpyHtoD(da, a, n * sizeof *a));
    CHECK(cuMemcpyHtoD(db, b, n * sizeof *b));
    unsigned un = n;
    void *args[] = {&da, &db, &dc, &un};
    CUresult r = run(c, "vecadd", (n + 255) / 256, 256, args);
    if (r == CUDA_SUCCESS) r = cuMemcpyDtoH(out, dc, n * sizeof *out);
    for (int i = 0; r == CUDA_SUCCESS && i < n; i++)
        if (out[i] != 3.0f * i + 1.0f) {
            fprintf(stderr, "  vecadd: c[%d] = %g, expected %g\n", i, out[i], 3.0f * i + 1.0f);
            r = CUDA_ERROR_UNKNOWN;
        }
    cuMemFree(da);
    cuMemFree(db);
    cuMemFree(dc);
    free(a); free(b); free(out);
    return r;
}

int main(int argc, char **argv) {
    ptx = read_file(argc > 1 ? argv[1] : "faults.ptx");
    /* A case name as the second argument runs that case alone (tests/gpu/faults_on_device.sh runs each
     * in its own process, since a GPU's process cannot use the device again after an illegal address). */
    only = argc > 2 ? argv[2] : NULL;
    /* Runaway kernels end after 3 s (read at the first launch). */
    setenv("PTXJIT_LAUNCH_TIMEOUT", "3", 1);
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));

    /* A wild pointer aligned for the kernel's 4-byte stores: an H100 ends a store to 0xdeadbeef with
     * CUDA_ERROR_MISALIGNED_ADDRESS, which only checked mode tells apart (default mode knows the
     * address of a fault, not the width of the access). */
    CUdeviceptr null_ptr = 0, wild = 0xdeadbee0, zero_off = 0;
    void *at_null[] = {&null_ptr, &zero_off};
    if (wanted("null")) faulting("store to address 0", "store", 8, 64, at_null, CUDA_ERROR_ILLEGAL_ADDRESS);
    void *at_wild[] = {&wild, &zero_off};
    if (wanted("wild")) faulting("store to 0xdeadbee0", "store", 8, 64, at_wild, CUDA_ERROR_ILLEGAL_ADDRESS);

    if (wanted("past")) {
        Ctx c = open_ctx();
        CUdeviceptr d;
        CHECK(cuMemAlloc(&d, 1024));
        unsigned long long tib = 1ull << 40;
        void *past[] = {&d, &tib};
        expect("store 1 TiB past an allocation", run(&c, "store", 2, 32, past), CUDA_ERROR_ILLEGAL_ADDRESS);
        CHECK(cuCtxDestroy(c.ctx));
    }
    if (wanted("freed")) {
        Ctx c = open_ctx();
        CUdeviceptr d;
        CHECK(cuMemAlloc(&d, 64 << 20));
        CHECK(cuMemFree(d));
        void *freed[] = {&d, &zero_off};
        expect("store to a freed 64 MiB allocation", run(&c, "store", 2, 32, freed), CUDA_ERROR_ILLEGAL_ADDRESS);
        CHECK(cuCtxDestroy(c.ctx));
    }
    CUdeviceptr low = 0x10;
    void *after_bar[] = {&low};
    if (wanted("after_barrier"))
        faulting("store to 0x10 after a barrier (regions)", "store_after_barrier", 4, 64, after_bar,
             CUDA_ERROR_ILLEGAL_ADDRESS);
    if (wanted("after_shuffle"))
        faulting("store to 0x10 after a warp shuffle (lanes)", "store_after_shuffle", 4, 64, after_bar,
                 CUDA_ERROR_ILLEGAL_ADDRESS);
    if (wanted("on_fiber"))
        faulting("store to 0x10 after a barrier in a .func (fibers)", "store_on_fiber", 4, 64, after_bar,
                 CUDA_ERROR_ILLEGAL_ADDRESS);
    if (wanted("trap")) faulting("trap", "trap_kernel", 2, 32, NULL, CUDA_ERROR_LAUNCH_FAILED);

    unsigned zero = 0, depth = 1000000000u;
    if (wanted("barrier_counts"))
        with_output("one barrier met with two thread counts", "barrier_counts", 1, 64, &zero,
                    CUDA_ERROR_ILLEGAL_INSTRUCTION);
    if (wanted("async_store"))
        with_output("st.async outside a cluster launch", "async_store", 2, 32, &zero, CUDA_ERROR_ILLEGAL_INSTRUCTION);
    if (wanted("clusters")) {
        with_output("st.async in a kernel of clusters of one CTA", "async_store_clustered", 2, 32, &zero, CUDA_SUCCESS);
        with_output(".explicitcluster launched without a cluster shape", "explicit_cluster", 2, 32, &zero,
                    CUDA_ERROR_INVALID_CLUSTER_SIZE);
    }
    if (wanted("divide")) with_output("integer division by zero (no fault)", "divide", 1, 32, &zero, CUDA_SUCCESS);
    if (wanted("recurse")) with_output("recursion 10^9 deep", "recurse", 1, 1, &depth, CUDA_ERROR_ILLEGAL_ADDRESS);
    if (wanted("spin")) with_output("infinite loop (PTXJIT_LAUNCH_TIMEOUT=3)", "spin", 4, 32, NULL, CUDA_ERROR_LAUNCH_TIMEOUT);
    if (wanted("spin_at_barrier"))
        with_output("infinite loop between barriers", "spin_at_barrier", 2, 64, NULL, CUDA_ERROR_LAUNCH_TIMEOUT);
    if (wanted("destroy_running")) {
        /* cuCtxDestroy with a runaway kernel still running: cancelled after its grace period. */
        Ctx c = open_ctx();
        CUdeviceptr out;
        CHECK(cuMemAlloc(&out, 4));
        void *args[] = {&out};
        expect("launch of a kernel that never ends", start(&c, "spin", 2, 32, args), CUDA_SUCCESS);
        double t0 = now();
        expect("cuCtxDestroy while it runs", cuCtxDestroy(c.ctx), CUDA_SUCCESS);
        double took = now() - t0;
        printf("  ...returned after %.2f s\n", took);
        if (took > 2.5) {
            fprintf(stderr, "  cuCtxDestroy took %.2f s: the kernel was not cancelled\n", took);
            failures++;
        }
    }
    if (wanted("repeated")) {
        /* Faults in every execution model, over and over, each in a fresh context: a faulted launch
         * must give back its stacks, fibers and memory, so the process does not grow with them. */
        const char *kernels[] = {"store_after_barrier", "store_after_shuffle", "store_on_fiber"};
        long rss0 = 0, maps0 = 0, rss1, maps1;
        int bad = 0;
        for (int i = 0; i < 160; i++) {
            if (i == 10) footprint(&rss0, &maps0); /* after the kernels' first compiles */
            Ctx c = open_ctx();
            void *args[] = {&low};
            bad += run(&c, kernels[i % 3], 4, 64, args) != CUDA_ERROR_ILLEGAL_ADDRESS;
            CUdeviceptr d;
            bad += cuMemAlloc(&d, 1 << 20) != CUDA_ERROR_ILLEGAL_ADDRESS;
            bad += cuCtxDestroy(c.ctx) != CUDA_SUCCESS;
        }
        footprint(&rss1, &maps1);
        expect("150 faulting launches in fresh contexts", bad ? CUDA_ERROR_UNKNOWN : CUDA_SUCCESS, CUDA_SUCCESS);
        printf("  ...resident %ld -> %ld KiB, mappings %ld -> %ld\n", rss0, rss1, maps0, maps1);
        if (rss1 - rss0 > 32 * 1024 || maps1 - maps0 > 32) {
            fprintf(stderr, "  the process grew with each faulted launch\n");
            failures++;
        }
    }
    if (wanted("two_contexts")) {
        /* A fault in one context leaves another context's work alone (not so on a GPU: there the
         * process cannot use the device again after an illegal address). */
        Ctx bad = open_ctx(), good = open_ctx();
        expect("store to address 0 in context A", run(&bad, "store", 8, 64, at_null), CUDA_ERROR_ILLEGAL_ADDRESS);
        expect("vecadd in context B", vecadd(&good, 1 << 20), CUDA_SUCCESS);
        CHECK(cuCtxDestroy(bad.ctx));
        CHECK(cuCtxDestroy(good.ctx));
    }
    if (wanted("bad_calls")) {
        /* Bad pointers and arguments are errors of the call, never a crash. */
        Ctx c = open_ctx();
        char host[64] = {0};
        CUdeviceptr d, big;
        CHECK(cuMemAlloc(&d, 64));
        CHECK(cuMemFree(d));
        expect("cuMemcpy to a freed device pointer", cuMemcpy(d, (CUdeviceptr)host, 64), CUDA_ERROR_INVALID_VALUE);
        expect("cuMemcpy from a freed device pointer", cuMemcpy((CUdeviceptr)host, d, 64), CUDA_ERROR_INVALID_VALUE);
        expect("cuMemcpy to 0x7", cuMemcpy(0x7, (CUdeviceptr)host, 64), CUDA_ERROR_INVALID_VALUE);
        expect("cuMemcpy from 0xdeadbeef", cuMemcpy((CUdeviceptr)host, 0xdeadbeef, 64), CUDA_ERROR_INVALID_VALUE);
        expect("cuMemcpyHtoD to a freed device pointer", cuMemcpyHtoD(d, host, 64), CUDA_ERROR_INVALID_VALUE);
        expect("cuMemAlloc of 1 TiB", cuMemAlloc(&big, 1ull << 40), CUDA_ERROR_OUT_OF_MEMORY);

        /* Allocations are bounded by the memory the device reports. */
        size_t free0, total;
        CHECK(cuMemGetInfo(&free0, &total));
        CUdeviceptr gib[4096];
        int n = 0;
        CUresult r = CUDA_SUCCESS;
        while (n < 4096 && (r = cuMemAlloc(&gib[n], 1ull << 30)) == CUDA_SUCCESS) n++;
        expect("1 GiB allocations until the device is full", r, CUDA_ERROR_OUT_OF_MEMORY);
        printf("  ...%d GiB allocated of %.1f GiB total\n", n, total / 1073741824.0);
        if ((size_t)n > total >> 30) {
            fprintf(stderr, "  %d GiB allocated, more than the %zu bytes reported\n", n, total);
            failures++;
        }
        while (n > 0) CHECK(cuMemFree(gib[--n]));

        /* Small allocations cost their size class, not a page each. */
        enum { SMALL = 10000 };
        static CUdeviceptr small[SMALL];
        size_t before, after;
        CHECK(cuMemGetInfo(&before, &total));
        for (int i = 0; i < SMALL; i++) CHECK(cuMemAlloc(&small[i], 64));
        CHECK(cuMemGetInfo(&after, &total));
        printf("  ...10000 allocations of 64 bytes take %zu bytes\n", before - after);
        if (before - after > SMALL * 256) {
            fprintf(stderr, "  more than 256 bytes per 64-byte allocation\n");
            failures++;
        }
        for (int i = 0; i < SMALL; i++) CHECK(cuMemFree(small[i]));

        CUfunction f;
        CHECK(cuModuleGetFunction(&f, c.mod, "store"));
        CUdeviceptr p0 = 0;
        unsigned long long off = 0;
        void *args[] = {&p0, &off};
        size_t sz = 8;
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, host, CU_LAUNCH_PARAM_BUFFER_SIZE, &sz, CU_LAUNCH_PARAM_END};
        expect("cuLaunchKernel with kernelParams and extra", cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, extra),
               CUDA_ERROR_INVALID_VALUE);
        size_t psize;
        expect("cuFuncGetParamInfo with a NULL offset", cuFuncGetParamInfo(f, 0, NULL, &psize), CUDA_ERROR_INVALID_VALUE);
        CHECK(cuCtxDestroy(c.ctx));
    }

    if (wanted("map_count")) {
        /* Every mapping the process may have is taken (vm.max_map_count): the driver's calls that need
         * one fail with an error, never abort, and work again once the mappings are returned. */
        Ctx c = open_ctx();
        CUdeviceptr buf;
        CHECK(cuMemAlloc(&buf, 4096));
        long max_maps = 1 << 16;
        FILE *mc = fopen("/proc/sys/vm/max_map_count", "r");
        if (mc) {
            if (fscanf(mc, "%ld", &max_maps) != 1) max_maps = 1 << 16;
            fclose(mc);
        }
        void **maps = malloc((max_maps + 16) * sizeof *maps);
        if (!maps) {
            fprintf(stderr, "  no memory for %ld mapping addresses\n", max_maps);
            exit(1);
        }
        long n = 0;
        while (n < max_maps + 16) {
            /* Alternate protections so that neighbouring pages stay separate mappings. */
            void *p = mmap(NULL, 4096, n % 2 ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) break;
            maps[n++] = p;
        }
        printf("  ...%ld mappings taken (vm.max_map_count %ld)\n", n, max_maps);
        CUstream s;
        CUresult r = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
        printf("  cuStreamCreate with no mapping left: %s\n", name_of(r));
        if (r == CUDA_SUCCESS) CHECK(cuStreamDestroy(s));
        else expect("cuStreamCreate with no mapping left", r, CUDA_ERROR_OUT_OF_MEMORY);
        CUdeviceptr d;
        r = cuMemAlloc(&d, 64 << 20);
        printf("  cuMemAlloc(64 MiB) with no mapping left: %s\n", name_of(r));
        if (r == CUDA_SUCCESS) CHECK(cuMemFree(d));
        else expect("cuMemAlloc(64 MiB) with no mapping left", r, CUDA_ERROR_OUT_OF_MEMORY);
        CUdeviceptr small;
        r = cuMemAlloc(&small, 64);
        printf("  cuMemAlloc(64) with no mapping left: %s\n", name_of(r));
        if (r == CUDA_SUCCESS) CHECK(cuMemFree(small));
        else expect("cuMemAlloc(64) with no mapping left", r, CUDA_ERROR_OUT_OF_MEMORY);
        /* A launch may succeed or fail; it may not crash. */
        unsigned long long off = 0;
        void *args[] = {&buf, &off};
        printf("  a launch with no mapping left: %s\n", name_of(run(&c, "store", 64, 256, args)));
        printf("  a launch of a kernel with barriers: %s\n", name_of(run(&c, "store_after_barrier", 4, 64, args)));
        while (n > 0) munmap(maps[--n], 4096);
        free(maps);
        CHECK(cuCtxDestroy(c.ctx));
        Ctx again = open_ctx();
        expect("vecadd once the mappings are returned, verified", vecadd(&again, 1 << 20), CUDA_SUCCESS);
        CHECK(cuCtxDestroy(again.ctx));
    }

    if (wanted("fresh")) {
        Ctx fresh = open_ctx();
        expect("vecadd in a new context, verified", vecadd(&fresh, 1 << 20), CUDA_SUCCESS);
        CHECK(cuCtxDestroy(fresh.ctx));
    }

    if (failures) {
        printf("%d FAILED\n", failures);
        return 1;
    }
    printf("ALL VERIFIED\n");
    return 0;
}
