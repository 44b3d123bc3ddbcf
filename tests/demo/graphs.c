/* CUDA graphs through the driver API: stream capture across two streams, explicit construction, the
 * errors capture gives, and user objects that graphs hold. Prints GRAPHS VERIFIED or stops at the first difference.
 *
 * 1. Capture: on stream a, a memset, then a fork to stream b through an event (b scales one half
 *    while a scales the other), a join back through a second event, a host function, and a copy.
 *    The graph has the captured nodes and no more; each of three launches runs them all, in order:
 *    the values grow launch by launch exactly as the sequence says.
 * 2. Explicit graph: a diamond (memset -> two kernels -> kernel), launched twice, then with new
 *    kernel parameters (cuGraphExecKernelNodeSetParams) and after an update from a graph of the
 *    same shape (cuGraphExecUpdate; one of another shape is refused); its node types, roots and
 *    dependencies as the API reports them; cuGraphDebugDotPrint writes every node.
 *    An event record node, recorded at launch: another stream's later wait waits for it.
 * 3. Errors: synchronising a capturing stream (refused, and the capture is invalidated), ending a
 *    capture on a stream that did not begin it, a stream that forked and never rejoined, a capture
 *    on the legacy stream, and a cycle refused at instantiation.
 * 4. Graph memory (allocation and free nodes, captured and explicit), edges, capture dependencies.
 * 5. Conditional nodes (while, if/else, switch) steered by kernels through cudaGraphSetConditional;
 *    child graphs and clones; external event nodes in a capture.
 * Usage: graphs DOT_FILE */
#include "driver_util.h"
#include <string.h>
#include <unistd.h>

static const char *PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    /* scale(p, n, k): p[i] = p[i] * k + 1 for i < n */
    ".visible .entry scale(.param .u64 p, .param .u32 n, .param .u32 k) {\n"
    " .reg .u32 %r<8>; .reg .u64 %rd<4>; .reg .pred %q;\n"
    " ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [n]; ld.param.u32 %r2, [k];\n"
    " mov.u32 %r3, %tid.x; mov.u32 %r4, %ctaid.x; mov.u32 %r5, %ntid.x; mad.lo.u32 %r3, %r4, %r5, %r3;\n"
    " setp.ge.u32 %q, %r3, %r1; @%q ret;\n"
    " mul.wide.u32 %rd2, %r3, 4; add.u64 %rd3, %rd1, %rd2;\n"
    " ld.global.u32 %r6, [%rd3]; mad.lo.u32 %r6, %r6, %r2, 1; st.global.u32 [%rd3], %r6; ret;\n}\n"
    /* add(dst, a, b, n): dst[i] = a[i] + b[i] */
    ".visible .entry add(.param .u64 d, .param .u64 a, .param .u64 b, .param .u32 n) {\n"
    " .reg .u32 %r<8>; .reg .u64 %rd<8>; .reg .pred %q;\n"
    " ld.param.u64 %rd1, [d]; ld.param.u64 %rd2, [a]; ld.param.u64 %rd3, [b]; ld.param.u32 %r1, [n];\n"
    " mov.u32 %r3, %tid.x; setp.ge.u32 %q, %r3, %r1; @%q ret;\n"
    " mul.wide.u32 %rd4, %r3, 4; add.u64 %rd5, %rd2, %rd4; add.u64 %rd6, %rd3, %rd4; add.u64 %rd7, %rd1, %rd4;\n"
    " ld.global.u32 %r4, [%rd5]; ld.global.u32 %r5, [%rd6]; add.u32 %r6, %r4, %r5; st.global.u32 [%rd7], %r6; ret;\n}\n";

/* countdown(h, p): *p -= 1, and the conditional handle h gets the new *p (the while loop ends at 0). */
static const char *COND_PTX =
    ".version 8.4\n.target sm_90\n.address_size 64\n"
    ".extern .func cudaGraphSetConditional(.param .b64 h, .param .b32 v);\n"
    ".visible .entry countdown(.param .u64 h, .param .u64 p) {\n"
    " .reg .u64 %rd<3>; .reg .u32 %r<2>;\n"
    " ld.param.u64 %rd1, [h]; ld.param.u64 %rd2, [p];\n"
    " ld.global.u32 %r1, [%rd2]; sub.u32 %r1, %r1, 1; st.global.u32 [%rd2], %r1;\n"
    " { .param .b64 a; .param .b32 b; st.param.b64 [a], %rd1; st.param.b32 [b], %r1;\n"
    "   call cudaGraphSetConditional, (a, b); }\n"
    " ret;\n}\n";

