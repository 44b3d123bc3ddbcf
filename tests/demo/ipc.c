/* Device memory shared between two processes (cuIpcGetMemHandle / cuIpcOpenMemHandle /
 * cuIpcCloseMemHandle). The parent fills two small buffers (which live in one slab, beside a third)
 * and a large one, exports them one after the other, and starts itself again as the child, passing
 * the handles in hex. The child opens them (twice: the same pointer comes back), checks the parent's
 * data, adds 1 to every word with a kernel and closes them. The parent then sees the child's writes
 * in all three, and the third small buffer is untouched. An interprocess event orders the two: the
 * parent records it after a slow kernel that raises a flag in shared memory, and the child, having
 * waited for the event, finds the flag raised. Prints IPC VERIFIED or stops at the first difference.
 * Usage: ipc (the child is `ipc child HANDLE HANDLE HANDLE FLAG EVENT`). */
#include "driver_util.h"
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

static const char *PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry add1(.param .u64 p, .param .u32 n) {\n"
    " .reg .u32 %r<6>; .reg .u64 %rd<4>; .reg .pred %q;\n"
    " mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.u32 %r1, %r2, %r3, %r1;\n"
    " ld.param.u32 %r4, [n]; setp.ge.u32 %q, %r1, %r4; @%q ret;\n"
    " ld.param.u64 %rd1, [p]; mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2;\n"
    " ld.global.u32 %r5, [%rd3]; add.u32 %r5, %r5, 1; st.global.u32 [%rd3], %r5;\n"
    " ret;\n}\n"
    /* slow(flag): spins for a while, then stores 1 at flag. */
    ".visible .entry slow(.param .u64 flag) {\n"
    " .reg .u32 %r<4>; .reg .u64 %rd<2>; .reg .pred %q;\n"
    " mov.u32 %r1, 0; ld.param.u64 %rd1, [flag];\n"
    /* A volatile load per turn (of the flag, still 0), so the loop stays a loop. */
    "SPIN: ld.volatile.global.u32 %r3, [%rd1]; add.u32 %r1, %r1, %r3; add.u32 %r1, %r1, 1;\n"
    " setp.lt.u32 %q, %r1, 1500000000; @%q bra SPIN;\n"
    " mov.u32 %r2, 1; st.volatile.global.u32 [%rd1], %r2;\n"
    " ret;\n}\n";

#define SMALL 250         /* words: a 1000-byte buffer, in a slab */
#define LARGE (1u << 20)  /* words: 4 MiB, a mapping of its own */

static void hex(const CUipcMemHandle *h, char *s) {
    for (int i = 0; i < 64; i++) sprintf(s + 2 * i, "%02x", (unsigned char)h->reserved[i]);
}

static CUipcMemHandle unhex(const char *s) {
    CUipcMemHandle h;
    for (int i = 0; i < 64; i++) {
        unsigned v;
        sscanf(s + 2 * i, "%2x", &v);
        h.reserved[i] = (char)v;
    }
    return h;
}

static CUmodule module(void) {
    static CUmodule m;
    if (!m) CHECK(cuModuleLoadData(&m, PTX));
    return m;
}

static void add1(CUdeviceptr p, unsigned n) {
    CUmodule m = module();
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, m, "add1"));
    void *args[] = {&p, &n};
    CHECK(cuLaunchKernel(k, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CHECK(cuCtxSynchronize());
}

#define BUFFERS 3
static const unsigned sizes[BUFFERS] = {SMALL, SMALL, LARGE};

static int child(char **argv) {
    context_on_device0();
    /* The parent's event: once it has completed, the parent's slow kernel has raised the flag. */
    CUipcEventHandle eh;
    CUipcMemHandle fh = unhex(argv[2 + BUFFERS + 1]);
    memcpy(&eh, &fh, sizeof eh);
    CUevent ev;
    CHECK(cuIpcOpenEventHandle(&ev, eh));
    CHECK(cuEventSynchronize(ev));
    CHECK(cuEventQuery(ev));
    CUdeviceptr flag;
    CHECK(cuIpcOpenMemHandle(&flag, unhex(argv[2 + BUFFERS]), 0));
    unsigned raised = 0;
    CHECK(cuMemcpyDtoH(&raised, flag, 4));
    ASSERT(raised == 1);
    CHECK(cuIpcCloseMemHandle(flag));
    unsigned *words = malloc(LARGE * 4);
    for (int b = 0; b < BUFFERS; b++) {
        CUipcMemHandle h = unhex(argv[2 + b]);
        CUdeviceptr p, q;
        CHECK(cuIpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        CHECK(cuIpcOpenMemHandle(&q, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        ASSERT(p == q);
        CHECK(cuMemcpyDtoH(words, p, sizes[b] * 4));
        for (unsigned i = 0; i < sizes[b]; i++) ASSERT(words[i] == i * 3 + b);
        add1(p, sizes[b]);
        CHECK(cuIpcCloseMemHandle(p));
        CHECK(cuIpcCloseMemHandle(q));
        EXPECT(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);
    }
    /* A handle that is not one. */
    CUipcMemHandle junk;
    memset(&junk, 7, sizeof junk);
    CUdeviceptr p;
    EXPECT(cuIpcOpenMemHandle(&p, junk, 0), CUDA_ERROR_INVALID_VALUE);
    /* The child records the event too, after its work. */
    CHECK(cuEventRecord(ev, NULL));
    CHECK(cuEventSynchronize(ev));
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 + BUFFERS && strcmp(argv[1], "child") == 0) return child(argv);
    context_on_device0();
    CUdeviceptr buf[BUFFERS], neighbour;
    unsigned *words = malloc(LARGE * 4);
    CHECK(cuMemAlloc(&buf[0], SMALL * 4));
    CHECK(cuMemAlloc(&neighbour, SMALL * 4));
    CHECK(cuMemAlloc(&buf[1], SMALL * 4));
    CHECK(cuMemAlloc(&buf[2], LARGE * 4));
    for (int b = 0; b < BUFFERS; b++) {
        for (unsigned i = 0; i < sizes[b]; i++) words[i] = i * 3 + b;
        CHECK(cuMemcpyHtoD(buf[b], words, sizes[b] * 4));
    }
    for (unsigned i = 0; i < SMALL; i++) words[i] = 0xabc0000 + i;
    CHECK(cuMemcpyHtoD(neighbour, words, SMALL * 4));

    char arg[BUFFERS][129];
    for (int b = 0; b < BUFFERS; b++) {
        CUipcMemHandle h, again;
        CHECK(cuIpcGetMemHandle(&h, buf[b]));
        CHECK(cuIpcGetMemHandle(&again, buf[b]));
        ASSERT(memcmp(&h, &again, sizeof h) == 0);
        CUdeviceptr p;
        EXPECT(cuIpcOpenMemHandle(&p, h, 0), CUDA_ERROR_INVALID_CONTEXT); /* its own handle */
        hex(&h, arg[b]);
    }
    CUipcMemHandle none;
    EXPECT(cuIpcGetMemHandle(&none, 0x1000), CUDA_ERROR_INVALID_VALUE);

    /* A flag the slow kernel raises, and an interprocess event recorded after it. */
    CUdeviceptr flag;
    CHECK(cuMemAlloc(&flag, 4));
    CHECK(cuMemsetD32(flag, 0, 1));
    CUipcMemHandle fh;
    CHECK(cuIpcGetMemHandle(&fh, flag));
    char flag_arg[129], event_arg[129];
    hex(&fh, flag_arg);
    CUevent ev, plain;
    EXPECT(cuEventCreate(&ev, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE); /* must not time */
    CHECK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CHECK(cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING));
    CUipcEventHandle eh;
    EXPECT(cuIpcGetEventHandle(&eh, plain), CUDA_ERROR_INVALID_HANDLE);
    CHECK(cuIpcGetEventHandle(&eh, ev));
    CUipcMemHandle as_mem;
    memcpy(&as_mem, &eh, sizeof eh);
    hex(&as_mem, event_arg);
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUfunction slow;
    CHECK(cuModuleGetFunction(&slow, module(), "slow"));
    void *slow_args[] = {&flag};
    CHECK(cuLaunchKernel(slow, 1, 1, 1, 1, 1, 1, 0, s, slow_args, NULL));
    CHECK(cuEventRecord(ev, s));

    char *child_argv[] = {argv[0], "child", arg[0], arg[1], arg[2], flag_arg, event_arg, NULL};
    pid_t pid;
    ASSERT(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, child_argv, environ) == 0);
    int status;
    ASSERT(waitpid(pid, &status, 0) == pid);
    ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    for (int b = 0; b < BUFFERS; b++) {
        CHECK(cuMemcpyDtoH(words, buf[b], sizes[b] * 4));
        for (unsigned i = 0; i < sizes[b]; i++) ASSERT(words[i] == i * 3 + b + 1);
    }
    CHECK(cuMemcpyDtoH(words, neighbour, SMALL * 4));
    for (unsigned i = 0; i < SMALL; i++) ASSERT(words[i] == 0xabc0000 + i);
    /* The exported memory still works here, kernels included. */
    add1(buf[0], SMALL);
    CHECK(cuMemcpyDtoH(words, buf[0], SMALL * 4));
    ASSERT(words[7] == 7 * 3 + 2);
    for (int b = 0; b < BUFFERS; b++) CHECK(cuMemFree(buf[b]));
    /* Both processes' records have completed. */
    CHECK(cuEventQuery(ev));
    printf("IPC VERIFIED\n");
    return 0;
}
