/* nvJitLink on the CPU backend: links two PTX modules (a kernel calling an .extern function another
 * module defines) with libnvJitLink.so.13, loads the "cubin" it returns with cuModuleLoadData and
 * checks the kernel's results; then checks the errors NVIDIA's library gives for a missing or unknown
 * option, machine code, PTX for a newer architecture than -arch, and LTO-IR when NVIDIA's own
 * nvJitLink is not at hand (PTXJIT_NVJITLINK names a file that does not exist). Built against this
 * project's libnvJitLink.so.13, with nvJitLink.h's prototypes written out (the venv has no header). */
#include "driver_util.h"
#include <stdint.h>

typedef struct nvJitLink *nvJitLinkHandle;
/* nvJitLinkResult; the errors below are those NVIDIA's nvJitLink 13.5 gives for the same calls. */
enum { OK = 0, UNRECOGNIZED_OPTION = 1, MISSING_ARCH = 2, INVALID_INPUT = 3, PTX_COMPILE = 4, INTERNAL = 6, NULL_INPUT = 10 };
enum { INPUT_PTX = 2, INPUT_ANY = 10 };
int nvJitLinkCreate(nvJitLinkHandle *h, uint32_t n, const char **options);
/* What nvJitLink.h of CUDA 13.5 turns nvJitLinkCreate into. */
int __nvJitLinkCreate_13_5(nvJitLinkHandle *h, uint32_t n, const char **options);
int nvJitLinkDestroy(nvJitLinkHandle *h);
int nvJitLinkAddData(nvJitLinkHandle h, int kind, const void *data, size_t size, const char *name);
int nvJitLinkComplete(nvJitLinkHandle h);
int nvJitLinkGetLinkedCubinSize(nvJitLinkHandle h, size_t *size);
int nvJitLinkGetLinkedCubin(nvJitLinkHandle h, void *cubin);
int nvJitLinkGetLinkedPtxSize(nvJitLinkHandle h, size_t *size);
int nvJitLinkGetLinkedPtx(nvJitLinkHandle h, char *ptx);
int nvJitLinkGetErrorLogSize(nvJitLinkHandle h, size_t *size);
int nvJitLinkGetErrorLog(nvJitLinkHandle h, char *log);
int nvJitLinkVersion(unsigned *major, unsigned *minor);

