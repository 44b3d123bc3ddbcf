/* Hopper's tensor copies (TMA) through the driver API: cuTensorMapEncodeTiled's checks, and
 * cp.async.bulk.tensor loads (1 to 5 dimensions, every swizzle, boxes past the tensor's edges, zero
 * and NaN fills, traversal strides, 1- to 8-byte elements), stores and reductions, each compared byte
 * for byte with a model of the manual's rules written here (swizzle tables, bounding box, OOB fill):
 * a load copies the whole 8 KiB shared buffer out, so bytes the copy must not touch are checked too.
 * A plain driver API program: it knows nothing about ptx-jit. Build with -DKEEP_GOING to print every
 * differing byte instead of stopping at the first (tests/gpu/pending_on_device.sh). */
#include "driver_util.h"
#include <stdint.h>

#define BUF 8192
#define FILLER 0xee

static char ptx[32768];

/* Appends to the module: loadR (global to shared, then the whole shared buffer to `out`) for R in 1..5,
 * store2 and reduce2 (`in` to shared, then shared to the tensor). 256 threads each move 32 bytes. */
static void build_module(void) {
    char *p = ptx;
    p += sprintf(p, ".version 8.3\n.target sm_90a\n.address_size 64\n");
    const char *fill =
        "  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, buf;\n  shl.b32 %r3, %r1, 5;\n  add.u32 %r4, %r2, %r3;\n"
        "  cvt.u64.u32 %rd4, %r3;\n  setp.eq.u32 %p1, %r1, 0;\n";
    /* load1..load5 take the map as a kernel parameter; loadg2 reads it from global memory, where
     * publish (tensormap.cp_fenceproxy) put it. */
    for (int r = 1; r <= 6; r++) {
        int global_map = r == 6, rank = global_map ? 2 : r;
        p += sprintf(p,
                     ".visible .entry load%s%d(%s, .param .u64 out, .param .u32 bytes,"
                     " .param .s32 c0, .param .s32 c1, .param .s32 c2, .param .s32 c3, .param .s32 c4)\n{\n"
                     "  .reg .pred %%p<3>;\n  .reg .b32 %%r<20>;\n  .reg .b64 %%rd<8>;\n"
                     "  .shared .align 1024 .b8 buf[%d];\n  .shared .align 8 .b64 bar;\n%s"
                     "  mov.u32 %%r5, 0xeeeeeeee;\n"
                     "  st.shared.v4.u32 [%%r4], {%%r5, %%r5, %%r5, %%r5};\n"
                     "  st.shared.v4.u32 [%%r4+16], {%%r5, %%r5, %%r5, %%r5};\n"
                     "  @%%p1 mbarrier.init.shared::cta.b64 [bar], 1;\n"
                     "  fence.proxy.async.shared::cta;\n  fence.mbarrier_init.release.cluster;\n  bar.sync 0;\n"
                     "  @!%%p1 bra WAIT;\n  ld.param.u32 %%r6, [bytes];\n"
                     "  mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], %%r6;\n"
                     "%s"
                     "  ld.param.s32 %%r10, [c0];\n  ld.param.s32 %%r11, [c1];\n  ld.param.s32 %%r12, [c2];\n"
                     "  ld.param.s32 %%r13, [c3];\n  ld.param.s32 %%r14, [c4];\n"
                     "  cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [buf], [%%rd2, {%s}], [bar];\n"
                     "WAIT:\n  mbarrier.try_wait.parity.shared::cta.b64 %%p2, [bar], 0;\n  @!%%p2 bra WAIT;\n"
                     "  ld.param.u64 %%rd3, [out];\n  add.s64 %%rd5, %%rd3, %%rd4;\n"
                     "  ld.shared.v4.u32 {%%r6, %%r7, %%r8, %%r9}, [%%r4];\n"
                     "  st.global.v4.u32 [%%rd5], {%%r6, %%r7, %%r8, %%r9};\n"
                     "  ld.shared.v4.u32 {%%r6, %%r7, %%r8, %%r9}, [%%r4+16];\n"
                     "  st.global.v4.u32 [%%rd5+16], {%%r6, %%r7, %%r8, %%r9};\n  ret;\n}\n",
                     global_map ? "g" : "", rank,
                     global_map ? ".param .u64 gmap" : ".param .align 64 .b8 map[128]", BUF, fill,
                     global_map ? "  ld.param.u64 %rd2, [gmap];\n  fence.proxy.tensormap::generic.acquire.gpu [%rd2], 128;\n"
                                : "  mov.b64 %rd1, map;\n  cvta.param.u64 %rd2, %rd1;\n",
                     rank,
                     rank == 1   ? "%r10"
                     : rank == 2 ? "%r10, %r11"
                     : rank == 3 ? "%r10, %r11, %r12"
                     : rank == 4 ? "%r10, %r11, %r12, %r13"
                                 : "%r10, %r11, %r12, %r13, %r14");
    }
    p += sprintf(p,
                 ".visible .entry publish(.param .align 64 .b8 map[128], .param .u64 gmap)\n{\n"
                 "  .reg .pred %%p<2>;\n  .reg .b32 %%r<6>;\n  .reg .b64 %%rd<8>;\n"
                 "  .shared .align 128 .b8 smap[128];\n"
                 "  mov.u32 %%r1, %%tid.x;\n  setp.lt.u32 %%p1, %%r1, 16;\n"
                 "  mov.b64 %%rd1, map;\n  cvta.param.u64 %%rd2, %%rd1;\n"
                 "  mul.wide.u32 %%rd3, %%r1, 8;\n  add.s64 %%rd4, %%rd2, %%rd3;\n  @%%p1 ld.u64 %%rd5, [%%rd4];\n"
                 "  mov.u32 %%r2, smap;\n  shl.b32 %%r3, %%r1, 3;\n  add.u32 %%r4, %%r2, %%r3;\n"
                 "  @%%p1 st.shared.u64 [%%r4], %%rd5;\n  bar.sync 0;\n  ld.param.u64 %%rd6, [gmap];\n"
                 "  tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
                 " [%%rd6], [smap], 128;\n  ret;\n}\n");
    /* replace_publish: publish's copy, with four fields replaced in shared memory first. */
    p += sprintf(p,
                 ".visible .entry replace_publish(.param .align 64 .b8 map[128], .param .u64 gmap, .param .u64 base)\n{\n"
                 "  .reg .pred %%p<2>;\n  .reg .b32 %%r<6>;\n  .reg .b64 %%rd<8>;\n"
                 "  .shared .align 128 .b8 smap[128];\n"
                 "  mov.u32 %%r1, %%tid.x;\n  setp.lt.u32 %%p1, %%r1, 16;\n"
                 "  mov.b64 %%rd1, map;\n  cvta.param.u64 %%rd2, %%rd1;\n"
                 "  mul.wide.u32 %%rd3, %%r1, 8;\n  add.s64 %%rd4, %%rd2, %%rd3;\n  @%%p1 ld.u64 %%rd5, [%%rd4];\n"
                 "  mov.u32 %%r2, smap;\n  shl.b32 %%r3, %%r1, 3;\n  add.u32 %%r4, %%r2, %%r3;\n"
                 "  @%%p1 st.shared.u64 [%%r4], %%rd5;\n  bar.sync 0;\n"
                 "  setp.ne.u32 %%p1, %%r1, 0;\n  @%%p1 bra PUBLISH;\n  ld.param.u64 %%rd7, [base];\n"
                 "  tensormap.replace.tile.global_address.shared::cta.b1024.b64 [smap], %%rd7;\n"
                 "  tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [smap], 1, 4;\n"
                 "  tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [smap], 0, 320;\n"
                 "  tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [smap], 1, 12;\n"
                 "PUBLISH:\n  bar.sync 0;\n  ld.param.u64 %%rd6, [gmap];\n"
                 "  tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned"
                 " [%%rd6], [smap], 128;\n  ret;\n}\n");
    const char *names[] = {"store2", "reduce2"};
    const char *ops[] = {"cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group",
                         "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group"};
    for (int k = 0; k < 2; k++)
        p += sprintf(p,
                     ".visible .entry %s(.param .align 64 .b8 map[128], .param .u64 in, .param .s32 c0,"
                     " .param .s32 c1)\n{\n"
                     "  .reg .pred %%p<3>;\n  .reg .b32 %%r<20>;\n  .reg .b64 %%rd<8>;\n"
                     "  .shared .align 1024 .b8 buf[%d];\n%s"
                     "  ld.param.u64 %%rd3, [in];\n  add.s64 %%rd5, %%rd3, %%rd4;\n"
                     "  ld.global.v4.u32 {%%r6, %%r7, %%r8, %%r9}, [%%rd5];\n"
                     "  st.shared.v4.u32 [%%r4], {%%r6, %%r7, %%r8, %%r9};\n"
                     "  ld.global.v4.u32 {%%r6, %%r7, %%r8, %%r9}, [%%rd5+16];\n"
                     "  st.shared.v4.u32 [%%r4+16], {%%r6, %%r7, %%r8, %%r9};\n"
                     "  fence.proxy.async.shared::cta;\n  bar.sync 0;\n  @!%%p1 bra DONE;\n"
                     "  mov.b64 %%rd1, map;\n  cvta.param.u64 %%rd2, %%rd1;\n"
                     "  ld.param.s32 %%r10, [c0];\n  ld.param.s32 %%r11, [c1];\n"
                     "  %s [%%rd2, {%%r10, %%r11}], [buf];\n"
                     "  cp.async.bulk.commit_group;\n  cp.async.bulk.wait_group 0;\nDONE:\n  ret;\n}\n",
                     names[k], BUF, fill, ops[k]);
}

