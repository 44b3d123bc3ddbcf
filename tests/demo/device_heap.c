/* The device heap through the driver: its size set with cuCtxSetLimit (1 MiB here), 64 threads that
 * each malloc 32 KiB and keep it (the first 32 get memory, the rest null, as the heap is full), a
 * second launch that frees what the first took, the size fixed once a kernel has used the heap, a
 * free of a pointer the heap never gave out (the launch fails, the process lives), and the heap made
 * again with the next context. */
#include "driver_util.h"
#include <stdint.h>

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

/* Loads the heap kernels in a fresh context, with a heap of `heap` bytes. */
static CUmodule load(size_t heap) {
    CHECK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, heap));
    size_t got = 0;
    CHECK(cuCtxGetLimit(&got, CU_LIMIT_MALLOC_HEAP_SIZE));
    ASSERT(got == heap);
    CUmodule m;
    CHECK(cuModuleLoadData(&m, PTX));
    return m;
}

/* Runs `take` (each of 64 threads mallocs 32 KiB) and counts the threads that got memory, which
 * is 16-byte aligned. */
static int take(CUmodule m, CUdeviceptr ptrs, uint64_t *p) {
    void *args[] = {&ptrs};
    launch_block(m, "take", 64, 1, args);
    CHECK(cuMemcpyDtoH(p, ptrs, 64 * 8));
    int got = 0;
    for (int i = 0; i < 64; i++) {
        ASSERT(p[i] % 16 == 0);
        got += p[i] != 0;
    }
    return got;
}

int main(void) {
    CUcontext ctx = context_on_device0();
    CUmodule m = load(1 << 20);
    CUdeviceptr ptrs;
    CHECK(cuMemAlloc(&ptrs, 64 * 8));
    void *args[] = {&ptrs};
    uint64_t p[64];
    int got = take(m, ptrs, p);
    ASSERT(got == 32);
    printf("64 mallocs of 32 KiB in a 1 MiB heap: %d get memory, the rest null\n", got);
    launch_block(m, "give_back", 64, 1, args);
    got = take(m, ptrs, p);
    ASSERT(got == 32);
    printf("freed and taken again: %d\n", got);
    EXPECT(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 2 << 20), CUDA_ERROR_INVALID_VALUE);
    printf("the heap's size is fixed once a kernel has used it\n");

    /* A free of memory the heap did not give out: the device buffer's own address. */
    for (int i = 0; i < 64; i++) p[i] = ptrs;
    CHECK(cuMemcpyHtoD(ptrs, p, sizeof p));
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, m, "give_back"));
    CHECK(cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    printf("free of a pointer malloc did not return: CUDA_ERROR_ILLEGAL_ADDRESS\n");
    CHECK(cuCtxDestroy(ctx));

    /* The last context is gone: the next one gets a fresh heap, whose size may be set again. */
    ctx = context_on_device0();
    m = load(2 << 20);
    CHECK(cuMemAlloc(&ptrs, 64 * 8));
    got = take(m, ptrs, p);
    ASSERT(got == 64);
    printf("a new context's 2 MiB heap: all %d get memory\n", got);
    CHECK(cuCtxDestroy(ctx));
    printf("DEVICE HEAP VERIFIED\n");
    return 0;
}
