/* What the repository's C driver-API programs share: CHECK, which ends the program with the failing
 * call's name and result, EXPECT (a call gives a given result) and ASSERT, which end it likewise (built
 * with -DKEEP_GOING, as tests/gpu/pending_on_device.sh does to learn every answer a GPU gives, they
 * print MISMATCH and go on), read_file, which reads a PTX file whole (NUL-terminated), and
 * launch_block, which runs a kernel as one block and waits, array_copy, which copies a whole 2D or 3D
 * array, array_resource and texture_object, which describe an array and make a texture object, and
 * context_on_device0, which initialises the driver and makes a context on device 0 current. */
#ifndef PTX_JIT_DRIVER_UTIL_H
#define PTX_JIT_DRIVER_UTIL_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        CUresult r_ = (call);                                                        \
        if (r_ != CUDA_SUCCESS) {                                                    \
            const char *name_ = "?";                                                 \
            cuGetErrorName(r_, &name_);                                              \
            fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call, \
                    name_, (int)r_);                                                 \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#ifdef KEEP_GOING
#define FAIL_EXPECTATION() fprintf(stderr, "MISMATCH (going on)\n")
#else
#define FAIL_EXPECTATION() exit(1)
#endif

/* SHOW prints what a check is about to judge, in KEEP_GOING builds only. */
#ifdef KEEP_GOING
#define SHOW(...) fprintf(stderr, __VA_ARGS__)
#else
#define SHOW(...) ((void)0)
#endif

#define EXPECT(call, want)                                                                     \
    do {                                                                                       \
        CUresult r_ = (call);                                                                  \
        if (r_ != (want)) {                                                                    \
            fprintf(stderr, "%s:%d: %s gave %d, expected %d\n", __FILE__, __LINE__, #call, \
                    (int)r_, (int)(want));                                                     \
            FAIL_EXPECTATION();                                                                \
        }                                                                                      \
    } while (0)
#define ASSERT(cond)                                                               \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: %s does not hold\n", __FILE__, __LINE__, #cond); \
            FAIL_EXPECTATION();                                                    \
        }                                                                          \
    } while (0)

static inline char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc(n + 1);
    if (fread(s, 1, n, f) != (size_t)n) { perror(path); exit(1); }
    s[n] = 0;
    fclose(f);
    return s;
}

/* Launches kernel `name` of module `m` as one block of bx x by threads, and waits for it. */
static inline void launch_block(CUmodule m, const char *name, unsigned bx, unsigned by, void **args) {
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, m, name));
    CHECK(cuLaunchKernel(k, 1, 1, 1, bx, by, 1, 0, NULL, args, NULL));
    CHECK(cuCtxSynchronize());
}

/* Copies a whole array of `row` bytes x h rows x d slices (h, d at least 1) from or to host memory
 * with cuMemcpy3D: the driver's cuMemcpyHtoA and cuMemcpyAtoH take 1D arrays only. */
static inline void array_copy(CUarray a, void *host, size_t row, size_t h, size_t d, int to_array) {
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = to_array ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_ARRAY;
    c.dstMemoryType = to_array ? CU_MEMORYTYPE_ARRAY : CU_MEMORYTYPE_HOST;
    if (to_array) {
        c.srcHost = host, c.srcPitch = row, c.srcHeight = h, c.dstArray = a;
    } else {
        c.dstHost = host, c.dstPitch = row, c.dstHeight = h, c.srcArray = a;
    }
    c.WidthInBytes = row;
    c.Height = h;
    c.Depth = d;
    CHECK(cuMemcpy3D(&c));
}

/* A resource description of CUDA array `a`. */
static inline CUDA_RESOURCE_DESC array_resource(CUarray a) {
    CUDA_RESOURCE_DESC rd;
    memset(&rd, 0, sizeof rd);
    rd.resType = CU_RESOURCE_TYPE_ARRAY;
    rd.res.array.hArray = a;
    return rd;
}

/* A texture object over `rd`: one address mode on every axis, a filter mode, CU_TRSF_* flags and a
 * border colour (all four channels). */
static inline CUtexObject texture_object(const CUDA_RESOURCE_DESC *rd, CUaddress_mode am, CUfilter_mode fm,
                                         unsigned flags, float border) {
    CUDA_TEXTURE_DESC td;
    memset(&td, 0, sizeof td);
    td.addressMode[0] = td.addressMode[1] = td.addressMode[2] = am;
    td.filterMode = fm;
    td.flags = flags;
    for (int k = 0; k < 4; k++) td.borderColor[k] = border;
    CUtexObject t;
    CHECK(cuTexObjectCreate(&t, rd, &td, NULL));
    return t;
}

static inline CUcontext context_on_device0(void) {
    CUdevice d;
    CUcontext c;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuCtxCreate(&c, NULL, 0, d));
    return c;
}

#endif
