/* Textures and surfaces through the driver API, beyond what texture_probe measures on a GPU: surface
 * stores and loads in every out-of-bounds mode, 3D and layered arrays with copies at offsets, textures
 * over linear and pitched device memory, cubemaps, mipmaps, queries, the driver's refusals, and a surface
 * access out of bounds under .trap ending its launch. Prints TEXTURES VERIFIED or stops at the first difference.
 * Usage: textures (no arguments; the kernels are below). */
#include "driver_util.h"
#include <string.h>

static const char *PTX =
    ".version 8.1\n.target sm_75\n.address_size 64\n"
    /* surf_fill(s, w, h): each thread stores x * 100 + y at element (x, y) of a 2D float surface,
     * then reads its neighbour to the right back with .zero and .clamp into out[2 * i], out[2 * i + 1]. */
    ".visible .entry surf_fill(.param .u64 s, .param .u32 w, .param .u32 h, .param .u64 out) {\n"
    " .reg .u32 %r<12>; .reg .u64 %rd<6>; .reg .f32 %f<4>; .reg .pred %p;\n"
    " mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y; ld.param.u64 %rd1, [s];\n"
    " ld.param.u32 %r3, [w]; ld.param.u32 %r4, [h];\n"
    " mul.lo.u32 %r5, %r1, 100; add.u32 %r5, %r5, %r2; cvt.rn.f32.u32 %f1, %r5;\n"
    " shl.b32 %r6, %r1, 2;\n"
    " sust.b.2d.b32.trap [%rd1, {%r6, %r2}], %f1;\n"
    " bar.sync 0;\n"
    " add.u32 %r7, %r6, 4;\n"
    " suld.b.2d.b32.zero %r8, [%rd1, {%r7, %r2}];\n"
    " suld.b.2d.b32.clamp %r9, [%rd1, {%r7, %r2}];\n"
    " mad.lo.u32 %r10, %r2, %r3, %r1; mul.wide.u32 %rd2, %r10, 8; ld.param.u64 %rd3, [out]; add.u64 %rd3, %rd3, %rd2;\n"
    " st.global.v2.u32 [%rd3], {%r8, %r9};\n"
    " ret;\n}\n"
    /* fetch_i(t, x, y, z, out): out[0..4] = tex.3d (integer coordinates, element reads). */
    ".visible .entry fetch3d(.param .u64 t, .param .u32 x, .param .u32 y, .param .u32 z, .param .u64 out) {\n"
    " .reg .u32 %r<8>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u32 %r1, [x]; ld.param.u32 %r2, [y]; ld.param.u32 %r3, [z];\n"
    " tex.3d.v4.u32.s32 {%r4, %r5, %r6, %r7}, [%rd1, {%r1, %r2, %r3, %r3}];\n"
    " ld.param.u64 %rd2, [out]; st.global.v4.u32 [%rd2], {%r4, %r5, %r6, %r7};\n"
    " ret;\n}\n"
    /* lerp3d(t, x, y, z, out): out[0] = tex.3d with float coordinates. */
    ".visible .entry lerp3d(.param .u64 t, .param .f32 x, .param .f32 y, .param .f32 z, .param .u64 out) {\n"
    " .reg .f32 %f<8>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.f32 %f1, [x]; ld.param.f32 %f2, [y]; ld.param.f32 %f3, [z];\n"
    " tex.3d.v4.f32.f32 {%f4, %f5, %f6, %f7}, [%rd1, {%f1, %f2, %f3, %f3}];\n"
    " ld.param.u64 %rd2, [out]; st.global.f32 [%rd2], %f4;\n"
    " ret;\n}\n"
    /* layer(t, l, x, y, out): out[0] = tex.a2d at layer l (float coordinates). */
    ".visible .entry layer(.param .u64 t, .param .u32 l, .param .f32 x, .param .f32 y, .param .u64 out) {\n"
    " .reg .f32 %f<8>; .reg .u32 %r<2>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u32 %r1, [l]; ld.param.f32 %f1, [x]; ld.param.f32 %f2, [y];\n"
    " tex.a2d.v4.f32.f32 {%f4, %f5, %f6, %f7}, [%rd1, {%r1, %f1, %f2, %f2}];\n"
    " ld.param.u64 %rd2, [out]; st.global.f32 [%rd2], %f4;\n"
    " ret;\n}\n"
    /* sample1d(t, x, out): out[0] = tex.1d with a float coordinate. */
    ".visible .entry sample1d(.param .u64 t, .param .f32 x, .param .u64 out) {\n"
    " .reg .f32 %f<6>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.f32 %f1, [x];\n"
    " tex.1d.v4.f32.f32 {%f2, %f3, %f4, %f5}, [%rd1, {%f1}];\n"
    " ld.param.u64 %rd2, [out]; st.global.f32 [%rd2], %f2;\n"
    " ret;\n}\n"
    /* texel2d(t, i, out): out[0] = tex.level.2d with integer coordinates (i, 0) at level 0, as
     * warp-lang reads the texels of a 1D texture. */
    ".visible .entry texel2d(.param .u64 t, .param .u32 i, .param .u64 out) {\n"
    " .reg .f32 %f<5>; .reg .u32 %r<3>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u32 %r1, [i]; mov.u32 %r2, 0;\n"
    " tex.level.2d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [%rd1, {%r1, %r2}], 0f00000000;\n"
    " ld.param.u64 %rd2, [out]; st.global.f32 [%rd2], %f1;\n"
    " ret;\n}\n"
    /* fetch1d(t, i, out): out[0..4] = tex.1d with an integer coordinate (tex1Dfetch). */
    ".visible .entry fetch1d(.param .u64 t, .param .u32 i, .param .u64 out) {\n"
    " .reg .u32 %r<8>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u32 %r1, [i];\n"
    " tex.1d.v4.s32.s32 {%r4, %r5, %r6, %r7}, [%rd1, {%r1}];\n"
    " ld.param.u64 %rd2, [out]; st.global.v4.u32 [%rd2], {%r4, %r5, %r6, %r7};\n"
    " ret;\n}\n"
    /* fetch2d(t, x, y, out): out[0..4] = tex.2d, float coordinates and results. */
    ".visible .entry fetch2d(.param .u64 t, .param .f32 x, .param .f32 y, .param .u64 out) {\n"
    " .reg .f32 %f<8>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.f32 %f1, [x]; ld.param.f32 %f2, [y];\n"
    " tex.2d.v4.f32.f32 {%f4, %f5, %f6, %f7}, [%rd1, {%f1, %f2}];\n"
    " ld.param.u64 %rd2, [out]; st.global.v4.f32 [%rd2], {%f4, %f5, %f6, %f7};\n"
    " ret;\n}\n"
    /* queries(t, s, out): the texture's and the surface's sizes (the queries NVIDIA's driver compiles
     * for objects; see MORE_QUERIES). */
    ".visible .entry queries(.param .u64 t, .param .u64 s, .param .u64 out) {\n"
    " .reg .u32 %r<8>; .reg .u64 %rd<4>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [s]; ld.param.u64 %rd3, [out];\n"
    " txq.width.b32 %r1, [%rd1]; txq.height.b32 %r2, [%rd1]; txq.depth.b32 %r3, [%rd1];\n"
    " suq.width.b32 %r4, [%rd2]; suq.height.b32 %r5, [%rd2]; suq.depth.b32 %r6, [%rd2];\n"
    " st.global.v2.u32 [%rd3], {%r1, %r2}; st.global.v2.u32 [%rd3+8], {%r3, %r4};\n"
    " st.global.v2.u32 [%rd3+16], {%r5, %r6};\n"
    " ret;\n}\n"
    /* surf_layer(s, l, v): stores v at element (1, 1) of layer l of a layered 2D surface of floats. */
    ".visible .entry surf_layer(.param .u64 s, .param .u32 l, .param .f32 v) {\n"
    " .reg .u32 %r<4>; .reg .u64 %rd<2>; .reg .f32 %f<2>;\n"
    " ld.param.u64 %rd1, [s]; ld.param.u32 %r1, [l]; ld.param.f32 %f1, [v]; mov.u32 %r2, 4; mov.u32 %r3, 1;\n"
    " sust.b.a2d.b32.trap [%rd1, {%r1, %r2, %r3, %r3}], %f1;\n"
    " ret;\n}\n"
    /* cube(t, i, x, y, z, out): out[0] = tex.acube of cube i in direction (x, y, z); out[1] =
     * component r of the gather (tld4.r.cube) of cube 0. */
    ".visible .entry cube(.param .u64 t, .param .u32 i, .param .f32 x, .param .f32 y, .param .f32 z, .param .u64 out) {\n"
    " .reg .f32 %f<12>; .reg .u32 %r<2>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u32 %r1, [i]; ld.param.f32 %f1, [x]; ld.param.f32 %f2, [y]; ld.param.f32 %f3, [z];\n"
    " tex.acube.v4.f32.f32 {%f4, %f5, %f6, %f7}, [%rd1, {%r1, %f1, %f2, %f3}];\n"
    " tld4.r.cube.v4.f32.f32 {%f8, %f9, %f10, %f11}, [%rd1, {%f1, %f2, %f3, %f3}];\n"
    " ld.param.u64 %rd2, [out]; st.global.f32 [%rd2], %f4; st.global.v4.f32 [%rd2+16], {%f8, %f9, %f10, %f11};\n"
    " ret;\n}\n"
    /* mip(t, lod, gx, out): out[0] = tex.level.2d at the centre and LOD lod; out[1] = tex.grad.2d at
     * the centre with gradients (gx, 0) and (0, 0). */
    ".visible .entry mip(.param .u64 t, .param .f32 lod, .param .f32 gx, .param .u64 out) {\n"
    " .reg .f32 %f<12>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.f32 %f1, [lod]; ld.param.f32 %f2, [gx]; mov.f32 %f3, 0f3F000000; mov.f32 %f4, 0f00000000;\n"
    " tex.level.2d.v4.f32.f32 {%f5, %f6, %f7, %f8}, [%rd1, {%f3, %f3}], %f1;\n"
    " tex.grad.2d.v4.f32.f32 {%f9, %f10, %f11, %f6}, [%rd1, {%f3, %f3}], {%f2, %f4}, {%f4, %f4};\n"
    " ld.param.u64 %rd2, [out]; st.global.f32 [%rd2], %f5; st.global.f32 [%rd2+4], %f9;\n"
    " ret;\n}\n"
    /* sred(s): 8 threads reduce into a 1D surface of 20 u32 (the test below gives the old values):
     * thread i adds 3 to element i; all min (.s32) i-4 into 8, max i*7 into 9, and ~(1<<i) into 10;
     * or 1<<(i+4) into 11 and min 0xfffffff0+i into 12 by sample address (.p: the format, UINT32,
     * makes it unsigned); max i<<33 into the u64 at byte 64; max i into byte 400 clamped (element
     * 19); add 1000 at byte 400 under .zero (dropped). */
    ".visible .entry sred(.param .u64 s) {\n"
    " .reg .u32 %r<8>; .reg .u64 %rd<4>;\n"
    " ld.param.u64 %rd1, [s]; mov.u32 %r1, %tid.x; shl.b32 %r2, %r1, 2;\n"
    " sured.b.add.1d.u32.trap [%rd1, {%r2}], 3;\n"
    " sub.u32 %r3, %r1, 4; mov.u32 %r4, 32; sured.b.min.1d.s32.trap [%rd1, {%r4}], %r3;\n"
    " mul.lo.u32 %r3, %r1, 7; mov.u32 %r4, 36; sured.b.max.1d.u32.trap [%rd1, {%r4}], %r3;\n"
    " shl.b32 %r3, 1, %r1; not.b32 %r3, %r3; mov.u32 %r4, 40; sured.b.and.1d.b32.trap [%rd1, {%r4}], %r3;\n"
    " add.u32 %r5, %r1, 4; shl.b32 %r3, 1, %r5; mov.u32 %r4, 11; sured.p.or.1d.b32.trap [%rd1, {%r4}], %r3;\n"
    " add.u32 %r3, %r1, 0xfffffff0; mov.u32 %r4, 12; sured.p.min.1d.b32.trap [%rd1, {%r4}], %r3;\n"
    " cvt.u64.u32 %rd2, %r1; shl.b64 %rd2, %rd2, 33; mov.u32 %r4, 64; sured.b.max.1d.u64.trap [%rd1, {%r4}], %rd2;\n"
    " mov.u32 %r4, 400; sured.b.max.1d.u32.clamp [%rd1, {%r4}], %r1;\n"
    " sured.b.add.1d.u32.zero [%rd1, {%r4}], 1000;\n"
    " ret;\n}\n"
    /* trap(s): a store one element past the surface's end under .trap. */
    ".visible .entry trap(.param .u64 s, .param .u32 x) {\n"
    " .reg .u32 %r<3>; .reg .u64 %rd<2>;\n"
    " ld.param.u64 %rd1, [s]; ld.param.u32 %r1, [x]; mov.u32 %r2, 0;\n"
    " sust.b.2d.b32.trap [%rd1, {%r1, %r2}], %r2;\n"
    " ret;\n}\n";