/* A tensor as the model sees it. */
typedef struct {
    CUtensorMapDataType dtype;
    int rank, esize, nan_fill;
    uint64_t dims[5], strides[5]; /* strides in bytes; strides[0] is the element's size */
    uint32_t box[5], estride[5];
    CUtensorMapSwizzle swizzle;
} Tensor;

static int element_size(CUtensorMapDataType t) {
    static const int size[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
    return size[t];
}

/* The swizzle tables of the manual ("Swizzling Modes"): the 16-byte chunk at bits 4-6 of a shared
 * address is XORed with bits 7-9 (one, two or three of them for 32, 64 and 128 bytes). */
static uint64_t swizzle(uint64_t off, CUtensorMapSwizzle s) {
    if (s == CU_TENSOR_MAP_SWIZZLE_NONE) return off;
    uint64_t mask = (1u << s) - 1;
    return off ^ (((off >> 7) & mask) << 4);
}

/* Elements along dimension i: dimension 0 has no traversal stride (cuda.h: its value is ignored). */
static uint64_t count(const Tensor *t, int i) {
    uint32_t e = i ? t->estride[i] : 1;
    return (t->box[i] + e - 1) / e;
}

static uint64_t box_bytes(const Tensor *t) {
    uint64_t n = t->esize;
    for (int i = 0; i < t->rank; i++) n *= count(t, i);
    return n;
}

/* Calls f for each element of the box at c: its byte offset in shared memory before swizzling and its
 * byte offset in the tensor, or -1 outside it. Rows (the box's elements along dimension 0) follow each
 * other; under a swizzle each takes at least the swizzle's span (16 << swizzle bytes). */
typedef void (*Visit)(const Tensor *, uint64_t, int64_t, void *);
static void each(const Tensor *t, const int *c, Visit f, void *ctx) {
    uint64_t n[5] = {1, 1, 1, 1, 1}, j[5], row = 0;
    for (int i = 0; i < t->rank; i++) n[i] = count(t, i);
    uint64_t pitch = n[0] * t->esize;
    if (t->swizzle != CU_TENSOR_MAP_SWIZZLE_NONE && pitch < (16u << t->swizzle)) pitch = 16u << t->swizzle;
    for (j[4] = 0; j[4] < n[4]; j[4]++)
        for (j[3] = 0; j[3] < n[3]; j[3]++)
            for (j[2] = 0; j[2] < n[2]; j[2]++)
                for (j[1] = 0; j[1] < n[1]; j[1]++, row++)
                    for (j[0] = 0; j[0] < n[0]; j[0]++) {
                        int64_t at = 0;
                        for (int i = 0; i < t->rank && at >= 0; i++) {
                            int64_t x = c[i] + (int64_t)(j[i] * (i ? t->estride[i] : 1));
                            at = x >= 0 && (uint64_t)x < t->dims[i] ? at + x * (int64_t)t->strides[i] : -1;
                        }
                        f(t, row * pitch + j[0] * t->esize, at, ctx);
                    }
}

typedef struct {
    const unsigned char *global;
    unsigned char *shared;
} Io;

static void load_one(const Tensor *t, uint64_t k, int64_t at, void *ctx) {
    Io *io = ctx;
    unsigned char *dst = io->shared + swizzle(k, t->swizzle);
    if (at >= 0 && (t->dtype == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 || t->dtype == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ)) {
        /* TF32 maps round to 10 mantissa bits, to nearest even (an H200 does). */
        uint32_t x;
        memcpy(&x, io->global + at, 4);
        if ((x & 0x7f800000) != 0x7f800000) x = (x + 0xfff + ((x >> 13) & 1)) & ~0x1fffu;
        memcpy(dst, &x, 4);
    } else if (at >= 0) {
        memcpy(dst, io->global + at, t->esize);
    } else {
        /* OOB fill: zeros, or the NaN an H200 writes: 0x7ff7 in every 16 bits (0x7ff77ff7 for f32). */
        for (int b = 0; b < t->esize; b++) dst[b] = t->nan_fill ? (b % 2 ? 0x7f : 0xf7) : 0;
    }
}

static void store_one(const Tensor *t, uint64_t k, int64_t at, void *ctx) {
    Io *io = ctx;
    if (at >= 0) memcpy((unsigned char *)io->global + at, io->shared + swizzle(k, t->swizzle), t->esize);
}

static void add_one(const Tensor *t, uint64_t k, int64_t at, void *ctx) {
    Io *io = ctx;
    if (at < 0) return;
    uint32_t a, b;
    memcpy(&a, io->global + at, 4);
    memcpy(&b, io->shared + swizzle(k, t->swizzle), 4);
    a += b;
    memcpy((unsigned char *)io->global + at, &a, 4);
}

static CUmodule mod;
static int failures;
/* argv[1]: run only the checks whose description contains it (each GPU case in its own process, since
 * a GPU process that faulted cannot make a context again). */
static const char *only;
/* Whether a launch ended with the fault a check expected: the context is then unusable but for its
 * destruction. */
static int faulted;
static int wanted(const char *what) { return only == NULL || strstr(what, only) != NULL; }

static CUresult encode(CUtensorMap *m, const Tensor *t, CUdeviceptr base) {
    return cuTensorMapEncodeTiled(m, t->dtype, t->rank, (void *)base, t->dims, t->strides + 1, t->box, t->estride,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, t->swizzle, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                  t->nan_fill ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                              : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static Tensor tensor(CUtensorMapDataType dt, int rank, const uint64_t *dims, const uint64_t *strides,
                     const uint32_t *box, CUtensorMapSwizzle s) {
    Tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt, t.rank = rank, t.esize = element_size(dt), t.swizzle = s;
    for (int i = 0; i < 5; i++) t.dims[i] = 1, t.box[i] = 1, t.estride[i] = 1;
    for (int i = 0; i < rank; i++) t.dims[i] = dims[i], t.box[i] = box[i];
    t.strides[0] = t.esize;
    for (int i = 1; i < rank; i++) t.strides[i] = strides[i - 1];
    return t;
}

/* The tensor's bytes: the global allocation spans its last dimension's stride times its size. */
static size_t tensor_bytes(const Tensor *t) { return t->strides[t->rank - 1] * t->dims[t->rank - 1]; }

static void fill_pattern(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + seed * 31 + (i >> 8) * 13);
}

static void compare(const char *what, const unsigned char *got, const unsigned char *want, size_t n) {
    size_t bad = 0, first = n;
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            if (first == n) first = i;
            bad++;
        }
    if (bad) {
        fprintf(stderr, "%s: %zu of %zu bytes differ, first at %zu: got %#x, expected %#x\n", what, bad, n, first,
                got[first], want[first]);
        size_t at = first & ~(size_t)7;
        SHOW("  8 bytes from %zu: got", at);
        for (size_t i = at; i < at + 8 && i < n; i++) SHOW(" %02x", got[i]);
        SHOW(", expected");
        for (size_t i = at; i < at + 8 && i < n; i++) SHOW(" %02x", want[i]);
        SHOW("\n");
        failures++;
        FAIL_EXPECTATION();
    } else {
        printf("%-64s ok\n", what);
    }
}

/* Launches `name` as one block of 256 threads and waits: the launch's result. */
static CUresult run(const char *name, void **args) {
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, mod, name));
    CUresult r = cuLaunchKernel(k, 1, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    return r != CUDA_SUCCESS ? r : cuCtxSynchronize();
}

