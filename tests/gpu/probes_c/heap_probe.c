/* How much a GPU's device heap holds: for heap limits of 1 and 4 MiB and allocation sizes from 16 B
 * to 1 MiB, a grid of threads that each malloc `size` bytes and keep them, and the count that got
 * memory (each case in a fresh context, since a heap's size is fixed once a kernel has used it). Also
 * the default limit and what a limit reads back as. ptx-jit gives exactly floor(limit / block) to a
 * 16-byte-aligned bump allocator (tests/demo/device_heap.c); an H200 gave all 64 of 64 x 32 KiB in a
 * 1 MiB heap. Usage: heap_probe */
#include "../../demo/driver_util.h"
#include <stdint.h>

static const char *PTX =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".extern .func (.param .b64 r) malloc (.param .b64 n);\n"
    ".visible .entry take(.param .u64 ptrs, .param .u64 size) {\n"
    "  .reg .b32 %r<5>; .reg .b64 %rd<6>;\n"
    "  ld.param.u64 %rd1, [ptrs]; ld.param.u64 %rd5, [size];\n"
    "  mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.u32 %r4, %r2, %r3, %r1;\n"
    "  { .param .b64 n; st.param.b64 [n], %rd5; .param .b64 r; call.uni (r), malloc, (n); ld.param.b64 %rd2, [r]; }\n"
    "  mul.wide.u32 %rd3, %r4, 8; add.s64 %rd4, %rd1, %rd3; st.global.u64 [%rd4], %rd2;\n"
    "  ret;\n}\n";

static void probe(size_t heap, uint64_t size) {
    CUcontext ctx = context_on_device0();
    CHECK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, heap));
    size_t got_limit = 0;
    CHECK(cuCtxGetLimit(&got_limit, CU_LIMIT_MALLOC_HEAP_SIZE));
    CUmodule m;
    CHECK(cuModuleLoadData(&m, PTX));
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, m, "take"));
    unsigned n = (unsigned)(4 * heap / size);
    if (n > (1u << 20)) n = 1u << 20;
    n = (n + 255) / 256 * 256;
    CUdeviceptr ptrs;
    CHECK(cuMemAlloc(&ptrs, n * 8));
    void *args[] = {&ptrs, &size};
    CHECK(cuLaunchKernel(k, n / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CUresult r = cuCtxSynchronize();
    uint64_t *p = malloc(n * 8);
    unsigned ok = 0, aligned16 = 0;
    if (r == CUDA_SUCCESS && cuMemcpyDtoH(p, ptrs, n * 8) == CUDA_SUCCESS)
        for (unsigned i = 0; i < n; i++) {
            ok += p[i] != 0;
            aligned16 += p[i] != 0 && p[i] % 16 == 0;
        }
    printf("limit %zu (reads back %zu), %u threads x malloc(%llu): launch %d, %u got memory (%u 16-byte aligned)\n",
           heap, got_limit, n, (unsigned long long)size, (int)r, ok, aligned16);
    free(p);
    CHECK(cuCtxDestroy(ctx));
}

int main(void) {
    CUcontext ctx = context_on_device0();
    size_t def = 0;
    CHECK(cuCtxGetLimit(&def, CU_LIMIT_MALLOC_HEAP_SIZE));
    printf("default heap limit %zu\n", def);
    CHECK(cuCtxDestroy(ctx));
    const size_t limits[] = {0, 1, 4 << 20, (4 << 20) + 1, 5 << 20, 9 << 20, (64 << 20) + 3, 1ull << 32};
    for (int i = 0; i < 8; i++) {
        ctx = context_on_device0();
        size_t back = 0;
        CUresult r = cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, limits[i]);
        CHECK(cuCtxGetLimit(&back, CU_LIMIT_MALLOC_HEAP_SIZE));
        printf("limit %zu: set %d, reads back %zu\n", limits[i], (int)r, back);
        CHECK(cuCtxDestroy(ctx));
    }
    const size_t heaps[] = {1 << 20, 4 << 20};
    const uint64_t sizes[] = {16, 1000, 1024, 32768, 1 << 20};
    for (int h = 0; h < 2; h++)
        for (int s = 0; s < 5; s++) probe(heaps[h], sizes[s]);
    return 0;
}
