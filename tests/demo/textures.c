/* Textures and surfaces through the driver API, beyond what texture_probe measures on a GPU: surface
 * stores and loads in every out-of-bounds mode, 3D and layered arrays with copies at offsets, textures
 * over linear and pitched device memory, cubemaps, mipmaps, queries, the driver's refusals, and a surface
 * access out of bounds under .trap ending its launch. Prints TEXTURES VERIFIED or stops at the first difference.
 * Usage: textures (no arguments; the kernels are below). */
#include "driver_util.h"
#include <string.h>

static const char *PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
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
    /* queries(t, s, out): txq and suq answers. */
    ".visible .entry queries(.param .u64 t, .param .u64 s, .param .u64 out) {\n"
    " .reg .u32 %r<12>; .reg .u64 %rd<4>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [s]; ld.param.u64 %rd3, [out];\n"
    " txq.width.b32 %r1, [%rd1]; txq.height.b32 %r2, [%rd1]; txq.depth.b32 %r3, [%rd1];\n"
    " txq.normalized_coords.b32 %r4, [%rd1]; txq.filter_mode.b32 %r5, [%rd1]; txq.array_size.b32 %r6, [%rd1];\n"
    " suq.width.b32 %r7, [%rd2]; suq.height.b32 %r8, [%rd2]; suq.memory_layout.b32 %r9, [%rd2];\n"
    " st.global.v4.u32 [%rd3], {%r1, %r2, %r3, %r4};\n"
    " st.global.v4.u32 [%rd3+16], {%r5, %r6, %r7, %r8};\n"
    " st.global.u32 [%rd3+32], %r9;\n"
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
     * the centre with gradients (gx, 0) and (0, 0); out[2] = txq.num_mipmap_levels. */
    ".visible .entry mip(.param .u64 t, .param .f32 lod, .param .f32 gx, .param .u64 out) {\n"
    " .reg .f32 %f<12>; .reg .u32 %r<2>; .reg .u64 %rd<3>;\n"
    " ld.param.u64 %rd1, [t]; ld.param.f32 %f1, [lod]; ld.param.f32 %f2, [gx]; mov.f32 %f3, 0f3F000000; mov.f32 %f4, 0f00000000;\n"
    " tex.level.2d.v4.f32.f32 {%f5, %f6, %f7, %f8}, [%rd1, {%f3, %f3}], %f1;\n"
    " tex.grad.2d.v4.f32.f32 {%f9, %f10, %f11, %f6}, [%rd1, {%f3, %f3}], {%f2, %f4}, {%f4, %f4};\n"
    " txq.num_mipmap_levels.b32 %r1, [%rd1];\n"
    " ld.param.u64 %rd2, [out]; st.global.f32 [%rd2], %f5; st.global.f32 [%rd2+4], %f9; st.global.u32 [%rd2+8], %r1;\n"
    " ret;\n}\n"
    /* trap(s): a store one element past the surface's end under .trap. */
    ".visible .entry trap(.param .u64 s, .param .u32 x) {\n"
    " .reg .u32 %r<3>; .reg .u64 %rd<2>;\n"
    " ld.param.u64 %rd1, [s]; ld.param.u32 %r1, [x]; mov.u32 %r2, 0;\n"
    " sust.b.2d.b32.trap [%rd1, {%r1, %r2}], %r2;\n"
    " ret;\n}\n";