/* Judges launch result r against `fault`: when a fault was expected, it must be that one, and the
 * context is then lost (its memory goes with it); else the launch must succeed. Whether the caller
 * goes on to compare the buffers. */
static int ran(const char *what, CUresult r, CUresult fault) {
    if (fault == CUDA_SUCCESS) {
        CHECK(r);
        return 1;
    }
    EXPECT(r, fault);
    faulted = 1;
    printf("%-64s ok\n", what);
    return 0;
}

/* Loads the box at c of tensor t (filled with a pattern) and compares the whole shared buffer; or, when
 * `fault` is not CUDA_SUCCESS, expects the launch to end with it (the last check of a process: a GPU's
 * context is lost after it). */
static void load_or(const char *what, Tensor t, const int *c, CUresult fault) {
    if (!wanted(what)) return;
    size_t n = tensor_bytes(&t);
    unsigned char *host = malloc(n), *want = malloc(BUF), *got = malloc(BUF);
    fill_pattern(host, n, t.rank);
    if (t.dtype == CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 || t.dtype == CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ) {
        /* Floats with low mantissa bits and subnormals: whether the copy rounds or flushes them. */
        for (size_t i = 0; i + 4 <= n; i += 4) {
            uint32_t v = (uint32_t)(i * 2654435761u) & 0x807fffff;
            if (i % 8) v |= 0x3f800000;
            memcpy(host + i, &v, 4);
        }
    }
    CUdeviceptr g, out;
    CHECK(cuMemAlloc(&g, n));
    CHECK(cuMemAlloc(&out, BUF));
    CHECK(cuMemcpyHtoD(g, host, n));
    CUtensorMap m __attribute__((aligned(64)));
    CHECK(encode(&m, &t, g));
    memset(want, FILLER, BUF);
    Io io = {host, want};
    if (fault == CUDA_SUCCESS) each(&t, c, load_one, &io); /* a faulting box may not fit the buffer */
    unsigned bytes = (unsigned)box_bytes(&t);
    int cc[5] = {0};
    memcpy(cc, c, t.rank * sizeof(int));
    void *args[] = {&m, &out, &bytes, &cc[0], &cc[1], &cc[2], &cc[3], &cc[4]};
    char name[8];
    snprintf(name, sizeof name, "load%d", t.rank);
    if (ran(what, run(name, args), fault)) {
        CHECK(cuMemcpyDtoH(got, out, BUF));
        compare(what, got, want, BUF);
        CHECK(cuMemFree(g));
        CHECK(cuMemFree(out));
    }
    free(host), free(want), free(got);
}

