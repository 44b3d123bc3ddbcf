/* Texture and surface references (the pre-CUDA-12 API PyCUDA uses): a module's .texref and .surfref
 * variables bound with cuModuleGetTexRef/cuTexRefSetArray/cuTexRefSetAddress/cuSurfRefSetArray, read
 * directly and through a register holding the reference (indirect access), rebound and reconfigured
 * between launches, and the getters and refusals. Prints TEXREFS VERIFIED or stops at the first
 * difference. Usage: texrefs (no arguments). */
#include "driver_util.h"
#include <string.h>

/* The API is deprecated, which is what this program tests. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static const char *PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".global .texref tr;\n"
    ".global .surfref sr;\n"
    /* fetch(x, y, out): out[0..4] = tex.2d [tr] at (x, y), out[4] = its width (txq). */
    ".visible .entry fetch(.param .f32 x, .param .f32 y, .param .u64 out) {\n"
    " .reg .f32 %f<8>; .reg .u32 %r<2>; .reg .u64 %rd<2>;\n"
    " ld.param.f32 %f1, [x]; ld.param.f32 %f2, [y]; ld.param.u64 %rd1, [out];\n"
    " tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [tr, {%f1, %f2}];\n"
    " txq.width.b32 %r1, [tr];\n"
    " st.global.v4.f32 [%rd1], {%f3, %f4, %f5, %f6}; st.global.u32 [%rd1+16], %r1;\n"
    " ret;\n}\n"
    /* indirect(i, out): the reference through a register; out[0..4] = tex.1d [%rd] at integer i. */
    ".visible .entry indirect(.param .u32 i, .param .u64 out) {\n"
    " .reg .u32 %r<6>; .reg .u64 %rd<3>;\n"
    " ld.param.u32 %r1, [i]; ld.param.u64 %rd1, [out]; mov.u64 %rd2, tr;\n"
    " tex.1d.v4.u32.s32 {%r2, %r3, %r4, %r5}, [%rd2, {%r1}];\n"
    " st.global.v4.u32 [%rd1], {%r2, %r3, %r4, %r5};\n"
    " ret;\n}\n"
    /* paint(): thread (x, y) stores x + 10 * y at element (x, y) of [sr] (floats). */
    ".visible .entry paint() {\n"
    " .reg .u32 %r<6>; .reg .f32 %f<2>;\n"
    " mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y; mad.lo.u32 %r3, %r2, 10, %r1; cvt.rn.f32.u32 %f1, %r3;\n"
    " shl.b32 %r4, %r1, 2;\n"
    " sust.b.2d.b32.trap [sr, {%r4, %r2}], %f1;\n"
    " ret;\n}\n";

static CUmodule mod;
static CUdeviceptr out;

static void run(const char *name, unsigned bx, unsigned by, void **args) { launch_block(mod, name, bx, by, args); }

static void fetch(float x, float y, float *got) {
    void *args[] = {&x, &y, &out};
    run("fetch", 1, 1, args);
    CHECK(cuMemcpyDtoH(got, out, 20));
}

