/* The device heap through the driver: its size set with cuCtxSetLimit (1 MiB asked, which reads back
 * as 4 MiB, an H200's smallest heap), 256 threads that each malloc 32 KiB and keep it (128 get
 * memory, the rest null, as the heap is full; an H200's allocator, whose blocks carry overhead, gives
 * 79), a second launch that frees what the first took, the size fixed once a kernel has used the
 * heap, a free of a pointer the heap never gave out (the launch fails and the process lives; an H200
 * lets it pass unnoticed), and the heap made again with the next context. */
#include "driver_util.h"
#include <stdint.h>

enum { THREADS = 256 };

static const char *PTX =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".extern .func (.param .b64 r) malloc (.param .b64 n);\n"
    ".extern .func free (.param .b64 p);\n"
    ".visible .entry take(.param .u64 ptrs) {\n"
    "  .reg .b32 %r<2>; .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [ptrs]; mov.u32 %r1, %tid.x;\n"
    "  { .param .b64 n; st.param.b64 [n], 32768; .param .b64 r; call.uni (r), malloc, (n); ld.param.b64 %rd2, [r]; }\n"
    "  mul.wide.u32 %rd3, %r1, 8; add.s64 %rd4, %rd1, %rd3; st.global.u64 [%rd4], %rd2;\n"
    "  ret;\n}\n"
    ".visible .entry give_back(.param .u64 ptrs) {\n"
    "  .reg .b32 %r<2>; .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [ptrs]; mov.u32 %r1, %tid.x;\n"
    "  mul.wide.u32 %rd3, %r1, 8; add.s64 %rd4, %rd1, %rd3; ld.global.u64 %rd2, [%rd4];\n"
    "  { .param .b64 p; st.param.b64 [p], %rd2; call.uni free, (p); }\n"
    "  ret;\n}\n";

/* Loads the heap kernels in a fresh context, with a heap of `heap` bytes asked for, which reads back
 * as `reads`. */
static CUmodule load(size_t heap, size_t reads) {
    CHECK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, heap));
    size_t got = 0;
    CHECK(cuCtxGetLimit(&got, CU_LIMIT_MALLOC_HEAP_SIZE));
    SHOW("a heap limit of %zu reads back as %zu\n", heap, got);
    ASSERT(got == reads);
    CUmodule m;
    CHECK(cuModuleLoadData(&m, PTX));
    return m;
}

/* Runs `take` (each of THREADS threads mallocs 32 KiB) and counts the threads that got memory, which
 * is 16-byte aligned. */
static int take(CUmodule m, CUdeviceptr ptrs, uint64_t *p) {
    void *args[] = {&ptrs};
    launch_block(m, "take", THREADS, 1, args);
    CHECK(cuMemcpyDtoH(p, ptrs, THREADS * 8));
    int got = 0;
    for (int i = 0; i < THREADS; i++) {
        ASSERT(p[i] % 16 == 0);
        got += p[i] != 0;
    }
    return got;
}

int main(void) {
    CUcontext ctx = context_on_device0();
    CUmodule m = load(1 << 20, 4 << 20);
    CUdeviceptr ptrs;
    CHECK(cuMemAlloc(&ptrs, THREADS * 8));
    void *args[] = {&ptrs};
    uint64_t p[THREADS];
    int got = take(m, ptrs, p);
    SHOW("%d of %d mallocs of 32 KiB got memory\n", got, THREADS);
    ASSERT(got == 128);
    printf("%d mallocs of 32 KiB in a 4 MiB heap: %d get memory, the rest null\n", THREADS, got);
    launch_block(m, "give_back", THREADS, 1, args);
    got = take(m, ptrs, p);
    ASSERT(got == 128);
    printf("freed and taken again: %d\n", got);
    EXPECT(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 2 << 20), CUDA_ERROR_INVALID_VALUE);
    printf("the heap's size is fixed once a kernel has used it\n");

    /* A free of memory the heap did not give out: the device buffer's own address. */
    for (int i = 0; i < THREADS; i++) p[i] = ptrs;
    CHECK(cuMemcpyHtoD(ptrs, p, sizeof p));
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, m, "give_back"));
    CHECK(cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    printf("free of a pointer malloc did not return: CUDA_ERROR_ILLEGAL_ADDRESS\n");
    CHECK(cuCtxDestroy(ctx));

    /* The last context is gone: the next one gets a fresh heap, whose size may be set again. */
    ctx = context_on_device0();
    m = load(8 << 20, 8 << 20);
    CHECK(cuMemAlloc(&ptrs, THREADS * 8));
    got = take(m, ptrs, p);
    ASSERT(got == THREADS);
    printf("a new context's 8 MiB heap: all %d get memory\n", got);
    CHECK(cuCtxDestroy(ctx));
    printf("DEVICE HEAP VERIFIED\n");
    return 0;
}