static void load(const char *what, Tensor t, const int *c) { load_or(what, t, c, CUDA_SUCCESS); }

/* Stores (or adds) shared memory filled from a pattern into the box at c of a 2D tensor; or expects the
 * launch to end with `fault`, as load_or does. */
static void store_or(const char *what, Tensor t, const int *c, int add, CUresult fault) {
    if (!wanted(what)) return;
    size_t n = tensor_bytes(&t);
    unsigned char *host = malloc(n), *want = malloc(n), *got = malloc(n), *in = malloc(BUF);
    fill_pattern(host, n, 3);
    fill_pattern(in, BUF, 5);
    CUdeviceptr g, din;
    CHECK(cuMemAlloc(&g, n));
    CHECK(cuMemAlloc(&din, BUF));
    CHECK(cuMemcpyHtoD(g, host, n));
    CHECK(cuMemcpyHtoD(din, in, BUF));
    CUtensorMap m __attribute__((aligned(64)));
    CHECK(encode(&m, &t, g));
    memcpy(want, host, n);
    Io io = {want, in};
    if (fault == CUDA_SUCCESS) each(&t, c, add ? add_one : store_one, &io);
    int c0 = c[0], c1 = c[1];
    void *args[] = {&m, &din, &c0, &c1};
    if (ran(what, run(add ? "reduce2" : "store2", args), fault)) {
        CHECK(cuMemcpyDtoH(got, g, n));
        compare(what, got, want, n);
        CHECK(cuMemFree(g));
        CHECK(cuMemFree(din));
    }
    free(host), free(want), free(got), free(in);
}