int main(void) {
    context_on_device0();
    CHECK(cuModuleLoadData(&mod, PTX));
    CHECK(cuMemAlloc(&out, 64));
    CUtexref tr, again;
    CHECK(cuModuleGetTexRef(&tr, mod, "tr"));
    CHECK(cuModuleGetTexRef(&again, mod, "tr"));
    ASSERT(tr == again);
    EXPECT(cuModuleGetTexRef(&again, mod, "sr"), CUDA_ERROR_NOT_FOUND); /* a surface reference */
    EXPECT(cuModuleGetTexRef(&again, mod, "nothing"), CUDA_ERROR_NOT_FOUND);

    /* A 4 x 3 float array: texel (x, y) = 4 * y + x. */
    float img[12];
    for (int i = 0; i < 12; i++) img[i] = (float)i;
    CUDA_ARRAY_DESCRIPTOR ad = {4, 3, CU_AD_FORMAT_FLOAT, 1};
    CUarray a;
    CHECK(cuArrayCreate(&a, &ad));
    array_copy(a, img, 4 * 4, 3, 1, 1);
    EXPECT(cuTexRefSetArray(tr, a, 0), CUDA_ERROR_INVALID_VALUE); /* the flag CUDA requires */
    CHECK(cuTexRefSetArray(tr, a, CU_TRSA_OVERRIDE_FORMAT));
    CHECK(cuTexRefSetAddressMode(tr, 0, CU_TR_ADDRESS_MODE_CLAMP));
    CHECK(cuTexRefSetAddressMode(tr, 1, CU_TR_ADDRESS_MODE_CLAMP));
    float got[5];
    /* Point sampling by default. */
    fetch(2.5f, 1.5f, got);
    ASSERT(got[0] == 6.0f && got[3] == 0.0f); /* a channel the format lacks: 0 */
    ASSERT(((unsigned *)got)[4] == 4);
    /* Linear filtering at a texel corner: the mean of four texels. */
    CHECK(cuTexRefSetFilterMode(tr, CU_TR_FILTER_MODE_LINEAR));
    fetch(2.0f, 1.0f, got);
    ASSERT(got[0] == (1 + 2 + 5 + 6) / 4.0f);
    /* Normalised coordinates: the centre of the image. */
    CHECK(cuTexRefSetFlags(tr, CU_TRSF_NORMALIZED_COORDINATES));
    fetch(0.5f, 0.5f, got);
    ASSERT(got[0] == (5 + 6) / 2.0f);
    CUarray a_back;
    CHECK(cuTexRefGetArray(&a_back, tr));
    ASSERT(a_back == a);
    CUfilter_mode fm;
    CHECK(cuTexRefGetFilterMode(&fm, tr));
    ASSERT(fm == CU_TR_FILTER_MODE_LINEAR);
    CUarray_format fmt;
    int ch;
    CHECK(cuTexRefGetFormat(&fmt, &ch, tr));
    ASSERT(fmt == CU_AD_FORMAT_FLOAT && ch == 1);
    unsigned flags;
    CHECK(cuTexRefGetFlags(&flags, tr));
    ASSERT(flags == CU_TRSF_NORMALIZED_COORDINATES);

    /* Rebound to linear memory of uchar4 read as integers, through a register. */
    unsigned char bytes[64];
    for (int i = 0; i < 64; i++) bytes[i] = (unsigned char)(3 * i);
    CUdeviceptr lin;
    CHECK(cuMemAlloc(&lin, sizeof bytes));
    CHECK(cuMemcpyHtoD(lin, bytes, sizeof bytes));
    size_t offset = 99;
    CHECK(cuTexRefSetAddress(&offset, tr, lin, sizeof bytes));
    ASSERT(offset == 0);
    CHECK(cuTexRefSetFormat(tr, CU_AD_FORMAT_UNSIGNED_INT8, 4));
    CHECK(cuTexRefSetFlags(tr, CU_TRSF_READ_AS_INTEGER));
    CHECK(cuTexRefSetFilterMode(tr, CU_TR_FILTER_MODE_POINT));
    unsigned i = 5, u[4];
    void *ind[] = {&i, &out};
    run("indirect", 1, 1, ind);
    CHECK(cuMemcpyDtoH(u, out, 16));
    ASSERT(u[0] == 60 && u[1] == 63 && u[2] == 66 && u[3] == 69);
    CUdeviceptr where;
    CHECK(cuTexRefGetAddress(&where, tr));
    ASSERT(where == lin);
    /* A refused binding (less than one texel) changes nothing. */
    EXPECT(cuTexRefSetAddress(&offset, tr, lin + 8, 2), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuTexRefGetAddress(&where, tr));
    ASSERT(where == lin);
    run("indirect", 1, 1, ind);
    CHECK(cuMemcpyDtoH(u, out, 16));
    ASSERT(u[0] == 60);
    /* A reference is no variable to cuModuleGetGlobal. */
    CUdeviceptr gp;
    size_t gsize;
    EXPECT(cuModuleGetGlobal(&gp, &gsize, mod, "tr"), CUDA_ERROR_NOT_FOUND);

    /* A surface reference on an array made for surfaces. */
    CUsurfref sr;
    CHECK(cuModuleGetSurfRef(&sr, mod, "sr"));
    CUDA_ARRAY3D_DESCRIPTOR sd = {5, 3, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    CUarray plain, surf;
    CHECK(cuArray3DCreate(&plain, &sd));
    CHECK(cuSurfRefSetArray(sr, plain, 0)); /* without SURFACE_LDST too, as an H200's surface objects */
    sd.Flags = CUDA_ARRAY3D_SURFACE_LDST;
    CHECK(cuArray3DCreate(&surf, &sd));
    CHECK(cuSurfRefSetArray(sr, surf, 0));
    run("paint", 5, 3, NULL);
    float painted[15];
    array_copy(surf, painted, 5 * 4, 3, 1, 0);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 5; x++) ASSERT(painted[5 * y + x] == (float)(x + 10 * y));
    CUarray s_back;
    CHECK(cuSurfRefGetArray(&s_back, sr));
    ASSERT(s_back == surf);

    /* A reference no one bound ends its launch with an illegal address. */
    CUmodule fresh;
    CHECK(cuModuleLoadData(&fresh, PTX));
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, fresh, "fetch"));
    float x = 0, y = 0;
    void *args[] = {&x, &y, &out};
    CHECK(cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    printf("TEXREFS VERIFIED\n");
    return 0;
}