#define N 256
static int host_calls;
static void CUDA_CB count_call(void *data) { ++*(int *)data; }
static volatile int slept;
static void CUDA_CB sleep_then_mark(void *data) {
    (void)data;
    usleep(50000);
    slept = 1;
}
static void CUDA_CB read_mark(void *data) { *(int *)data = slept; }
static void CUDA_CB count_destroy(void *data) { ++*(volatile int *)data; }
/* Two host nodes of independent branches, each raising its own flag and waiting (up to 2 s) for the
 * other's: both see the other's flag only if the branches run at once. */
static volatile int flags[2], met[2];
static void CUDA_CB rendezvous(void *data) {
    int me = (int)(size_t)data;
    flags[me] = 1;
    for (int i = 0; i < 2000 && !flags[1 - me]; i++) usleep(1000);
    met[me] = flags[1 - me];
}

static void launch_scale(CUfunction f, CUstream s, CUdeviceptr p, unsigned n, unsigned k) {
    void *args[] = {&p, &n, &k};
    CHECK(cuLaunchKernel(f, (n + 63) / 64, 1, 1, 64, 1, 1, 0, s, args, NULL));
}

static CUgraphNode kernel_node(CUgraph g, CUfunction f, const CUgraphNode *deps, size_t n, void **args,
                               unsigned threads) {
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.func = f;
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = threads;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = args;
    CUgraphNode node;
    CHECK(cuGraphAddKernelNode(&node, g, deps, n, &p));
    return node;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: graphs DOT_FILE\n");
        return 2;
    }
    context_on_device0();
    CUmodule m;
    CUfunction scale, add;
    CHECK(cuModuleLoadData(&m, PTX));
    CHECK(cuModuleGetFunction(&scale, m, "scale"));
    CHECK(cuModuleGetFunction(&add, m, "add"));
    CUdeviceptr buf, out;
    CHECK(cuMemAlloc(&buf, N * 4));
    CHECK(cuMemAlloc(&out, N * 4));
    unsigned host[N];

    /* ---- 1. capture across two streams ---- */
    CUstream a, b;
    CUevent fork, join;
    CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CHECK(cuMemsetD32(buf, 0, N));
    CHECK(cuMemsetD32(out, 0, N));
    CHECK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus status;
    CHECK(cuStreamIsCapturing(a, &status));
    ASSERT(status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    /* A synchronous memset meanwhile runs (an H200's answer): the capturing stream is non-blocking. */
    CHECK(cuMemsetD32(out, 0, N));
    CHECK(cuStreamIsCapturing(b, &status));
    ASSERT(status == CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK(cuMemsetD32Async(buf, 2, N, a));
    CHECK(cuEventRecord(fork, a));
    CHECK(cuStreamWaitEvent(b, fork, 0));
    CHECK(cuStreamIsCapturing(b, &status));
    ASSERT(status == CU_STREAM_CAPTURE_STATUS_ACTIVE); /* b joined the capture */
    launch_scale(scale, a, buf, N / 2, 3);             /* first half: 2*3+1 = 7 */
    launch_scale(scale, b, buf + N / 2 * 4, N / 2, 5); /* second half: 2*5+1 = 11 */
    CHECK(cuEventRecord(join, b));
    CHECK(cuStreamWaitEvent(a, join, 0));
    CHECK(cuLaunchHostFunc(a, count_call, &host_calls));
    CHECK(cuMemcpyDtoDAsync(out, buf, N * 4, a));
    launch_scale(scale, a, out, N, 2); /* out = buf * 2 + 1 */
    cuuint64_t id;
    CUgraph captured;
    const CUgraphNode *deps;
    size_t ndeps;
    CHECK(cuStreamGetCaptureInfo(a, &status, &id, &captured, &deps, NULL, &ndeps));
    ASSERT(status == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && ndeps == 1);
    CUgraph g;
    CHECK(cuStreamEndCapture(a, &g));
    /* Nothing ran: captured work only became nodes. */
    CHECK(cuMemcpyDtoH(host, buf, N * 4));
    for (int i = 0; i < N; i++) ASSERT(host[i] == 0);
    CHECK(cuMemcpyDtoH(host, out, N * 4));
    for (int i = 0; i < N; i++) ASSERT(host[i] == 0);
    ASSERT(g == captured);
    CHECK(cuStreamIsCapturing(a, &status));
    ASSERT(status == CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK(cuStreamIsCapturing(b, &status));
    ASSERT(status == CU_STREAM_CAPTURE_STATUS_NONE);
    size_t count = 0;
    CHECK(cuGraphGetNodes(g, NULL, &count));
    ASSERT(count == 6); /* memset, two kernels, host, copy, kernel: events are edges, not nodes */
    ASSERT(host_calls == 0);
    CUgraphExec exec;
    CHECK(cuGraphInstantiate(&exec, g, 0));
    for (int launch = 1; launch <= 3; launch++) {
        CHECK(cuGraphLaunch(exec, a));
        CHECK(cuStreamSynchronize(a));
        ASSERT(host_calls == launch);
        CHECK(cuMemcpyDtoH(host, buf, N * 4));
        for (int i = 0; i < N; i++) ASSERT(host[i] == (i < N / 2 ? 7u : 11u));
        CHECK(cuMemcpyDtoH(host, out, N * 4));
        for (int i = 0; i < N; i++) ASSERT(host[i] == (i < N / 2 ? 15u : 23u));
    }
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(g));
    printf("capture: 6 nodes, 3 launches verified\n");

    /* ---- 2. an explicit diamond ---- */
    CUgraph d;
    CHECK(cuGraphCreate(&d, 0));
    CUDA_MEMSET_NODE_PARAMS ms;
    memset(&ms, 0, sizeof ms);
    ms.dst = buf;
    ms.value = 1;
    ms.elementSize = 4;
    ms.width = N;
    ms.height = 1;
    CUgraphNode fill, left, right, sum;
    CHECK(cuGraphAddMemsetNode(&fill, d, NULL, 0, &ms, NULL));
    unsigned n = N, k3 = 3, k10 = 10;
    CUdeviceptr lo = buf, hi = out;
    void *args_left[] = {&lo, &n, &k3};   /* buf = buf*3+1 */
    void *args_right[] = {&hi, &n, &k10}; /* out = out*10+1 (out holds the capture's results) */
    left = kernel_node(d, scale, &fill, 1, args_left, N);
    right = kernel_node(d, scale, NULL, 0, args_right, N);
    CUgraphNode both[] = {left, right};
    void *args_sum[] = {&out, &buf, &out, &n}; /* out = buf + out */
    sum = kernel_node(d, add, both, 2, args_sum, N);
    /* Changing the arguments after the node was made changes nothing: they were copied. */
    k3 = 1000;
    /* A node gives back its own copy of the arguments; the usual get, change, set sequence works. */
    CUDA_KERNEL_NODE_PARAMS got;
    CHECK(cuGraphKernelNodeGetParams(right, &got));
    ASSERT(got.func == scale && got.blockDimX == N && got.kernelParams != NULL);
    ASSERT(*(unsigned *)got.kernelParams[1] == N && *(unsigned *)got.kernelParams[2] == 10);
    CHECK(cuGraphKernelNodeSetParams(right, &got));
    CUgraphNodeType t;
    CHECK(cuGraphNodeGetType(fill, &t));
    ASSERT(t == CU_GRAPH_NODE_TYPE_MEMSET);
    CHECK(cuGraphNodeGetType(sum, &t));
    ASSERT(t == CU_GRAPH_NODE_TYPE_KERNEL);
    CUgraphNode roots[4];
    size_t nroots = 4;
    CHECK(cuGraphGetRootNodes(d, roots, &nroots));
    ASSERT(nroots == 2 && ((roots[0] == fill && roots[1] == right) || (roots[0] == right && roots[1] == fill)));
    CUgraphNode sum_deps[4];
    size_t nsum = 4;
    CHECK(cuGraphNodeGetDependencies(sum, sum_deps, NULL, &nsum));
    ASSERT(nsum == 2);
    CHECK(cuGraphDebugDotPrint(d, argv[1], 0));
    /* Instantiated with parameters (as cuda.core's graph builder does): uploaded to a stream. */
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD, b, NULL, CUDA_GRAPH_INSTANTIATE_ERROR};
    CHECK(cuGraphInstantiateWithParams(&exec, d, &ip));
    ASSERT(ip.result_out == CUDA_GRAPH_INSTANTIATE_SUCCESS && ip.hErrNode_out == NULL);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphInstantiate(&exec, d, 0));
    unsigned expect_out[N];
    CHECK(cuMemcpyDtoH(expect_out, out, N * 4));
    for (int launch = 0; launch < 2; launch++) {
        CHECK(cuGraphLaunch(exec, NULL));
        CHECK(cuCtxSynchronize());
        for (int i = 0; i < N; i++) expect_out[i] = 4 + (expect_out[i] * 10 + 1);
        CHECK(cuMemcpyDtoH(host, out, N * 4));
        for (int i = 0; i < N; i++) ASSERT(host[i] == expect_out[i]);
    }
    /* Later launches of the executable graph take new kernel parameters (the graph keeps its own). */
    unsigned k7 = 7;
    void *args_right7[] = {&hi, &n, &k7};
    CUDA_KERNEL_NODE_PARAMS seven = got;
    seven.kernelParams = args_right7;
    CHECK(cuGraphExecKernelNodeSetParams(exec, right, &seven));
    CHECK(cuGraphLaunch(exec, NULL));
    CHECK(cuCtxSynchronize());
    for (int i = 0; i < N; i++) expect_out[i] = 4 + (expect_out[i] * 7 + 1);
    CHECK(cuMemcpyDtoH(host, out, N * 4));
    for (int i = 0; i < N; i++) ASSERT(host[i] == expect_out[i]);
    /* An update from a graph of the same shape takes all its work: memset 2, both scales by 1. */
    CUgraph d2;
    CHECK(cuGraphCreate(&d2, 0));
    ms.value = 2;
    unsigned k1 = 1;
    void *args_one_lo[] = {&lo, &n, &k1}, *args_one_hi[] = {&hi, &n, &k1};
    CUgraphNode fill2, left2, right2;
    CHECK(cuGraphAddMemsetNode(&fill2, d2, NULL, 0, &ms, NULL));
    left2 = kernel_node(d2, scale, &fill2, 1, args_one_lo, N);
    right2 = kernel_node(d2, scale, NULL, 0, args_one_hi, N);
    CUgraphNode both2[] = {left2, right2};
    kernel_node(d2, add, both2, 2, args_sum, N);
    CUgraphExecUpdateResultInfo info;
    CHECK(cuGraphExecUpdate(exec, d2, &info));
    ASSERT(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
    CHECK(cuGraphLaunch(exec, NULL));
    CHECK(cuCtxSynchronize());
    for (int i = 0; i < N; i++) expect_out[i] = 3 + (expect_out[i] + 1);
    CHECK(cuMemcpyDtoH(host, out, N * 4));
    for (int i = 0; i < N; i++) ASSERT(host[i] == expect_out[i]);
    /* A graph of another shape cannot update it. */
    CUgraph lone;
    CUgraphNode only;
    CHECK(cuGraphCreate(&lone, 0));
    CHECK(cuGraphAddEmptyNode(&only, lone, NULL, 0));
    EXPECT(cuGraphExecUpdate(exec, lone, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    ASSERT(info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    CHECK(cuGraphDestroy(lone));
    CHECK(cuGraphDestroy(d2));
    CHECK(cuGraphExecDestroy(exec));
    /* A cycle cannot be instantiated. */
    CUgraphNode from[] = {sum}, to[] = {fill};
    CHECK(cuGraphAddDependencies(d, from, to, NULL, 1));
    EXPECT(cuGraphInstantiate(&exec, d, 0), CUDA_ERROR_INVALID_VALUE);
    ip.flags = 0;
    EXPECT(cuGraphInstantiateWithParams(&exec, d, &ip), CUDA_ERROR_INVALID_VALUE);
    ASSERT(ip.result_out == CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE);
    CHECK(cuGraphDestroy(d));
    printf("diamond: 4 launches verified (new parameters, an update), dot file written\n");

    /* An event record node is recorded when the launch is queued: work that waits for the event
     * afterwards, on another stream, waits for the node (which follows a slow host node). */
    CUgraph r;
    CUgraphNode slow, rec;
    CUevent done;
    CHECK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    CUDA_HOST_NODE_PARAMS hp = {sleep_then_mark, NULL};
    CHECK(cuGraphCreate(&r, 0));
    CHECK(cuGraphAddHostNode(&slow, r, NULL, 0, &hp));
    CHECK(cuGraphAddEventRecordNode(&rec, r, &slow, 1, done));
    CHECK(cuGraphInstantiate(&exec, r, 0));
    CHECK(cuGraphLaunch(exec, a));
    CHECK(cuStreamWaitEvent(b, done, 0));
    int seen = -1;
    CHECK(cuLaunchHostFunc(b, read_mark, &seen));
    CHECK(cuStreamSynchronize(b));
    ASSERT(seen == 1);
    CHECK(cuStreamSynchronize(a));
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(r));
    printf("event record node: a later wait waits for it\n");

    /* Independent branches run at once: two host nodes that wait for each other both get there. */
    CUgraph par;
    CUgraphNode meet[2];
    CHECK(cuGraphCreate(&par, 0));
    for (int k = 0; k < 2; k++) {
        CUDA_HOST_NODE_PARAMS mp = {rendezvous, (void *)(size_t)k};
        CHECK(cuGraphAddHostNode(&meet[k], par, NULL, 0, &mp));
    }
    CHECK(cuGraphInstantiate(&exec, par, 0));
    CHECK(cuGraphLaunch(exec, a));
    CHECK(cuStreamSynchronize(a));
    ASSERT(met[0] == 1 && met[1] == 1);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(par));
    printf("independent branches ran at once\n");

    /* ---- 3. what capture refuses ---- */
    CHECK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT(cuStreamSynchronize(a), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(cuStreamEndCapture(a, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    ASSERT(g == NULL);

    CHECK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(cuEventRecord(fork, a));
    CHECK(cuStreamWaitEvent(b, fork, 0));
    launch_scale(scale, b, buf, N, 1);
    /* Ending on the stream that joined fails, and the capture with it (an H200's answers). */
    EXPECT(cuStreamEndCapture(b, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    EXPECT(cuStreamEndCapture(a, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(cuStreamIsCapturing(b, &status));
    ASSERT(status == CU_STREAM_CAPTURE_STATUS_NONE);
    /* A stream that joined and never rejoined the origin (the documented code; an H200 agrees). */
    CHECK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK(cuEventRecord(fork, a));
    CHECK(cuStreamWaitEvent(b, fork, 0));
    launch_scale(scale, b, buf, N, 1);
    EXPECT(cuStreamEndCapture(a, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    CHECK(cuStreamIsCapturing(b, &status));
    ASSERT(status == CU_STREAM_CAPTURE_STATUS_NONE);
    /* A device-wide synchronise during a global-mode capture is refused, and the capture fails (an
     * H200's answers). */
    CHECK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(cuStreamEndCapture(a, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

    EXPECT(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
           CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    printf("capture errors verified\n");

    /* The streams still work as streams. */
    CHECK(cuMemsetD32Async(buf, 5, N, b));
    CHECK(cuStreamSynchronize(b));
    CHECK(cuMemcpyDtoH(host, buf, N * 4));
    ASSERT(host[0] == 5 && host[N - 1] == 5);

    /* User objects: the destructor runs, on a thread of its own, once the program, the graph and
     * the executable graph made from it have all let go. */
    static volatile int destroyed;
    CUuserObject uo;
    CHECK(cuUserObjectCreate(&uo, (void *)&destroyed, count_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    EXPECT(cuUserObjectCreate(&uo, NULL, count_destroy, 1, 0), CUDA_ERROR_INVALID_VALUE);
    CUgraph ug;
    CHECK(cuGraphCreate(&ug, 0));
    CHECK(cuGraphRetainUserObject(ug, uo, 2, 0));
    CHECK(cuGraphReleaseUserObject(ug, uo, 1));
#ifndef KEEP_GOING /* an H200's driver (580.159.04) accepts this and then crashes the program */
    EXPECT(cuGraphReleaseUserObject(ug, uo, 2), CUDA_ERROR_INVALID_VALUE);
#endif
    CHECK(cuUserObjectRelease(uo, 1)); /* the program's: the graph still holds one */
    CUgraphNode empty;
    CHECK(cuGraphAddEmptyNode(&empty, ug, NULL, 0));
    CUgraphExec uexec;
    CHECK(cuGraphInstantiate(&uexec, ug, 0));
    CHECK(cuGraphDestroy(ug)); /* the executable graph holds its own reference */
    usleep(20000);
    ASSERT(destroyed == 0);
    CHECK(cuGraphLaunch(uexec, b));
    CHECK(cuStreamSynchronize(b));
    CHECK(cuGraphExecDestroy(uexec));
    for (int i = 0; i < 100 && !destroyed; i++) usleep(10000);
    ASSERT(destroyed == 1);
    printf("user object destroyed once the program, the graph and the executable graph let go\n");
    /* A child graph's references live on in the parent that copied it. */
    destroyed = 0;
    CHECK(cuUserObjectCreate(&uo, (void *)&destroyed, count_destroy, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC));
    CUgraph child, parent;
    CHECK(cuGraphCreate(&child, 0));
    CHECK(cuGraphRetainUserObject(child, uo, 1, CU_GRAPH_USER_OBJECT_MOVE));
    CHECK(cuGraphAddEmptyNode(&empty, child, NULL, 0));
    CHECK(cuGraphCreate(&parent, 0));
    CUgraphNode cn;
    CHECK(cuGraphAddChildGraphNode(&cn, parent, NULL, 0, child));
    CHECK(cuGraphDestroy(child));
    usleep(20000);
    ASSERT(destroyed == 0);
    CHECK(cuGraphDestroy(parent));
    for (int i = 0; i < 100 && !destroyed; i++) usleep(10000);
    ASSERT(destroyed == 1);
#ifndef KEEP_GOING /* an H200's driver does not check: the object is gone */
    EXPECT(cuUserObjectRelease(uo, 1), CUDA_ERROR_INVALID_HANDLE);
#endif
    printf("a child graph's user object lives as long as the parent that copied it\n");

    /* ---- 4. graph memory, edges, capture dependencies ---- */
    /* Stream-ordered allocation captured: an allocation node whose address is fixed at capture, a
     * free node, and the work between them, replayed by each launch. */
    int pools;
    CHECK(cuDeviceGetAttribute(&pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    ASSERT(pools == 1);
    CUdeviceptr tmp;
    CHECK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuMemAllocAsync(&tmp, N * 4, a));
    ASSERT(tmp != 0);
    /* cuMemAlloc during the capture is refused; the capture goes on (warp-lang relies on this). */
    CUdeviceptr refused;
    EXPECT(cuMemAlloc(&refused, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK(cuMemsetD32Async(tmp, 3, N, a));
    launch_scale(scale, a, tmp, N, 4); /* 3*4+1 = 13 */
    CHECK(cuMemcpyDtoDAsync(out, tmp, N * 4, a));
    CHECK(cuMemFreeAsync(tmp, a));
    CHECK(cuStreamEndCapture(a, &g));
    CUgraphNode chain[8];
    size_t nchain = 8;
    CHECK(cuGraphGetNodes(g, chain, &nchain));
    ASSERT(nchain == 5);
    CHECK(cuGraphNodeGetType(chain[0], &t));
    ASSERT(t == CU_GRAPH_NODE_TYPE_MEM_ALLOC);
    CHECK(cuGraphNodeGetType(chain[4], &t));
    ASSERT(t == CU_GRAPH_NODE_TYPE_MEM_FREE);
    CUDA_MEM_ALLOC_NODE_PARAMS ap;
    CHECK(cuGraphMemAllocNodeGetParams(chain[0], &ap));
    ASSERT(ap.dptr == tmp && ap.bytesize == N * 4 && ap.poolProps.location.id == 0);
    CUdeviceptr freed_ptr;
    CHECK(cuGraphMemFreeNodeGetParams(chain[4], &freed_ptr));
    ASSERT(freed_ptr == tmp);
    /* The edges of the chain, as pairs and from each side. */
    CUgraphNode from_nodes[8], to_nodes[8];
    size_t nedges = 0;
    CHECK(cuGraphGetEdges(g, NULL, NULL, NULL, &nedges));
    ASSERT(nedges == 4);
    CHECK(cuGraphGetEdges(g, from_nodes, to_nodes, NULL, &nedges));
    ASSERT(from_nodes[0] == chain[0] && to_nodes[0] == chain[1] && to_nodes[3] == chain[4]);
    CUgraphNode next[2];
    size_t nnext = 2;
    CHECK(cuGraphNodeGetDependentNodes(chain[0], next, NULL, &nnext));
    ASSERT(nnext == 1 && next[0] == chain[1]);
    /* Edge data comes with the nodes, and every edge here is a plain dependency (all zeros). */
    CUgraphEdgeData data[2];
    memset(data, 0xff, sizeof data);
    nnext = 2;
    CHECK(cuGraphNodeGetDependencies(chain[1], next, data, &nnext));
    ASSERT(nnext == 1 && next[0] == chain[0] && data[0].type == 0 && data[0].from_port == 0 && data[1].type == 0xff);
    EXPECT(cuGraphNodeGetDependentNodes(chain[0], NULL, data, &nnext), CUDA_ERROR_INVALID_VALUE);
    cuuint64_t reserved = 0, used = 1;
    CHECK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved));
    ASSERT(reserved == N * 4);
    CHECK(cuGraphInstantiate(&exec, g, 0));
    /* cuda.h: a graph with allocation nodes has one instantiation at a time, and its nodes stay. */
    CUgraphExec second;
    EXPECT(cuGraphInstantiate(&second, g, 0), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuGraphDestroyNode(chain[2]), CUDA_ERROR_NOT_SUPPORTED);
    for (int launch = 0; launch < 2; launch++) {
        CHECK(cuMemsetD32(out, 0, N));
        CHECK(cuGraphLaunch(exec, a));
        CHECK(cuStreamSynchronize(a));
        CHECK(cuMemcpyDtoH(host, out, N * 4));
        for (int i = 0; i < N; i++) ASSERT(host[i] == 13);
    }
    CHECK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used));
    ASSERT(used == 0); /* the free node ended it */
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(g));
    CHECK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved));
    ASSERT(reserved == 0);
    /* An allocation node with no free: the allocation outlives the launch, and the program frees it
     * (once). */
    CUgraph ag;
    CUgraphNode an;
    CHECK(cuGraphCreate(&ag, 0));
    memset(&ap, 0, sizeof ap);
    ap.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    ap.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    ap.bytesize = 64;
    CHECK(cuGraphAddMemAllocNode(&an, ag, NULL, 0, &ap));
    ASSERT(ap.dptr != 0);
    CHECK(cuGraphInstantiate(&exec, ag, 0));
    CHECK(cuGraphLaunch(exec, a));
    CHECK(cuStreamSynchronize(a));
    CHECK(cuMemsetD32(ap.dptr, 9, 16));
    CHECK(cuMemFree(ap.dptr));
    EXPECT(cuMemFree(ap.dptr), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(ag));
    /* A capture's next work can be given other dependencies: none, here, so the second kernel is a
     * second root. */
    CHECK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_scale(scale, a, buf, N, 1);
    CHECK(cuStreamUpdateCaptureDependencies(a, NULL, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    launch_scale(scale, a, out, N, 1);
    CHECK(cuStreamEndCapture(a, &g));
    size_t nroots2 = 0;
    CHECK(cuGraphGetRootNodes(g, NULL, &nroots2));
    ASSERT(nroots2 == 2);
    /* Edges removed and nodes destroyed. */
    CHECK(cuGraphGetNodes(g, chain, &nchain));
    CHECK(cuGraphAddDependencies(g, &chain[0], &chain[1], NULL, 1));
    CHECK(cuGraphGetRootNodes(g, NULL, &nroots2));
    ASSERT(nroots2 == 1);
    CHECK(cuGraphRemoveDependencies(g, &chain[0], &chain[1], NULL, 1));
    EXPECT(cuGraphRemoveDependencies(g, &chain[0], &chain[1], NULL, 1), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuGraphDestroyNode(chain[1]));
    nchain = 8;
    CHECK(cuGraphGetNodes(g, chain, &nchain));
    ASSERT(nchain == 1);
    CHECK(cuGraphDestroy(g));
    printf("graph memory (captured and explicit), edges and capture dependencies verified\n");

    /* ---- 5. conditional nodes, child graphs, clones, external events ---- */
    CUmodule cm;
    CUfunction countdown;
    CHECK(cuModuleLoadData(&cm, COND_PTX)); /* the driver provides cudaGraphSetConditional */
    CHECK(cuModuleGetFunction(&countdown, cm, "countdown"));
    CUgraph wg;
    CHECK(cuGraphCreate(&wg, 0));
    CUgraphConditionalHandle wh;
    CUcontext ctx;
    CHECK(cuCtxGetCurrent(&ctx));
    CHECK(cuGraphConditionalHandleCreate(&wh, wg, ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
    CUgraphNodeParams cp;
    memset(&cp, 0, sizeof cp);
    cp.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    cp.conditional.handle = wh;
    cp.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    cp.conditional.size = 1;
    CUgraphNode wn;
    CHECK(cuGraphAddNode(&wn, wg, NULL, NULL, 0, &cp));
    CUgraph body = cp.conditional.phGraph_out[0];
    /* The body is filled after the node is made, and is part of it when instantiated. */
    void *cd_args[] = {&wh, &buf};
    CUDA_KERNEL_NODE_PARAMS kp = {0};
    kp.func = countdown;
    kp.gridDimX = kp.gridDimY = kp.gridDimZ = kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
    kp.kernelParams = cd_args;
    CUgraphNode kn;
    CHECK(cuGraphAddKernelNode(&kn, body, NULL, 0, &kp));
    CHECK(cuGraphInstantiate(&exec, wg, 0));
    for (unsigned start = 5; start >= 3; start -= 2) {
        CHECK(cuMemsetD32(buf, start, 1));
        CHECK(cuGraphLaunch(exec, a)); /* the handle starts at 1 each launch: the loop runs start times */
        CHECK(cuStreamSynchronize(a));
        CHECK(cuMemcpyDtoH(host, buf, 4));
        ASSERT(host[0] == 0);
    }
    CHECK(cuGraphExecDestroy(exec));
    /* As cuda.h says, a graph with a conditional node cannot be cloned. */
    CUgraph wc, parent2;
    EXPECT(cuGraphClone(&wc, wg), CUDA_ERROR_NOT_SUPPORTED);
    /* A clone runs the same, and a child graph node holds its own copy. */
    CUgraph sg;
    CHECK(cuGraphCreate(&sg, 0));
    CUDA_MEMSET_NODE_PARAMS fill77 = {buf, 0, 77, 4, 1, 1};
    CUgraphNode f77;
    CHECK(cuGraphAddMemsetNode(&f77, sg, NULL, 0, &fill77, ctx));
    CHECK(cuGraphClone(&wc, sg));
    CHECK(cuGraphDestroy(sg)); /* the clone is a graph of its own */
    CHECK(cuGraphCreate(&parent2, 0));
    CHECK(cuGraphAddChildGraphNode(&cn, parent2, NULL, 0, wc));
    CUgraph held;
    CHECK(cuGraphChildGraphNodeGetGraph(cn, &held));
    nchain = 8;
    CHECK(cuGraphGetNodes(held, chain, &nchain));
    ASSERT(held != wc && nchain == 1);
    CHECK(cuGraphInstantiate(&exec, parent2, 0));
    CHECK(cuMemsetD32(buf, 0, 1));
    CHECK(cuGraphLaunch(exec, a));
    CHECK(cuStreamSynchronize(a));
    CHECK(cuMemcpyDtoH(host, buf, 4));
    ASSERT(host[0] == 77);
    CHECK(cuGraphExecDestroy(exec));
    CHECK(cuGraphDestroy(parent2));
    CHECK(cuGraphDestroy(wc));
    CHECK(cuGraphDestroy(wg));
    /* if/else and switch over memset bodies: the value chooses the body. */
    unsigned types[2] = {CU_GRAPH_COND_TYPE_IF, CU_GRAPH_COND_TYPE_SWITCH};
    unsigned sizes[2] = {2, 3}, defaults[2] = {0, 1}, expect[2] = {101, 101};
    for (int k = 0; k < 2; k++) {
        CUgraph cg;
        CHECK(cuGraphCreate(&cg, 0));
        CUgraphConditionalHandle ch;
        CHECK(cuGraphConditionalHandleCreate(&ch, cg, ctx, defaults[k], CU_GRAPH_COND_ASSIGN_DEFAULT));
        memset(&cp, 0, sizeof cp);
        cp.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
        cp.conditional.handle = ch;
        cp.conditional.type = types[k];
        cp.conditional.size = sizes[k];
        CHECK(cuGraphAddNode(&wn, cg, NULL, NULL, 0, &cp));
        for (unsigned i = 0; i < sizes[k]; i++) {
            CUDA_MEMSET_NODE_PARAMS fill_body = {buf, 0, 100 + i, 4, 1, 1};
            CUgraphNode fn;
            CHECK(cuGraphAddMemsetNode(&fn, cp.conditional.phGraph_out[i], NULL, 0, &fill_body, ctx));
        }
        CHECK(cuGraphInstantiate(&exec, cg, 0));
        CHECK(cuMemsetD32(buf, 0, 1));
        CHECK(cuGraphLaunch(exec, a));
        CHECK(cuStreamSynchronize(a));
        CHECK(cuMemcpyDtoH(host, buf, 4));
        ASSERT(host[0] == expect[k]); /* if: value 0 takes the else body; switch: value 1 */
        CHECK(cuGraphExecDestroy(exec));
        CHECK(cuGraphDestroy(cg));
    }
    /* External event record and wait in a capture become event nodes. */
    CHECK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK(cuEventRecordWithFlags(done, a, CU_EVENT_RECORD_EXTERNAL));
    CHECK(cuStreamWaitEvent(a, fork, CU_EVENT_WAIT_EXTERNAL));
    CHECK(cuStreamEndCapture(a, &g));
    nchain = 8;
    CHECK(cuGraphGetNodes(g, chain, &nchain));
    ASSERT(nchain == 2);
    CHECK(cuGraphNodeGetType(chain[0], &t));
    ASSERT(t == CU_GRAPH_NODE_TYPE_EVENT_RECORD);
    CHECK(cuGraphNodeGetType(chain[1], &t));
    ASSERT(t == CU_GRAPH_NODE_TYPE_WAIT_EVENT);
    CHECK(cuGraphDestroy(g));
    printf("conditional nodes (while, if/else, switch), child graphs, clones and external events verified\n");
    printf("GRAPHS VERIFIED\n");
    return 0;
}