static void store(const char *what, Tensor t, const int *c, int add) { store_or(what, t, c, add, CUDA_SUCCESS); }

/* A map of `enc` published to global memory by tensormap.cp_fenceproxy (kernel publish), or, with
 * `replace`, first changed by tensormap.replace in shared memory to describe `seen` (replace_publish);
 * then a load through it at c, compared with the model of `seen`. */
static void published(const char *what, Tensor enc, Tensor seen, int replace, const int *c) {
    if (!wanted(what)) return;
    size_t n = tensor_bytes(&seen);
    unsigned char *host = malloc(n), *want = malloc(BUF), *got = malloc(BUF);
    fill_pattern(host, n, 11);
    CUdeviceptr data, first, gmap, out;
    CHECK(cuMemAlloc(&data, n));
    CHECK(cuMemAlloc(&first, tensor_bytes(&enc)));
    CHECK(cuMemAlloc(&gmap, 128));
    CHECK(cuMemAlloc(&out, BUF));
    CHECK(cuMemcpyHtoD(data, host, n));
    CUtensorMap m __attribute__((aligned(64)));
    CHECK(encode(&m, &enc, replace ? first : data));
    void *pub[] = {&m, &gmap, &data};
    CHECK(run(replace ? "replace_publish" : "publish", pub));
    memset(want, FILLER, BUF);
    Io io = {host, want};
    each(&seen, c, load_one, &io);
    unsigned bytes = (unsigned)box_bytes(&seen);
    int c0 = c[0], c1 = c[1];
    void *args[] = {&gmap, &out, &bytes, &c0, &c1, &c1, &c1, &c1};
    CHECK(run("loadg2", args));
    CHECK(cuMemcpyDtoH(got, out, BUF));
    compare(what, got, want, BUF);
    CHECK(cuMemFree(data));
    CHECK(cuMemFree(first));
    CHECK(cuMemFree(gmap));
    CHECK(cuMemFree(out));
    free(host), free(want), free(got);
}