#define LINK(call, want)                                                                     \
    do {                                                                                     \
        int r_ = (call);                                                                     \
        if (r_ != (want)) {                                                                  \
            fprintf(stderr, "%s:%d: %s gave %d, expected %d\n", __FILE__, __LINE__, #call, \
                    r_, (int)(want));                                                        \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static const char *CALLER =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".extern .func (.param .b32 r) triple (.param .b32 x);\n"
    ".visible .entry k(.param .u64 p) {\n"
    "  .reg .b32 %r<4>; .reg .b64 %rd<4>;\n"
    "  ld.param.u64 %rd1, [p];\n  mov.u32 %r1, %tid.x;\n"
    "  mul.wide.u32 %rd2, %r1, 4;\n  add.s64 %rd3, %rd1, %rd2;\n"
    "  { .param .b32 a; .param .b32 r; st.param.b32 [a], %r1;\n"
    "    call (r), triple, (a); ld.param.b32 %r2, [r]; }\n"
    "  st.global.u32 [%rd3], %r2;\n  ret;\n}\n";
static const char *CALLEE =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .func (.param .b32 r) triple (.param .b32 x) {\n"
    "  .reg .b32 %r<3>;\n  ld.param.b32 %r1, [x];\n  mul.lo.s32 %r2, %r1, 3;\n"
    "  st.param.b32 [r], %r2;\n  ret;\n}\n";
static const char *NEWER = ".version 8.6\n.target sm_100\n.address_size 64\n.visible .entry e() { ret; }\n";

/* The error log of `h`, which the caller frees. */
static char *error_log(nvJitLinkHandle h) {
    size_t n = 0;
    LINK(nvJitLinkGetErrorLogSize(h, &n), OK);
    char *s = malloc(n);
    LINK(nvJitLinkGetErrorLog(h, s), OK);
    return s;
}

int main(void) {
    unsigned major = 0, minor = 0;
    LINK(nvJitLinkVersion(&major, &minor), OK);
    printf("nvJitLink %u.%u\n", major, minor);
    ASSERT(major == 13);

    /* Two modules linked, loaded and run. */
    const char *opts[] = {"-arch=sm_80", "-O3"};
    nvJitLinkHandle h;
    LINK(__nvJitLinkCreate_13_5(&h, 2, opts), OK);
    LINK(nvJitLinkAddData(h, INPUT_PTX, CALLER, strlen(CALLER), "caller.ptx"), OK);
    LINK(nvJitLinkAddData(h, INPUT_ANY, CALLEE, strlen(CALLEE) + 1, "callee.ptx"), OK);
    LINK(nvJitLinkComplete(h), OK);
    size_t size = 0;
    LINK(nvJitLinkGetLinkedCubinSize(h, &size), OK);
    char *image = malloc(size);
    LINK(nvJitLinkGetLinkedCubin(h, image), OK);
    size_t ptx_size = 0;
    LINK(nvJitLinkGetLinkedPtxSize(h, &ptx_size), OK);
    char *ptx = malloc(ptx_size);
    LINK(nvJitLinkGetLinkedPtx(h, ptx), OK);
    ASSERT(ptx_size == size && memcmp(ptx, image, size) == 0 && ptx[size - 1] == 0);
    ASSERT(strstr(ptx, ".visible .func (.param .b32 r) triple") && strstr(ptx, ".visible .entry k"));
    free(ptx);
    LINK(nvJitLinkDestroy(&h), OK);
    ASSERT(h == NULL);
    LINK(nvJitLinkComplete(h), NULL_INPUT);
    LINK(nvJitLinkDestroy(&h), NULL_INPUT);

    CUcontext ctx = context_on_device0();
    CUmodule m;
    CHECK(cuModuleLoadData(&m, image));
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, 64 * 4));
    void *args[] = {&d};
    launch_block(m, "k", 64, 1, args);
    int out[64];
    CHECK(cuMemcpyDtoH(out, d, sizeof out));
    for (int i = 0; i < 64; i++) ASSERT(out[i] == 3 * i);
    printf("linked kernel: out[63] = %d\n", out[63]);

    /* Errors, as NVIDIA's library gives them. */
    LINK(nvJitLinkCreate(&h, 0, opts), MISSING_ARCH);
    LINK(nvJitLinkDestroy(&h), OK);
    const char *unknown[] = {"-arch=sm_80", "-fast-math-please"};
    LINK(nvJitLinkCreate(&h, 2, unknown), UNRECOGNIZED_OPTION);
    char *log = error_log(h);
    ASSERT(strstr(log, "-fast-math-please") != NULL);
    printf("unknown option: %s", log);
    free(log);
    /* A handle whose creation failed refuses its inputs. */
    LINK(nvJitLinkAddData(h, INPUT_PTX, CALLEE, strlen(CALLEE), "callee.ptx"), INTERNAL);
    LINK(nvJitLinkDestroy(&h), OK);

    LINK(nvJitLinkCreate(&h, 1, opts), OK);
    static const unsigned char cubin[64] = {0x7f, 'E', 'L', 'F', [18] = 190};
    LINK(nvJitLinkAddData(h, INPUT_ANY, cubin, sizeof cubin, "kernel.cubin"), INVALID_INPUT);
    LINK(nvJitLinkAddData(h, INPUT_PTX, NEWER, strlen(NEWER), "newer.ptx"), PTX_COMPILE);
    log = error_log(h);
    ASSERT(strstr(log, "machine code") && strstr(log, "sm_100"));
    printf("machine code and newer PTX:\n%s", log);
    free(log);
    LINK(nvJitLinkDestroy(&h), OK);

    /* A call nothing defines: an undefined reference, unless the link is relocatable (-r). */
    LINK(nvJitLinkCreate(&h, 1, opts), OK);
    LINK(nvJitLinkAddData(h, INPUT_PTX, CALLER, strlen(CALLER), "caller.ptx"), OK);
    LINK(nvJitLinkComplete(h), PTX_COMPILE);
    log = error_log(h);
    ASSERT(strstr(log, "undefined reference to 'triple'"));
    free(log);
    LINK(nvJitLinkDestroy(&h), OK);
    const char *relocatable[] = {"-arch=sm_80", "-r"};
    LINK(nvJitLinkCreate(&h, 2, relocatable), OK);
    LINK(nvJitLinkAddData(h, INPUT_PTX, CALLER, strlen(CALLER), "caller.ptx"), OK);
    LINK(nvJitLinkComplete(h), OK);
    LINK(nvJitLinkDestroy(&h), OK);
    printf("an undefined reference, and the same link with -r\n");

    /* LTO-IR (only its magic number matters here) with NVIDIA's nvJitLink out of reach. */
    setenv("PTXJIT_NVJITLINK", "/nonexistent/libnvJitLink.so.13", 1);
    const char *lto[] = {"-arch=sm_80", "-lto"};
    LINK(nvJitLinkCreate(&h, 2, lto), OK);
    static const unsigned char ltoir[16] = {0xed, 0x43, 0x4e, 0x7f, 1};
    LINK(nvJitLinkAddData(h, INPUT_ANY, ltoir, sizeof ltoir, "kernel.ltoir"), OK);
    LINK(nvJitLinkComplete(h), INVALID_INPUT);
    log = error_log(h);
    ASSERT(strstr(log, "PTXJIT_NVJITLINK") && strstr(log, "lto=False"));
    printf("LTO-IR without NVIDIA's nvJitLink: %s", log);
    free(log);
    LINK(nvJitLinkDestroy(&h), OK);

    CHECK(cuMemFree(d));
    CHECK(cuModuleUnload(m));
    CHECK(cuCtxDestroy(ctx));
    printf("NVJITLINK VERIFIED\n");
    return 0;
}
