/* Stream memory operations: a stream waits on a flag that another stream, the host or a batch sets,
 * with each condition (GEQ with wrap-around, EQ, AND, NOR) in 32 and 64 bits; writes, atomic
 * reductions and barriers in cuStreamBatchMemOp; capture into a graph (one batch-mem-op node), and
 * explicit batch-mem-op nodes;
 * the errors a bad address, width or flag gives; and a context destroyed while a wait can never be
 * satisfied (the destruction ends it instead of hanging). */
#include "driver_util.h"
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

static volatile uint32_t *host_flag;

static void *release_later(void *arg) {
    (void)arg;
    usleep(20000);
    *host_flag = 3;
    return NULL;
}

int main(void) {
    CUcontext ctx = context_on_device0();
    CUdevice dev;
    CHECK(cuCtxGetDevice(&dev));
    int wide = 0, nor = 0;
    CHECK(cuDeviceGetAttribute(&wide, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev));
    CHECK(cuDeviceGetAttribute(&nor, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, dev));
    ASSERT(wide == 1 && nor == 1);

    CUstream a, b;
    CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CUdeviceptr words;
    CHECK(cuMemAlloc(&words, 64));
    CHECK(cuMemsetD8(words, 0, 64));
    CUdeviceptr flag = words, out = words + 8, flag64 = words + 16, sum = words + 24;

    /* Stream a waits for b's write, then writes itself; a memset queued on b after the write
     * shows the wait did not let a run early. */
    CHECK(cuStreamWaitValue32(a, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    CHECK(cuStreamWriteValue32(a, out, 42, CU_STREAM_WRITE_VALUE_DEFAULT));
    usleep(20000);
    uint32_t v = 7;
    CHECK(cuMemcpyDtoH(&v, out, 4));
    ASSERT(v == 0);
    CHECK(cuStreamWriteValue32(b, flag, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
    CHECK(cuStreamSynchronize(a));
    CHECK(cuMemcpyDtoH(&v, out, 4));
    ASSERT(v == 42);
    printf("wait EQ released by another stream's write: out = %u\n", v);

    /* GEQ wraps: 1 is at or past 0xfffffffe. 64-bit AND and NOR. */
    CHECK(cuStreamWaitValue32(a, flag, 0xfffffffeu, CU_STREAM_WAIT_VALUE_GEQ));
    CHECK(cuStreamWriteValue64(b, flag64, 0x100000000ull, 0));
    CHECK(cuStreamWaitValue64(a, flag64, 0x300000000ull, CU_STREAM_WAIT_VALUE_AND));
    CHECK(cuStreamWaitValue64(a, flag64, 0xfffffffdffffffffull, CU_STREAM_WAIT_VALUE_NOR));
    /* cuda.h: "This flag is not supported in the v2 API" (an H200 answers INVALID_VALUE). */
    EXPECT(cuStreamWriteValue32(a, out, 43, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuStreamWriteValue32(a, out, 43, 0));
    CHECK(cuStreamSynchronize(a));
    CHECK(cuMemcpyDtoH(&v, out, 4));
    ASSERT(v == 43);
    printf("GEQ (wrapping), 64-bit AND and NOR: out = %u\n", v);

    /* The host releases a stream through registered host memory. */
    uint32_t *pinned;
    CHECK(cuMemAllocHost((void **)&pinned, 4));
    host_flag = pinned;
    *host_flag = 0;
    CUdeviceptr dflag;
    CHECK(cuMemHostGetDevicePointer(&dflag, pinned, 0));
    CHECK(cuStreamWaitValue32(a, dflag, 2, CU_STREAM_WAIT_VALUE_GEQ));
    CHECK(cuStreamWriteValue32(a, out, 44, 0));
    pthread_t t;
    pthread_create(&t, NULL, release_later, NULL);
    CHECK(cuStreamSynchronize(a));
    pthread_join(t, NULL);
    CHECK(cuMemcpyDtoH(&v, out, 4));
    ASSERT(v == 44);
    printf("wait on pinned host memory released by a host thread: out = %u\n", v);

    /* A batch: two atomic adds and an OR (64 bits), a barrier, a 32-bit write, then a wait on it. */
    CUstreamBatchMemOpParams ops[6];
    memset(ops, 0, sizeof ops);
    for (int i = 0; i < 3; i++) {
        ops[i].atomicReduction.operation = CU_STREAM_MEM_OP_ATOMIC_REDUCTION;
        ops[i].atomicReduction.reductionOp = i < 2 ? CU_STREAM_ATOMIC_REDUCTION_OP_ADD : CU_STREAM_ATOMIC_REDUCTION_OP_OR;
        ops[i].atomicReduction.dataType = CU_STREAM_ATOMIC_REDUCTION_UNSIGNED_64;
        ops[i].atomicReduction.address = sum;
        ops[i].atomicReduction.value = i < 2 ? 0x7fffffffull + i : 0x1000000000ull;
    }
    ops[3].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    ops[3].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_GPU;
    ops[4].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[4].writeValue.address = out;
    ops[4].writeValue.value = 45;
    ops[5].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[5].waitValue.address = out;
    ops[5].waitValue.value = 45;
    ops[5].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
    CHECK(cuStreamBatchMemOp(a, 6, ops, 0));
    CHECK(cuStreamSynchronize(a));
    uint64_t s64 = 0;
    CHECK(cuMemcpyDtoH(&s64, sum, 8));
    ASSERT(s64 == 0x10fffffffful);
    printf("batch: atomic adds and OR give %#llx\n", (unsigned long long)s64);

    /* Errors. */
    EXPECT(cuStreamWriteValue32(a, out + 2, 1, 0), CUDA_ERROR_INVALID_VALUE);     /* misaligned */
    EXPECT(cuStreamWaitValue64(a, flag + 4, 1, 0), CUDA_ERROR_INVALID_VALUE);     /* 4-aligned only */
    EXPECT(cuStreamWriteValue32(a, words + 64, 1, 0), CUDA_ERROR_INVALID_VALUE);  /* past the end */
    EXPECT(cuStreamWaitValue32(a, flag, 1, 7), CUDA_ERROR_INVALID_VALUE);         /* no such condition */
    EXPECT(cuStreamWriteValue32(a, out, 1, 2), CUDA_ERROR_INVALID_VALUE);         /* no such flag */
    EXPECT(cuStreamBatchMemOp(a, 0, ops, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuStreamBatchMemOp(a, 1, ops, 1), CUDA_ERROR_INVALID_VALUE);
    printf("bad addresses, widths, flags and counts: CUDA_ERROR_INVALID_VALUE\n");

    /* Captured: one batch-mem-op node, which writes when the graph runs. */
    CHECK(cuStreamBeginCapture(b, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuStreamWriteValue32(b, out, 46, 0));
    CUgraph g;
    CHECK(cuStreamEndCapture(b, &g));
    size_t n = 0;
    CHECK(cuGraphGetNodes(g, NULL, &n));
    ASSERT(n == 1);
    CUgraphNode node;
    CHECK(cuGraphGetNodes(g, &node, &n));
    CUgraphNodeType type;
    CHECK(cuGraphNodeGetType(node, &type));
    ASSERT(type == CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);
    CUgraphExec exec;
    CHECK(cuGraphInstantiate(&exec, g, 0));
    CHECK(cuGraphLaunch(exec, b));
    CHECK(cuStreamSynchronize(b));
    CHECK(cuMemcpyDtoH(&v, out, 4));
    ASSERT(v == 46);
    printf("captured write: a batch-mem-op node; out = %u\n", v);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(g));

    /* Captured across two streams: a waits for a flag that b's branch sets (with a memset). The wait
     * is captured first, and the graph runs its nodes one at a time: the memset must not be stuck
     * behind it. */
    CUevent fork, join;
    CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr gate = words + 32;
    CHECK(cuMemsetD32(gate, 0, 1));
    CHECK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuEventRecord(fork, a));
    CHECK(cuStreamWaitEvent(b, fork, 0));
    CHECK(cuStreamWaitValue32(a, gate, 5, CU_STREAM_WAIT_VALUE_EQ));
    CHECK(cuMemsetD32Async(gate, 5, 1, b));
    CHECK(cuEventRecord(join, b));
    CHECK(cuStreamWaitEvent(a, join, 0));
    CHECK(cuStreamEndCapture(a, &g));
    CHECK(cuGraphInstantiate(&exec, g, 0));
    CHECK(cuGraphLaunch(exec, a));
    CHECK(cuStreamSynchronize(a));
    printf("captured wait and the memset of another branch that releases it: the graph finishes\n");
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(g));

    /* An explicit batch-mem-op node: its parameters read back, set on the node and on the
     * executable graph. */
    CUstreamBatchMemOpParams w;
    memset(&w, 0, sizeof w);
    w.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    w.writeValue.address = out;
    w.writeValue.value = 47;
    CUDA_BATCH_MEM_OP_NODE_PARAMS np = {ctx, 1, &w, 0};
    CUgraph g2;
    CHECK(cuGraphCreate(&g2, 0));
    CUgraphNode wn;
    CHECK(cuGraphAddBatchMemOpNode(&wn, g2, NULL, 0, &np));
    CUDA_BATCH_MEM_OP_NODE_PARAMS got;
    CHECK(cuGraphBatchMemOpNodeGetParams(wn, &got));
    ASSERT(got.count == 1 && got.paramArray[0].writeValue.value == 47 && got.paramArray[0].writeValue.address == out);
    w.writeValue.value = 48;
    CHECK(cuGraphBatchMemOpNodeSetParams(wn, &np));
    CHECK(cuGraphInstantiate(&exec, g2, 0));
    CHECK(cuGraphLaunch(exec, b));
    CHECK(cuStreamSynchronize(b));
    CHECK(cuMemcpyDtoH(&v, out, 4));
    ASSERT(v == 48);
    w.writeValue.value = 49;
    CHECK(cuGraphExecBatchMemOpNodeSetParams(exec, wn, &np));
    CHECK(cuGraphLaunch(exec, b));
    CHECK(cuStreamSynchronize(b));
    CHECK(cuMemcpyDtoH(&v, out, 4));
    ASSERT(v == 49);
    w.writeValue.address = out + 1;
    EXPECT(cuGraphBatchMemOpNodeSetParams(wn, &np), CUDA_ERROR_INVALID_VALUE);
    printf("explicit batch-mem-op node: set, read back, updated in the executable graph; out = %u\n", v);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(g2));

    /* A wait nothing will satisfy: destroying the context ends it. */
    CHECK(cuStreamWaitValue32(a, flag, 99, CU_STREAM_WAIT_VALUE_EQ));
    CHECK(cuCtxDestroy(ctx));
    printf("context destroyed under a wait that could never end\n");
    printf("MEMOPS VERIFIED\n");
    return 0;
}