int main(int argc, char **argv) {
    only = argc > 1 ? argv[1] : NULL;
    CUcontext ctx = context_on_device0();
    build_module();
    CHECK(cuModuleLoadData(&mod, ptx));

    const uint64_t d2[] = {40, 24}, s2[] = {160};
    const CUtensorMapDataType F32 = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    Tensor t = tensor(F32, 2, d2, s2, (uint32_t[]){32, 8}, CU_TENSOR_MAP_SWIZZLE_NONE);
    load("2D f32, box 32x8 at (0, 0)", t, (int[]){0, 0});
    load("2D f32, box 32x8 at (16, 20): past the right and bottom edges", t, (int[]){16, 20});
    load("2D f32, box 32x8 at (-8, -3): before both edges", t, (int[]){-8, -3});
    load("2D f32, box 32x8 wholly outside (40, 0)", t, (int[]){40, 0});
    t.nan_fill = 1;
    load("2D f32, NaN fill, box at (16, 20)", t, (int[]){16, 20});
    t.nan_fill = 0;
    t.swizzle = CU_TENSOR_MAP_SWIZZLE_128B;
    load("2D f32, 128-byte swizzle, box 32x8 at (4, 2)", t, (int[]){4, 2});
    load("2D f32, 128-byte swizzle, box 32x8 at (20, 19)", t, (int[]){20, 19});
    t.box[0] = 16;
    load("2D f32, 128-byte swizzle, box 16x8 (64-byte rows) at (4, 1)", t, (int[]){4, 1});
    t.box[0] = 8;
    load("2D f32, 128-byte swizzle, box 8x8 (32-byte rows) at (4, 1)", t, (int[]){4, 1});
    t.box[0] = 16, t.swizzle = CU_TENSOR_MAP_SWIZZLE_64B;
    load("2D f32, 64-byte swizzle, box 16x8 at (8, 7)", t, (int[]){8, 7});
    t.box[0] = 8;
    load("2D f32, 64-byte swizzle, box 8x8 (32-byte rows) at (8, 7)", t, (int[]){8, 7});
    t.box[0] = 4, t.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
    load("2D f32, 32-byte swizzle, box 4x8 (16-byte rows) at (12, 7)", t, (int[]){12, 7});
    t.box[0] = 8, t.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
    load("2D f32, 32-byte swizzle, box 8x8 at (36, 17)", t, (int[]){36, 17});
    t = tensor(F32, 2, d2, s2, (uint32_t[]){32, 8}, CU_TENSOR_MAP_SWIZZLE_NONE);
    t.estride[1] = 2;
    load("2D f32, traversal stride 2 along dimension 1, box 32x8 at (0, 1)", t, (int[]){0, 1});
    t.estride[1] = 3, t.box[1] = 7;
    load("2D f32, traversal stride 3, box 32x7 (3 rows) at (4, 19)", t, (int[]){4, 19});

    t = tensor(CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, (uint64_t[]){100}, NULL, (uint32_t[]){48}, 0);
    load("1D u8, box 48 at 64", t, (int[]){64});
    t = tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 3, (uint64_t[]){24, 5, 4}, (uint64_t[]){48, 240},
               (uint32_t[]){16, 4, 2}, CU_TENSOR_MAP_SWIZZLE_NONE);
    load("3D f16, box 16x4x2 at (8, 3, 3)", t, (int[]){8, 3, 3});
    t.nan_fill = 1;
    load("3D f16, NaN fill, box at (8, 3, 3)", t, (int[]){8, 3, 3});
    t = tensor(CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, (uint64_t[]){16, 3, 2, 2}, (uint64_t[]){32, 96, 192},
               (uint32_t[]){8, 2, 2, 2}, CU_TENSOR_MAP_SWIZZLE_NONE);
    t.nan_fill = 1;
    load("4D bf16, NaN fill, box 8x2x2x2 at (8, 2, -1, 1)", t, (int[]){8, 2, -1, 1});
    load("4D bf16, NaN fill, box 8x2x2x2 at (16, 2, -1, 1)", t, (int[]){16, 2, -1, 1});
    t = tensor(CU_TENSOR_MAP_DATA_TYPE_UINT32, 5, (uint64_t[]){8, 2, 2, 2, 3}, (uint64_t[]){32, 64, 128, 256},
               (uint32_t[]){4, 2, 1, 2, 2}, CU_TENSOR_MAP_SWIZZLE_NONE);
    load("5D u32, box 4x2x1x2x2 at (4, 1, 1, 0, 2)", t, (int[]){4, 1, 1, 0, 2});
    t = tensor(CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 2, (uint64_t[]){6, 5}, (uint64_t[]){48}, (uint32_t[]){2, 4}, 0);
    t.nan_fill = 1;
    load("2D f64, NaN fill, box 2x4 at (4, 3)", t, (int[]){4, 3});
    load("2D f64, NaN fill, box 2x4 at (6, -2)", t, (int[]){6, -2});
    t = tensor(CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 2, d2, s2, (uint32_t[]){8, 4}, 0);
    load("2D tf32 (f32 bits with low mantissa bits), box 8x4 at (4, 1)", t, (int[]){4, 1});
    t.dtype = CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ;
    load("2D f32 (FTZ type, subnormals among the values), box 8x4 at (4, 1)", t, (int[]){4, 1});

    t = tensor(F32, 2, d2, s2, (uint32_t[]){32, 8}, CU_TENSOR_MAP_SWIZZLE_128B);
    store("store 2D f32, 128-byte swizzle, box 32x8 at (16, 20)", t, (int[]){16, 20}, 0);
    t.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
    store("store 2D f32, box 32x8 at (8, 18)", t, (int[]){8, 18}, 0);
    t = tensor(CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, d2, s2, (uint32_t[]){8, 8}, CU_TENSOR_MAP_SWIZZLE_32B);
    store("reduce (add) 2D u32, 32-byte swizzle, box 8x8 at (36, 20)", t, (int[]){36, 20}, 1);

    /* cuTensorMapReplaceAddress: the same map, another tensor. */
    if (wanted("cuTensorMapReplaceAddress, then a load")) {
        Tensor r = tensor(F32, 2, d2, s2, (uint32_t[]){32, 8}, CU_TENSOR_MAP_SWIZZLE_NONE);
        size_t n = tensor_bytes(&r);
        unsigned char *host = malloc(n), *want = malloc(BUF), *got = malloc(BUF);
        fill_pattern(host, n, 9);
        CUdeviceptr a, b, out;
        CHECK(cuMemAlloc(&a, n));
        CHECK(cuMemAlloc(&b, n));
        CHECK(cuMemAlloc(&out, BUF));
        CHECK(cuMemcpyHtoD(b, host, n));
        CUtensorMap m __attribute__((aligned(64)));
        CHECK(encode(&m, &r, a));
        CHECK(cuTensorMapReplaceAddress(&m, (void *)b));
        memset(want, FILLER, BUF);
        Io io = {host, want};
        each(&r, (int[]){4, 2}, load_one, &io);
        unsigned bytes = (unsigned)box_bytes(&r);
        int c[5] = {4, 2, 0, 0, 0};
        void *args[] = {&m, &out, &bytes, &c[0], &c[1], &c[2], &c[3], &c[4]};
        launch_block(mod, "load2", 256, 1, args);
        CHECK(cuMemcpyDtoH(got, out, BUF));
        compare("cuTensorMapReplaceAddress, then a load", got, want, BUF);
        EXPECT(cuTensorMapReplaceAddress(&m, (void *)(b + 8)), CUDA_ERROR_INVALID_VALUE);
        CHECK(cuMemFree(a));
        CHECK(cuMemFree(b));
        CHECK(cuMemFree(out));
        free(host), free(want), free(got);
    }

    /* A map copied to global memory by tensormap.cp_fenceproxy, and a load that reads it there. */
    {
        Tensor r = tensor(F32, 2, d2, s2, (uint32_t[]){32, 8}, CU_TENSOR_MAP_SWIZZLE_128B);
        published("a map published to global memory, then a load through it", r, r, 0, (int[]){8, 5});
        /* Another tensor (every other row of a 40 x 12 array: a row stride of 320 bytes), a box of 4
         * rows, set by tensormap.replace in shared memory before the map is published. */
        r.swizzle = CU_TENSOR_MAP_SWIZZLE_NONE;
        Tensor q = tensor(F32, 2, (uint64_t[]){40, 12}, (uint64_t[]){320}, (uint32_t[]){32, 4}, CU_TENSOR_MAP_SWIZZLE_NONE);
        published("tensormap.replace of four fields, then a load through the map", r, q, 1, (int[]){8, 9});
    }

    /* What cuTensorMapEncodeTiled refuses (cuda.h's requirements). */
    if (wanted("cuTensorMapEncodeTiled's refusals")) {
        CUdeviceptr g;
        CHECK(cuMemAlloc(&g, 1 << 16));
        static CUtensorMap maps[2] __attribute__((aligned(64)));
        Tensor ok = tensor(F32, 2, d2, s2, (uint32_t[]){32, 8}, CU_TENSOR_MAP_SWIZZLE_NONE), bad;
        EXPECT(encode(&maps[0], &ok, g), CUDA_SUCCESS);
        EXPECT(encode(&maps[0], &ok, g + 4), CUDA_ERROR_INVALID_VALUE); /* address not 16-byte aligned */
        /* A map that is not 64-byte aligned: cuda.h requires it, but an H200's driver takes it. */
        EXPECT(encode((CUtensorMap *)((char *)&maps[0] + 16), &ok, g), CUDA_SUCCESS);
        bad = ok, bad.strides[1] = 168;
        EXPECT(encode(&maps[0], &bad, g), CUDA_ERROR_INVALID_VALUE); /* stride not a multiple of 16 */
        bad = ok, bad.box[1] = 257;
        EXPECT(encode(&maps[0], &bad, g), CUDA_ERROR_INVALID_VALUE); /* box over 256 */
        bad = ok, bad.box[0] = 3;
        EXPECT(encode(&maps[0], &bad, g), CUDA_ERROR_INVALID_VALUE); /* inner box of 12 bytes */
        bad = ok, bad.box[0] = 16, bad.swizzle = CU_TENSOR_MAP_SWIZZLE_32B;
        EXPECT(encode(&maps[0], &bad, g), CUDA_ERROR_INVALID_VALUE); /* 64 bytes in a 32-byte swizzle */
        bad = ok, bad.dtype = CU_TENSOR_MAP_DATA_TYPE_UINT32, bad.nan_fill = 1;
        EXPECT(encode(&maps[0], &bad, g), CUDA_ERROR_INVALID_VALUE); /* NaN fill of integers */
        bad = ok, bad.estride[1] = 9;
        EXPECT(encode(&maps[0], &bad, g), CUDA_ERROR_INVALID_VALUE); /* traversal stride over 8 */
        bad = ok, bad.dims[1] = 0;
        EXPECT(encode(&maps[0], &bad, g), CUDA_ERROR_INVALID_VALUE); /* empty dimension */
        bad = ok, bad.rank = 6;
        EXPECT(encode(&maps[0], &bad, g), CUDA_ERROR_INVALID_VALUE); /* rank 6 */
        printf("%-64s ok\n", "cuTensorMapEncodeTiled's refusals");
        CHECK(cuMemFree(g));
    }
    /* Probes run by name only (tests/gpu): a load whose box starts between 16-byte boundaries, and
     * stores before the tensor's start. */
    if (only != NULL) {
        Tensor p = tensor(F32, 2, d2, s2, (uint32_t[]){32, 8}, CU_TENSOR_MAP_SWIZZLE_NONE);
        load_or("probe: 2D f32 load at (1, 0)", p, (int[]){1, 0}, CUDA_ERROR_ILLEGAL_INSTRUCTION);
        load_or("probe: 2D f32 load at (-4, 0)", p, (int[]){-4, 0}, CUDA_SUCCESS);
        load_or("probe: 2D f32 load at (-1, 0)", p, (int[]){-1, 0}, CUDA_ERROR_ILLEGAL_INSTRUCTION);
        Tensor u = tensor(CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, (uint64_t[]){100}, NULL, (uint32_t[]){48}, 0);
        load_or("probe: 1D u8 load at 70", u, (int[]){70}, CUDA_ERROR_ILLEGAL_INSTRUCTION);
        store_or("probe: 2D f32 store at (-4, 0)", p, (int[]){-4, 0}, 0, CUDA_ERROR_ILLEGAL_INSTRUCTION);
        store_or("probe: 2D f32 store at (0, -2)", p, (int[]){0, -2}, 0, CUDA_ERROR_ILLEGAL_INSTRUCTION);
        Tensor q = tensor(CU_TENSOR_MAP_DATA_TYPE_UINT32, 2, d2, s2, (uint32_t[]){8, 8}, CU_TENSOR_MAP_SWIZZLE_NONE);
        store_or("probe: 2D u32 reduction at (-8, 0)", q, (int[]){-8, 0}, 1, CUDA_ERROR_ILLEGAL_INSTRUCTION);
        store_or("probe: 2D u32 reduction at (36, 22)", q, (int[]){36, 22}, 1, CUDA_SUCCESS);
    }
    /* A box larger than the kernel's shared memory ends the launch with an illegal address, as on an
     * H200 (make test runs it by name). */
    if (only != NULL) {
        Tensor big = tensor(F32, 2, (uint64_t[]){64, 64}, (uint64_t[]){256}, (uint32_t[]){64, 64}, 0);
        load_or("a box larger than the shared buffer", big, (int[]){0, 0}, CUDA_ERROR_ILLEGAL_ADDRESS);
    }
    /* The last check: a box whose first byte is not 16-byte aligned ends the launch, as on an H200. */
    {
        Tensor p = tensor(F32, 2, d2, s2, (uint32_t[]){32, 8}, CU_TENSOR_MAP_SWIZZLE_NONE);
        load_or("a load whose box starts between 16-byte boundaries (2, 1)", p, (int[]){2, 1},
                CUDA_ERROR_ILLEGAL_INSTRUCTION);
    }
    if (!faulted) CHECK(cuModuleUnload(mod));
    CHECK(cuCtxDestroy(ctx));
    if (failures) return 1;
    printf("TMA VERIFIED\n");
    return 0;
}