/* The other texture and surface queries, valid PTX that ptxas compiles and ptx-jit runs, but that
 * NVIDIA's driver (an H200, 580.159.04) refuses for objects: a kernel with one of these txq
 * queries fails at its lookup (CUDA_ERROR_NOT_FOUND; at load when loading is eager), a module with
 * one of these suq queries at load (CUDA_ERROR_NOT_SUPPORTED). The linter warns (P0510). */
static const char *MORE_TXQ =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry more_txq(.param .u64 t, .param .u64 out) {\n"
    " .reg .u32 %r<8>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [out];\n"
    " txq.normalized_coords.b32 %r1, [%rd1]; txq.filter_mode.b32 %r2, [%rd1]; txq.array_size.b32 %r3, [%rd1];\n"
    " txq.num_mipmap_levels.b32 %r4, [%rd1]; txq.channel_data_type.b32 %r5, [%rd1];\n"
    " txq.channel_order.b32 %r6, [%rd1];\n"
    " st.global.v2.u32 [%rd2], {%r1, %r2}; st.global.v2.u32 [%rd2+8], {%r3, %r4};\n"
    " st.global.v2.u32 [%rd2+16], {%r5, %r6};\n"
    " ret;\n}\n";
static const char *MORE_SUQ =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry more_suq(.param .u64 s, .param .u64 out) {\n"
    " .reg .u32 %r<6>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [s]; ld.param.u64 %rd2, [out];\n"
    " suq.channel_data_type.b32 %r1, [%rd1]; suq.channel_order.b32 %r2, [%rd1];\n"
    " suq.array_size.b32 %r3, [%rd1]; suq.memory_layout.b32 %r4, [%rd1];\n"
    " st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};\n"
    " ret;\n}\n";

static CUmodule mod;
static CUdeviceptr out;

/* The queries of MORE_TXQ and MORE_SUQ: run on ptx-jit, refused by NVIDIA's driver. */
static void more_queries(CUtexObject t, CUsurfObject s) {
    char name[256];
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDeviceGetName(name, sizeof name, dev));
    CUmodule m;
    CUfunction k;
    if (!strstr(name, "ptx-jit")) {
        CUmoduleLoadingMode mode;
        CHECK(cuModuleGetLoadingMode(&mode));
        if (mode == CU_MODULE_EAGER_LOADING) {
            EXPECT(cuModuleLoadData(&m, MORE_TXQ), CUDA_ERROR_NOT_FOUND);
        } else {
            CHECK(cuModuleLoadData(&m, MORE_TXQ));
            EXPECT(cuModuleGetFunction(&k, m, "more_txq"), CUDA_ERROR_NOT_FOUND);
        }
        EXPECT(cuModuleLoadData(&m, MORE_SUQ), CUDA_ERROR_NOT_SUPPORTED);
        printf("the other queries: refused by NVIDIA's driver\n");
        return;
    }
    unsigned u[6];
    CHECK(cuModuleLoadData(&m, MORE_TXQ));
    void *ta[] = {&t, &out};
    launch_block(m, "more_txq", 1, 1, ta);
    CHECK(cuMemcpyDtoH(u, out, 24));
    /* Element coordinates, point filtering, no layers or levels, CU_AD_FORMAT_UNSIGNED_INT32, 2 channels. */
    ASSERT(u[0] == 0 && u[1] == 0 && u[2] == 0 && u[3] == 0 && u[4] == CU_AD_FORMAT_UNSIGNED_INT32 && u[5] == 2);
    CHECK(cuModuleLoadData(&m, MORE_SUQ));
    void *sa[] = {&s, &out};
    launch_block(m, "more_suq", 1, 1, sa);
    CHECK(cuMemcpyDtoH(u, out, 16));
    /* CU_AD_FORMAT_FLOAT, 1 channel, no layers, an array (not linear memory). */
    ASSERT(u[0] == CU_AD_FORMAT_FLOAT && u[1] == 1 && u[2] == 0 && u[3] == 0);
    printf("the other queries: run on ptx-jit (NVIDIA's driver refuses them)\n");
}

static void launch(const char *name, unsigned bx, unsigned by, void **args) { launch_block(mod, name, bx, by, args); }

static CUarray array3d(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch, unsigned flags) {
    CUDA_ARRAY3D_DESCRIPTOR ad = {w, h, d, f, ch, flags};
    CUarray a;
    CHECK(cuArray3DCreate(&a, &ad));
    return a;
}

/* A clamping texture object over `rd`. */
static CUtexObject texture(CUDA_RESOURCE_DESC *rd, CUfilter_mode fm, unsigned flags) {
    return texture_object(rd, CU_TR_ADDRESS_MODE_CLAMP, fm, flags, 0);
}

int main(void) {
    context_on_device0();
    CHECK(cuModuleLoadData(&mod, PTX));
    CHECK(cuMemAlloc(&out, 1 << 16));
    unsigned u[64];
    float f[64];

    /* A surface: 8 x 4 floats written by a kernel, read back by the kernel and by a copy. */
    const unsigned W = 8, H = 4;
    CUarray sa = array3d(W, H, 0, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_SURFACE_LDST);
    CUDA_RESOURCE_DESC srd = array_resource(sa);
    CUsurfObject s;
    CHECK(cuSurfObjectCreate(&s, &srd));
    void *fill_args[] = {&s, (void *)&W, (void *)&H, &out};
    launch("surf_fill", W, H, fill_args);
    float back[8 * 4];
    CUDA_MEMCPY2D cp;
    memset(&cp, 0, sizeof cp);
    cp.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    cp.srcArray = sa;
    cp.dstMemoryType = CU_MEMORYTYPE_HOST;
    cp.dstHost = back;
    cp.dstPitch = W * 4;
    cp.WidthInBytes = W * 4;
    cp.Height = H;
    CHECK(cuMemcpy2D(&cp));
    CHECK(cuMemcpyDtoH(u, out, W * H * 8));
    for (unsigned y = 0; y < H; y++)
        for (unsigned x = 0; x < W; x++) {
            ASSERT(back[y * W + x] == (float)(x * 100 + y));
            float zero, clamp;
            memcpy(&zero, &u[2 * (y * W + x)], 4);
            memcpy(&clamp, &u[2 * (y * W + x) + 1], 4);
            /* Past the row's end: .zero reads 0, .clamp the last element. */
            ASSERT(zero == (x + 1 < W ? (float)((x + 1) * 100 + y) : 0.0f));
            ASSERT(clamp == (float)((x + 1 < W ? x + 1 : W - 1) * 100 + y));
        }
    /* A copy of a region at an offset into the array, and one that does not fit. */
    float patch[2 * 2] = {-1, -2, -3, -4};
    memset(&cp, 0, sizeof cp);
    cp.srcMemoryType = CU_MEMORYTYPE_HOST;
    cp.srcHost = patch;
    cp.srcPitch = 8;
    cp.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    cp.dstArray = sa;
    cp.dstXInBytes = 6 * 4;
    cp.dstY = 2;
    cp.WidthInBytes = 8;
    cp.Height = 2;
    CHECK(cuMemcpy2D(&cp));
    cp.dstXInBytes = 7 * 4;
    EXPECT(cuMemcpy2D(&cp), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyAtoH(f, sa, (3 * W + 6) * 4, 8), CUDA_ERROR_INVALID_VALUE); /* a 2D array */
    memset(&cp, 0, sizeof cp);
    cp.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    cp.srcArray = sa;
    cp.srcXInBytes = 6 * 4;
    cp.srcY = 3;
    cp.dstMemoryType = CU_MEMORYTYPE_HOST;
    cp.dstHost = f;
    cp.dstPitch = 8;
    cp.WidthInBytes = 8;
    cp.Height = 1;
    CHECK(cuMemcpy2D(&cp));
    ASSERT(f[0] == -3 && f[1] == -4);

    /* A 3D array of uint2 written by cuMemcpy3D, read with integer coordinates. */
    CUarray a3 = array3d(4, 3, 2, CU_AD_FORMAT_UNSIGNED_INT32, 2, 0);
    unsigned vol[4 * 3 * 2 * 2];
    for (unsigned i = 0; i < 48; i++) vol[i] = 1000 + i;
    array_copy(a3, vol, 4 * 8, 3, 2, 1);
    CUDA_RESOURCE_DESC r3 = array_resource(a3);
    CUtexObject t3 = texture(&r3, CU_TR_FILTER_MODE_POINT, CU_TRSF_READ_AS_INTEGER);
    unsigned x = 3, y = 2, z = 1;
    void *f3[] = {&t3, &x, &y, &z, &out};
    launch("fetch3d", 1, 1, f3);
    CHECK(cuMemcpyDtoH(u, out, 16));
    unsigned at = ((1 * 3 + 2) * 4 + 3) * 2;
    SHOW("fetch3d (3, 2, 1): %u %u %u %u\n", u[0], u[1], u[2], u[3]);
    ASSERT(u[0] == 1000 + at && u[1] == 1001 + at && u[2] == 0 && u[3] == 0); /* missing channels: 0 */
    /* Out of range along z: integer coordinates read 0, whatever the address mode (an H200). */
    z = 9;
    launch("fetch3d", 1, 1, f3);
    CHECK(cuMemcpyDtoH(u, out, 16));
    SHOW("fetch3d (3, 2, 9): %u %u %u %u\n", u[0], u[1], u[2], u[3]);
    ASSERT(u[0] == 0 && u[1] == 0 && u[2] == 0 && u[3] == 0);
    CUDA_ARRAY3D_DESCRIPTOR got3;
    CHECK(cuArray3DGetDescriptor(&got3, a3));
    ASSERT(got3.Width == 4 && got3.Height == 3 && got3.Depth == 2 && got3.NumChannels == 2);
    CUDA_ARRAY_DESCRIPTOR got2;
    CHECK(cuArrayGetDescriptor(&got2, a3)); /* of a 3D array too, as an H200 answers */
    ASSERT(got2.Width == 4 && got2.Height == 3 && got2.Format == CU_AD_FORMAT_UNSIGNED_INT32 && got2.NumChannels == 2);

    /* Trilinear filtering of a 2x2x2 float cube: at the centre, the mean of the eight corners. */
    CUarray cube = array3d(2, 2, 2, CU_AD_FORMAT_FLOAT, 1, 0);
    float corners[8] = {0, 8, 16, 24, 32, 40, 48, 56};
    array_copy(cube, corners, 8, 2, 2, 1);
    CUDA_RESOURCE_DESC rc = array_resource(cube);
    CUtexObject tc = texture(&rc, CU_TR_FILTER_MODE_LINEAR, 0);
    float fx = 1.0f, fy = 1.0f, fz = 1.0f;
    void *fl[] = {&tc, &fx, &fy, &fz, &out};
    launch("lerp3d", 1, 1, fl);
    CHECK(cuMemcpyDtoH(f, out, 4));
    ASSERT(f[0] == 28.0f);

    /* A layered 2D array: layer l holds the value 10 * l everywhere. */
    CUarray la = array3d(2, 2, 3, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED);
    float layers[12];
    for (int i = 0; i < 12; i++) layers[i] = (float)(10 * (i / 4));
    array_copy(la, layers, 8, 2, 3, 1);
    CUDA_RESOURCE_DESC rl = array_resource(la);
    CUtexObject tl = texture(&rl, CU_TR_FILTER_MODE_LINEAR, 0);
    for (unsigned l = 0; l < 4; l++) {
        float lx = 0.7f, ly = 1.3f;
        void *la_args[] = {&tl, &l, &lx, &ly, &out};
        launch("layer", 1, 1, la_args);
        CHECK(cuMemcpyDtoH(f, out, 4));
        SHOW("layer %u: %g\n", l, f[0]);
        ASSERT(f[0] == (float)(10 * (l < 3 ? l : 2))); /* the layer index clamps */
    }

    /* Surface reductions (sured): see the sred kernel. */
    {
        unsigned init[20] = {10, 20, 30, 40, 50, 60, 70, 80, 5, 20, 0xffff, 0, 100, 0, 0, 0, 5, 0, 0, 1};
        init[16] = 0, init[17] = 5; /* the u64 at byte 64: 5 << 32 */
        CUarray ra = array3d(20, 0, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1, CUDA_ARRAY3D_SURFACE_LDST);
        array_copy(ra, init, sizeof init, 1, 1, 1);
        CUDA_RESOURCE_DESC rr = array_resource(ra);
        CUsurfObject rs;
        CHECK(cuSurfObjectCreate(&rs, &rr));
        void *red_args[] = {&rs};
        launch("sred", 8, 1, red_args);
        unsigned got[20];
        array_copy(ra, got, sizeof got, 1, 1, 0);
        SHOW("sred: %u %u %d %u %#x %#x %u %#x:%#x %u\n", got[0], got[7], (int)got[8], got[9], got[10], got[11],
             got[12], got[17], got[16], got[19]);
        for (int i = 0; i < 8; i++) ASSERT(got[i] == init[i] + 3);
        ASSERT((int)got[8] == -4 && got[9] == 49 && got[10] == 0xff00 && got[11] == 0xff0 && got[12] == 100);
        ASSERT(got[16] == 0 && got[17] == 14 && got[19] == 7); /* 7 << 33 */
        for (int i = 13; i < 16; i++) ASSERT(got[i] == 0);
        ASSERT(got[18] == 0);
        CHECK(cuSurfObjectDestroy(rs));
        CHECK(cuArrayDestroy(ra));
    }

    /* tex.1d on the 3D texture: a geometry that is not the texture's reads 0 (an H200). */
    unsigned two = 2;
    void *row[] = {&t3, &two, &out};
    launch("fetch1d", 1, 1, row);
    CHECK(cuMemcpyDtoH(u, out, 16));
    SHOW("fetch1d of the 3D texture at 2: %u %u %u %u\n", u[0], u[1], u[2], u[3]);
    ASSERT(u[0] == 0 && u[1] == 0 && u[2] == 0 && u[3] == 0);

    /* A layered surface: a store into layer 1 lands there, and nowhere else. */
    CUarray ls = array3d(2, 2, 3, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST);
    float zeros[12] = {0};
    array_copy(ls, zeros, 8, 2, 3, 1);
    CUDA_RESOURCE_DESC rls = array_resource(ls);
    CUsurfObject lsurf;
    CHECK(cuSurfObjectCreate(&lsurf, &rls));
    unsigned one = 1;
    float v = 42.5f;
    void *la_store[] = {&lsurf, &one, &v};
    launch("surf_layer", 1, 1, la_store);
    float got12[12];
    array_copy(ls, got12, 8, 2, 3, 0);
    for (int i = 0; i < 12; i++) ASSERT(got12[i] == (i == 4 + 3 ? 42.5f : 0.0f));

    /* Two cubes of 2 x 2 faces: texel (i, j) of face f of cube c is 100 c + 10 f + 2 j + i. A
     * direction along each axis lands in the middle of its face: linear filtering gives the face's
     * mean, and the gather its four texels counter-clockwise from the lower left. */
    CUarray cubes = array3d(2, 2, 12, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED);
    float faces[48];
    for (int i = 0; i < 48; i++) faces[i] = (float)(100 * (i / 24) + 10 * (i / 4 % 6) + i % 4);
    array_copy(cubes, faces, 8, 2, 12, 1);
    CUDA_RESOURCE_DESC rcube = array_resource(cubes);
    CUtexObject tcube = texture(&rcube, CU_TR_FILTER_MODE_LINEAR, CU_TRSF_NORMALIZED_COORDINATES);
    const float dirs[6][3] = {{3, 0, 0}, {-3, 0, 0}, {0, 2, 0}, {0, -2, 0}, {0, 0, 1}, {0, 0, -1}};
    for (unsigned c = 0; c < 2; c++)
        for (int face = 0; face < 6; face++) {
            float cx = dirs[face][0], cy = dirs[face][1], cz = dirs[face][2];
            void *ca[] = {&tcube, &c, &cx, &cy, &cz, &out};
            launch("cube", 1, 1, ca);
            CHECK(cuMemcpyDtoH(f, out, 32));
            SHOW("cube %u face %d: %g, gather %g %g %g %g\n", c, face, f[0], f[4], f[5], f[6], f[7]);
            ASSERT(f[0] == 100.0f * c + 10.0f * face + 1.5f);
            float base = 10.0f * face;
            ASSERT(f[4] == base + 2 && f[5] == base + 3 && f[6] == base + 1 && f[7] == base);
        }
    CUDA_ARRAY3D_DESCRIPTOR oblong = {2, 3, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP};
    CUarray no_cube;
    EXPECT(cuArray3DCreate(&no_cube, &oblong), CUDA_ERROR_INVALID_VALUE); /* faces must be square */

    /* A mipmapped 4 x 4 float array of 3 levels, filled with 1, 2 and 4, linear between levels. */
    CUDA_ARRAY3D_DESCRIPTOR md = {4, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    CUmipmappedArray mm;
    /* 4 x 4 has 3 levels: asked for 4, an H200 makes 3. */
    CHECK(cuMipmappedArrayCreate(&mm, &md, 4));
    CUarray lv;
    CHECK(cuMipmappedArrayGetLevel(&lv, mm, 2));
    EXPECT(cuMipmappedArrayGetLevel(&lv, mm, 3), CUDA_ERROR_INVALID_VALUE);
    CHECK(cuMipmappedArrayDestroy(mm));
    CHECK(cuMipmappedArrayCreate(&mm, &md, 3));
    CUDA_ARRAY3D_DESCRIPTOR wide = {65536, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    CUmipmappedArray too_wide;
    EXPECT(cuMipmappedArrayCreate(&too_wide, &wide, 1), CUDA_ERROR_INVALID_VALUE); /* past 32768 */
    for (unsigned l = 0; l < 3; l++) {
        CUarray level;
        CHECK(cuMipmappedArrayGetLevel(&level, mm, l));
#ifndef KEEP_GOING /* an H200's driver (580.159.04) accepts it (and the program fails later) */
        EXPECT(cuArrayDestroy(level), CUDA_ERROR_INVALID_VALUE); /* it goes with its mipmap */
#endif
        CUDA_ARRAY3D_DESCRIPTOR ld;
        CHECK(cuArray3DGetDescriptor(&ld, level));
        ASSERT(ld.Width == 4u >> l && ld.Height == 4u >> l);
        float fill[16];
        for (int i = 0; i < 16; i++) fill[i] = (float)(1 << l);
        array_copy(level, fill, ld.Width * 4, ld.Height, 1, 1);
    }
    CUDA_RESOURCE_DESC rm;
    memset(&rm, 0, sizeof rm);
    rm.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY;
    rm.res.mipmap.hMipmappedArray = mm;
    CUDA_TEXTURE_DESC mtd;
    memset(&mtd, 0, sizeof mtd);
    mtd.addressMode[0] = mtd.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
    mtd.filterMode = CU_TR_FILTER_MODE_LINEAR;
    mtd.mipmapFilterMode = CU_TR_FILTER_MODE_LINEAR;
    mtd.maxMipmapLevelClamp = 100;
    mtd.flags = CU_TRSF_NORMALIZED_COORDINATES;
    CUtexObject tm;
    CHECK(cuTexObjectCreate(&tm, &rm, &mtd, NULL));
    /* (LOD, x gradient in normalised units) -> (the level's sample, the gradient's). */
    const float mips[5][4] = {{0, 0.25f, 1, 1}, {1, 0.5f, 2, 2}, {0.5f, 1, 1.5f, 4}, {9, 8, 4, 4}, {-1, 0, 1, 1}};
    for (int i = 0; i < 5; i++) {
        float lod = mips[i][0], gx = mips[i][1];
        void *ma[] = {&tm, &lod, &gx, &out};
        launch("mip", 1, 1, ma);
        CHECK(cuMemcpyDtoH(u, out, 12));
        float by_lod, by_grad;
        memcpy(&by_lod, &u[0], 4);
        memcpy(&by_grad, &u[1], 4);
        SHOW("mip lod %g gx %g: %g %g\n", lod, gx, by_lod, by_grad);
        ASSERT(by_lod == mips[i][2] && by_grad == mips[i][3]);
    }
    CHECK(cuTexObjectDestroy(tm));
    CHECK(cuMipmappedArrayDestroy(mm));

    /* Linear memory as a 1D texture of int2 (tex1Dfetch): 0 past the end, as integer coordinates
     * outside any texture read. */
    CUdeviceptr lin;
    CHECK(cuMemAlloc(&lin, 64 * 8));
    int ints[128];
    for (int i = 0; i < 128; i++) ints[i] = i * (i % 2 ? -1 : 1);
    CHECK(cuMemcpyHtoD(lin, ints, sizeof ints));
    CUDA_RESOURCE_DESC rlin;
    memset(&rlin, 0, sizeof rlin);
    rlin.resType = CU_RESOURCE_TYPE_LINEAR;
    rlin.res.linear.devPtr = lin;
    rlin.res.linear.format = CU_AD_FORMAT_SIGNED_INT32;
    rlin.res.linear.numChannels = 2;
    rlin.res.linear.sizeInBytes = 64 * 8;
    CUtexObject tlin = texture(&rlin, CU_TR_FILTER_MODE_POINT, CU_TRSF_READ_AS_INTEGER);
    for (unsigned i = 0; i < 70; i += 23) {
        void *a1[] = {&tlin, &i, &out};
        launch("fetch1d", 1, 1, a1);
        CHECK(cuMemcpyDtoH(u, out, 16));
        SHOW("linear fetch %u: %d %d %u %u\n", i, (int)u[0], (int)u[1], u[2], u[3]);
        int x0 = i < 64 ? ints[2 * i] : 0, x1 = i < 64 ? ints[2 * i + 1] : 0; /* past the end: 0 */
        ASSERT((int)u[0] == x0 && (int)u[1] == x1 && u[2] == 0 && u[3] == 0);
    }
    /* A misaligned start is refused. */
    rlin.res.linear.devPtr = lin + 4;
    CUtexObject bad;
    CUDA_TEXTURE_DESC td;
    memset(&td, 0, sizeof td);
    EXPECT(cuTexObjectCreate(&bad, &rlin, &td, NULL), CUDA_ERROR_INVALID_VALUE);

    /* Pitched memory of 16-bit unorm texels: normalised-float reads, bilinear at a texel corner (the
     * four weights are 64/256 each: (2 * 65535 * 64 + 128) / 256 rounds to 32768). */
    CUdeviceptr pitched;
    size_t pitch;
    CHECK(cuMemAllocPitch(&pitched, &pitch, 3 * 2, 2, 4));
    unsigned short shorts[2][3] = {{0, 65535, 0}, {65535, 0, 65535}};
    memset(&cp, 0, sizeof cp);
    cp.srcMemoryType = CU_MEMORYTYPE_HOST;
    cp.srcHost = shorts;
    cp.srcPitch = 6;
    cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    cp.dstDevice = pitched;
    cp.dstPitch = pitch;
    cp.WidthInBytes = 6;
    cp.Height = 2;
    CHECK(cuMemcpy2D(&cp));
    CUDA_RESOURCE_DESC rp;
    memset(&rp, 0, sizeof rp);
    rp.resType = CU_RESOURCE_TYPE_PITCH2D;
    rp.res.pitch2D.devPtr = pitched;
    rp.res.pitch2D.format = CU_AD_FORMAT_UNSIGNED_INT16;
    rp.res.pitch2D.numChannels = 1;
    rp.res.pitch2D.width = 3;
    rp.res.pitch2D.height = 2;
    rp.res.pitch2D.pitchInBytes = pitch;
    CUtexObject tp = texture(&rp, CU_TR_FILTER_MODE_LINEAR, 0);
    float px = 1.0f, py = 1.0f;
    void *a2[] = {&tp, &px, &py, &out};
    launch("fetch2d", 1, 1, a2);
    CHECK(cuMemcpyDtoH(f, out, 16));
    SHOW("unorm16 corner: %a %a %a %a\n", f[0], f[1], f[2], f[3]);
    ASSERT(f[0] == 32768.0f / 65535.0f && f[1] == 0.0f && f[2] == 0.0f && f[3] == 0.0f);

    /* Queries. */
    void *qa[] = {&t3, &s, &out};
    launch("queries", 1, 1, qa);
    CHECK(cuMemcpyDtoH(u, out, 24));
    SHOW("queries: texture %u x %u x %u; surface %u x %u x %u\n", u[0], u[1], u[2], u[3], u[4], u[5]);
    ASSERT(u[0] == 4 && u[1] == 3 && u[2] == 2 && u[3] == W && u[4] == H && u[5] == 0); /* 2D: depth 0 */
    more_queries(t3, s);

    /* What the driver refuses. */
    CUarray plain = array3d(4, 4, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
    CUDA_RESOURCE_DESC rplain = array_resource(plain);
    CUsurfObject s2;
    CHECK(cuSurfObjectCreate(&s2, &rplain)); /* without SURFACE_LDST too, as an H200 makes it */
    CHECK(cuSurfObjectDestroy(s2));
    CUarray none;
    CUDA_ARRAY3D_DESCRIPTOR three = {4, 4, 0, CU_AD_FORMAT_FLOAT, 3, 0};
    EXPECT(cuArray3DCreate(&none, &three), CUDA_ERROR_INVALID_VALUE); /* 3 channels */
    CUDA_TEXTURE_DESC got;
    CHECK(cuTexObjectGetTextureDesc(&got, t3));
    ASSERT(got.flags == CU_TRSF_READ_AS_INTEGER && got.filterMode == CU_TR_FILTER_MODE_POINT);
    CUDA_RESOURCE_DESC gotr;
    CHECK(cuSurfObjectGetResourceDesc(&gotr, s));
    ASSERT(gotr.resType == CU_RESOURCE_TYPE_ARRAY && gotr.res.array.hArray == sa);
    CHECK(cuTexObjectDestroy(tlin));
    CHECK(cuArrayDestroy(a3));
#ifndef KEEP_GOING /* an H200's driver checks none of these: it gives 0, 0 and 709 */
    EXPECT(cuTexObjectDestroy(tlin), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuTexObjectDestroy(s), CUDA_ERROR_INVALID_VALUE); /* a surface, not a texture */
    EXPECT(cuArrayDestroy(a3), CUDA_ERROR_INVALID_HANDLE);
#endif

    /* A 1D texture of v[i] = (i + 1)^2, 4 elements. Mirrored, point-sampled at normalised 1.25 and
     * 1.5: positions 5 and 6 in the texel grid, the first elements of the mirrored copy's second and
     * third texels (2 and 1: 9 and 4), as warp-lang's tests expect of GPUs; reflecting the coordinate
     * first would read elements 3 and 2. A 2D texel read of it reads its row. */
    float sq[4] = {1, 4, 9, 16};
    CUarray line = array3d(4, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    CHECK(cuMemcpyHtoA(line, 0, sq, sizeof sq));
    CUDA_RESOURCE_DESC rline = array_resource(line);
    CUtexObject tm1 = texture_object(&rline, CU_TR_ADDRESS_MODE_MIRROR, CU_TR_FILTER_MODE_POINT, CU_TRSF_NORMALIZED_COORDINATES, 0);
    float pos[2] = {1.25f, 1.5f}, want[2] = {9, 4};
    for (int k = 0; k < 2; k++) {
        void *ma[] = {&tm1, &pos[k], &out};
        launch("sample1d", 1, 1, ma);
        CHECK(cuMemcpyDtoH(f, out, 4));
        ASSERT(f[0] == want[k]);
    }
    for (unsigned i = 0; i < 4; i++) {
        void *ta[] = {&tm1, &i, &out};
        launch("texel2d", 1, 1, ta);
        CHECK(cuMemcpyDtoH(f, out, 4));
        ASSERT(f[0] == sq[i]);
    }
    CHECK(cuTexObjectDestroy(tm1));
    CHECK(cuArrayDestroy(line));
    printf("mirror ties and 2D texel reads of a 1D texture verified\n");

    /* A store past the surface's end under .trap ends the launch, as an illegal address. */
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, mod, "trap"));
    unsigned past = W * 4;
    void *ta[] = {&s, &past};
    CHECK(cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, NULL, ta, NULL));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);

    /* In a new context, a destroyed texture's handle names nothing, even once its slot is reused. */
    CUcontext again;
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuCtxCreate(&again, NULL, 0, dev));
    CHECK(cuModuleLoadData(&mod, PTX));
    CHECK(cuMemAlloc(&out, 64));
    CUtexObject reused = texture(&rp, CU_TR_FILTER_MODE_POINT, 0);
    ASSERT(reused != tlin);
    unsigned zero = 0;
    void *stale[] = {&tlin, &zero, &out};
    CUfunction f1;
    CHECK(cuModuleGetFunction(&f1, mod, "fetch1d"));
    CHECK(cuLaunchKernel(f1, 1, 1, 1, 1, 1, 1, 0, NULL, stale, NULL));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);

    /* In a third, a texture whose array was destroyed faults when a kernel reads it, as on an H200
     * (the array's memory is gone; the handle stays until destroyed). */
    CUcontext third;
    CHECK(cuCtxCreate(&third, NULL, 0, dev));
    CHECK(cuModuleLoadData(&mod, PTX));
    CHECK(cuMemAlloc(&out, 64));
    CUarray gone = array3d(4, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0);
    CUDA_RESOURCE_DESC rg = array_resource(gone);
    CUtexObject tg = texture(&rg, CU_TR_FILTER_MODE_POINT, 0);
    CHECK(cuArrayDestroy(gone));
    void *ga[] = {&tg, &zero, &out};
    CHECK(cuModuleGetFunction(&f1, mod, "fetch1d"));
    CHECK(cuLaunchKernel(f1, 1, 1, 1, 1, 1, 1, 0, NULL, ga, NULL));
    EXPECT(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK(cuTexObjectDestroy(tg));
    printf("TEXTURES VERIFIED\n");
    return 0;
}