static CUmodule mod;
static CUdeviceptr out;

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
    CHECK(cuMemcpyAtoH(f, sa, (3 * W + 6) * 4, 8));
    ASSERT(f[0] == -3 && f[1] == -4);

    /* A 3D array of uint2 written by cuMemcpy3D at an offset, read with integer coordinates. */
    CUarray a3 = array3d(4, 3, 2, CU_AD_FORMAT_UNSIGNED_INT32, 2, 0);
    unsigned vol[4 * 3 * 2 * 2];
    for (unsigned i = 0; i < 48; i++) vol[i] = 1000 + i;
    CUDA_MEMCPY3D c3;
    memset(&c3, 0, sizeof c3);
    c3.srcMemoryType = CU_MEMORYTYPE_HOST;
    c3.srcHost = vol;
    c3.srcPitch = 4 * 8;
    c3.srcHeight = 3;
    c3.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c3.dstArray = a3;
    c3.WidthInBytes = 4 * 8;
    c3.Height = 3;
    c3.Depth = 2;
    CHECK(cuMemcpy3D(&c3));
    CUDA_RESOURCE_DESC r3 = array_resource(a3);
    CUtexObject t3 = texture(&r3, CU_TR_FILTER_MODE_POINT, CU_TRSF_READ_AS_INTEGER);
    unsigned x = 3, y = 2, z = 1;
    void *f3[] = {&t3, &x, &y, &z, &out};
    launch("fetch3d", 1, 1, f3);
    CHECK(cuMemcpyDtoH(u, out, 16));
    unsigned at = ((1 * 3 + 2) * 4 + 3) * 2;
    ASSERT(u[0] == 1000 + at && u[1] == 1001 + at && u[2] == 0 && u[3] == 1);
    /* Out of range along z clamps. */
    z = 9;
    launch("fetch3d", 1, 1, f3);
    CHECK(cuMemcpyDtoH(u, out, 16));
    ASSERT(u[0] == 1000 + at);
    CUDA_ARRAY3D_DESCRIPTOR got3;
    CHECK(cuArray3DGetDescriptor(&got3, a3));
    ASSERT(got3.Width == 4 && got3.Height == 3 && got3.Depth == 2 && got3.NumChannels == 2);
    CUDA_ARRAY_DESCRIPTOR got2;
    EXPECT(cuArrayGetDescriptor(&got2, a3), CUDA_ERROR_INVALID_VALUE);

    /* Trilinear filtering of a 2x2x2 float cube: at the centre, the mean of the eight corners. */
    CUarray cube = array3d(2, 2, 2, CU_AD_FORMAT_FLOAT, 1, 0);
    float corners[8] = {0, 8, 16, 24, 32, 40, 48, 56};
    memset(&c3, 0, sizeof c3);
    c3.srcMemoryType = CU_MEMORYTYPE_HOST;
    c3.srcHost = corners;
    c3.srcPitch = 8;
    c3.srcHeight = 2;
    c3.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c3.dstArray = cube;
    c3.WidthInBytes = 8;
    c3.Height = 2;
    c3.Depth = 2;
    CHECK(cuMemcpy3D(&c3));
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
    CHECK(cuMemcpyHtoA(la, 0, layers, sizeof layers));
    CUDA_RESOURCE_DESC rl = array_resource(la);
    CUtexObject tl = texture(&rl, CU_TR_FILTER_MODE_LINEAR, 0);
    for (unsigned l = 0; l < 4; l++) {
        float lx = 0.7f, ly = 1.3f;
        void *la_args[] = {&tl, &l, &lx, &ly, &out};
        launch("layer", 1, 1, la_args);
        CHECK(cuMemcpyDtoH(f, out, 4));
        ASSERT(f[0] == (float)(10 * (l < 3 ? l : 2))); /* the layer index clamps */
    }

    /* tex.1d on the 3D texture reads its first row. */
    unsigned two = 2;
    void *row[] = {&t3, &two, &out};
    launch("fetch1d", 1, 1, row);
    CHECK(cuMemcpyDtoH(u, out, 16));
    ASSERT(u[0] == 1004 && u[1] == 1005);

    /* A layered surface: a store into layer 1 lands there, and nowhere else. */
    CUarray ls = array3d(2, 2, 3, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST);
    float zeros[12] = {0};
    CHECK(cuMemcpyHtoA(ls, 0, zeros, sizeof zeros));
    CUDA_RESOURCE_DESC rls = array_resource(ls);
    CUsurfObject lsurf;
    CHECK(cuSurfObjectCreate(&lsurf, &rls));
    unsigned one = 1;
    float v = 42.5f;
    void *la_store[] = {&lsurf, &one, &v};
    launch("surf_layer", 1, 1, la_store);
    float got12[12];
    CHECK(cuMemcpyAtoH(got12, ls, 0, sizeof got12));
    for (int i = 0; i < 12; i++) ASSERT(got12[i] == (i == 4 + 3 ? 42.5f : 0.0f));

    /* Two cubes of 2 x 2 faces: texel (i, j) of face f of cube c is 100 c + 10 f + 2 j + i. A
     * direction along each axis lands in the middle of its face: linear filtering gives the face's
     * mean, and the gather its four texels counter-clockwise from the lower left. */
    CUarray cubes = array3d(2, 2, 12, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_LAYERED);
    float faces[48];
    for (int i = 0; i < 48; i++) faces[i] = (float)(100 * (i / 24) + 10 * (i / 4 % 6) + i % 4);
    CHECK(cuMemcpyHtoA(cubes, 0, faces, sizeof faces));
    CUDA_RESOURCE_DESC rcube = array_resource(cubes);
    CUtexObject tcube = texture(&rcube, CU_TR_FILTER_MODE_LINEAR, CU_TRSF_NORMALIZED_COORDINATES);
    const float dirs[6][3] = {{3, 0, 0}, {-3, 0, 0}, {0, 2, 0}, {0, -2, 0}, {0, 0, 1}, {0, 0, -1}};
    for (unsigned c = 0; c < 2; c++)
        for (int face = 0; face < 6; face++) {
            float cx = dirs[face][0], cy = dirs[face][1], cz = dirs[face][2];
            void *ca[] = {&tcube, &c, &cx, &cy, &cz, &out};
            launch("cube", 1, 1, ca);
            CHECK(cuMemcpyDtoH(f, out, 32));
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
    EXPECT(cuMipmappedArrayCreate(&mm, &md, 4), CUDA_ERROR_INVALID_VALUE); /* 4 x 4 has 3 levels */
    CHECK(cuMipmappedArrayCreate(&mm, &md, 3));
    CUDA_ARRAY3D_DESCRIPTOR wide = {65536, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    CUmipmappedArray too_wide;
    EXPECT(cuMipmappedArrayCreate(&too_wide, &wide, 1), CUDA_ERROR_INVALID_VALUE); /* past 32768 */
    for (unsigned l = 0; l < 3; l++) {
        CUarray level;
        CHECK(cuMipmappedArrayGetLevel(&level, mm, l));
        EXPECT(cuArrayDestroy(level), CUDA_ERROR_INVALID_VALUE); /* it goes with its mipmap */
        CUDA_ARRAY3D_DESCRIPTOR ld;
        CHECK(cuArray3DGetDescriptor(&ld, level));
        ASSERT(ld.Width == 4u >> l && ld.Height == 4u >> l);
        float fill[16];
        for (int i = 0; i < 16; i++) fill[i] = (float)(1 << l);
        CHECK(cuMemcpyHtoA(level, 0, fill, ld.Width * ld.Height * 4));
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
        ASSERT(by_lod == mips[i][2] && by_grad == mips[i][3] && u[2] == 3);
    }
    CHECK(cuTexObjectDestroy(tm));
    CHECK(cuMipmappedArrayDestroy(mm));

    /* Linear memory as a 1D texture of int2 (tex1Dfetch): clamped at the end. */
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
        unsigned e = i < 64 ? i : 63;
        ASSERT((int)u[0] == ints[2 * e] && (int)u[1] == ints[2 * e + 1] && u[2] == 0 && u[3] == 1);
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
    ASSERT(f[0] == 32768.0f / 65535.0f && f[1] == 0.0f && f[2] == 0.0f && f[3] == 1.0f);

    /* Queries. */
    void *qa[] = {&t3, &s, &out};
    launch("queries", 1, 1, qa);
    CHECK(cuMemcpyDtoH(u, out, 36));
    ASSERT(u[0] == 4 && u[1] == 3 && u[2] == 2 && u[3] == 0 && u[4] == 0 && u[5] == 0);
    ASSERT(u[6] == W && u[7] == H && u[8] == 0);

    /* What the driver refuses. */
    CUarray plain = array3d(4, 4, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0);
    CUDA_RESOURCE_DESC rplain = array_resource(plain);
    CUsurfObject s2;
    EXPECT(cuSurfObjectCreate(&s2, &rplain), CUDA_ERROR_INVALID_VALUE); /* no SURFACE_LDST */
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
    EXPECT(cuTexObjectDestroy(tlin), CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuTexObjectDestroy(s), CUDA_ERROR_INVALID_VALUE); /* a surface, not a texture */
    /* A texture outlives its array's destruction, and still reads it. */
    CHECK(cuArrayDestroy(a3));
    EXPECT(cuArrayDestroy(a3), CUDA_ERROR_INVALID_HANDLE);
    x = 0, y = 0, z = 0;
    launch("fetch3d", 1, 1, f3);
    CHECK(cuMemcpyDtoH(u, out, 16));
    ASSERT(u[0] == 1000);

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
    printf("TEXTURES VERIFIED\n");
    return 0;
}
