/* The GPU's answers for texture fetches, recorded as the expected values of the CPU's texture sampling
 * (issue 22): linear filtering's fixed-point weights, address modes (clamp, wrap, mirror, border),
 * normalised coordinates, point sampling at texel edges, 8-bit unorm and 16-bit snorm conversion, and
 * tld4 gathers. Each line is `case coordinates: results`, results as IEEE bit patterns in hex.
 * Usage: texture_probe (no arguments; the kernels are below). */
#include "../../demo/driver_util.h"
#include <string.h>

static const char *PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    /* tex1d(tex, coords, out, n): out[i] = tex.1d(tex, coords[i]) (4 channels) */
    ".visible .entry tex1d(.param .u64 t, .param .u64 c, .param .u64 o, .param .u32 n) {\n"
    " .reg .u32 %r<4>; .reg .u64 %rd<8>; .reg .f32 %f<8>; .reg .pred %p;\n"
    " mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.u32 %r1, %r2, %r3, %r1;\n"
    " ld.param.u32 %r2, [n]; setp.ge.u32 %p, %r1, %r2; @%p ret;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [c]; ld.param.u64 %rd3, [o];\n"
    " mul.wide.u32 %rd4, %r1, 8; add.u64 %rd5, %rd2, %rd4; ld.global.v2.f32 {%f1, %f2}, [%rd5];\n"
    " tex.1d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [%rd1, {%f1}];\n"
    " mul.wide.u32 %rd4, %r1, 16; add.u64 %rd6, %rd3, %rd4; st.global.v4.f32 [%rd6], {%f3, %f4, %f5, %f6};\n"
    " ret;\n}\n"
    ".visible .entry tex2d(.param .u64 t, .param .u64 c, .param .u64 o, .param .u32 n) {\n"
    " .reg .u32 %r<4>; .reg .u64 %rd<8>; .reg .f32 %f<8>; .reg .pred %p;\n"
    " mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.u32 %r1, %r2, %r3, %r1;\n"
    " ld.param.u32 %r2, [n]; setp.ge.u32 %p, %r1, %r2; @%p ret;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [c]; ld.param.u64 %rd3, [o];\n"
    " mul.wide.u32 %rd4, %r1, 8; add.u64 %rd5, %rd2, %rd4; ld.global.v2.f32 {%f1, %f2}, [%rd5];\n"
    " tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [%rd1, {%f1, %f2}];\n"
    " mul.wide.u32 %rd4, %r1, 16; add.u64 %rd6, %rd3, %rd4; st.global.v4.f32 [%rd6], {%f3, %f4, %f5, %f6};\n"
    " ret;\n}\n"
    ".visible .entry tld4r(.param .u64 t, .param .u64 c, .param .u64 o, .param .u32 n) {\n"
    " .reg .u32 %r<4>; .reg .u64 %rd<8>; .reg .f32 %f<8>; .reg .pred %p;\n"
    " mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.u32 %r1, %r2, %r3, %r1;\n"
    " ld.param.u32 %r2, [n]; setp.ge.u32 %p, %r1, %r2; @%p ret;\n"
    " ld.param.u64 %rd1, [t]; ld.param.u64 %rd2, [c]; ld.param.u64 %rd3, [o];\n"
    " mul.wide.u32 %rd4, %r1, 8; add.u64 %rd5, %rd2, %rd4; ld.global.v2.f32 {%f1, %f2}, [%rd5];\n"
    " tld4.r.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [%rd1, {%f1, %f2}];\n"
    " mul.wide.u32 %rd4, %r1, 16; add.u64 %rd6, %rd3, %rd4; st.global.v4.f32 [%rd6], {%f3, %f4, %f5, %f6};\n"
    " ret;\n}\n";

static CUmodule mod;

static CUarray array(CUarray_format fmt, unsigned ch, size_t w, size_t h, const void *data, size_t elem) {
    CUDA_ARRAY_DESCRIPTOR ad = {w, h, fmt, ch};
    CUarray a;
    CHECK(cuArrayCreate(&a, &ad));
    CUDA_MEMCPY2D cp;
    memset(&cp, 0, sizeof cp);
    cp.srcMemoryType = CU_MEMORYTYPE_HOST;
    cp.srcHost = data;
    cp.srcPitch = w * elem;
    cp.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    cp.dstArray = a;
    cp.WidthInBytes = w * elem;
    cp.Height = h ? h : 1;
    CHECK(cuMemcpy2D(&cp));
    return a;
}

static CUtexObject texture(CUarray a, CUaddress_mode am, CUfilter_mode fm, unsigned flags, float border) {
    CUDA_RESOURCE_DESC rd = array_resource(a);
    return texture_object(&rd, am, fm, flags, border);
}

/* Fetches at n coordinate pairs with kernel `fn` and prints `name x y: r g b a` (channels as bits). */
static void fetch(const char *name, const char *fn, CUtexObject t, const float *xy, unsigned n, int channels) {
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, mod, fn));
    CUdeviceptr c, o;
    CHECK(cuMemAlloc(&c, n * 8));
    CHECK(cuMemAlloc(&o, n * 16));
    CHECK(cuMemcpyHtoD(c, xy, n * 8));
    void *args[] = {&t, &c, &o, &n};
    CHECK(cuLaunchKernel(k, (n + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    CHECK(cuCtxSynchronize());
    unsigned *r = malloc(n * 16);
    CHECK(cuMemcpyDtoH(r, o, n * 16));
    for (unsigned i = 0; i < n; i++) {
        printf("%s %.9g %.9g:", name, xy[2 * i], xy[2 * i + 1]);
        for (int ch = 0; ch < channels; ch++) printf(" %08x", r[4 * i + ch]);
        printf("\n");
    }
    free(r);
    cuMemFree(c);
    cuMemFree(o);
}

/* n coordinates x = x0 + k*step (y fixed). */
static float *sweep(float x0, float step, unsigned n, float y) {
    float *xy = malloc(n * 8);
    for (unsigned k = 0; k < n; k++) {
        xy[2 * k] = x0 + (float)k * step;
        xy[2 * k + 1] = y;
    }
    return xy;
}

int main(void) {
    context_on_device0();
    CHECK(cuModuleLoadData(&mod, PTX));
    setvbuf(stdout, NULL, _IOFBF, 1 << 20);

    /* 1-D float: 0 1 4 9 16 25 36 49. */
    float sq[8];
    for (int i = 0; i < 8; i++) sq[i] = (float)(i * i);
    CUarray a1 = array(CU_AD_FORMAT_FLOAT, 1, 8, 0, sq, 4);
    float *xs = sweep(-1.0f, 1.0f / 64, 641, 0);
    fetch("lin_clamp", "tex1d", texture(a1, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0, 0), xs, 641, 1);
    fetch("point_clamp", "tex1d", texture(a1, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0), xs, 641, 1);
    fetch("lin_border", "tex1d", texture(a1, CU_TR_ADDRESS_MODE_BORDER, CU_TR_FILTER_MODE_LINEAR, 0, 100.0f), xs, 641, 1);
    float *us = sweep(-1.0f, 1.0f / 128, 385, 0);
    fetch("lin_wrap_norm", "tex1d",
          texture(a1, CU_TR_ADDRESS_MODE_WRAP, CU_TR_FILTER_MODE_LINEAR, CU_TRSF_NORMALIZED_COORDINATES, 0), us, 385, 1);
    fetch("lin_mirror_norm", "tex1d",
          texture(a1, CU_TR_ADDRESS_MODE_MIRROR, CU_TR_FILTER_MODE_LINEAR, CU_TRSF_NORMALIZED_COORDINATES, 0), us, 385, 1);
    fetch("point_wrap_norm", "tex1d",
          texture(a1, CU_TR_ADDRESS_MODE_WRAP, CU_TR_FILTER_MODE_POINT, CU_TRSF_NORMALIZED_COORDINATES, 0), us, 385, 1);
    /* Between the centres of texels 0 and 1 (values 0 and 1) the result is the weight itself. */
    float *fine = sweep(0.5f, 1.0f / 2048, 2049, 0);
    fetch("lin_weight", "tex1d", texture(a1, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0, 0), fine, 2049, 1);
    float *fine_u = sweep(0.5f / 8, 1.0f / (2048 * 8), 2049, 0);
    fetch("lin_weight_norm", "tex1d",
          texture(a1, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, CU_TRSF_NORMALIZED_COORDINATES, 0), fine_u,
          2049, 1);
    fetch("lin_clamp_norm", "tex1d",
          texture(a1, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, CU_TRSF_NORMALIZED_COORDINATES, 0), us, 385, 1);

    /* 1-D 16-bit snorm, read as normalised float. */
    short sn[8] = {-32768, -32767, -16384, -1, 0, 1, 16384, 32767};
    CUarray a2 = array(CU_AD_FORMAT_SIGNED_INT16, 1, 8, 0, sn, 2);
    float *xs2 = sweep(0.0f, 1.0f / 4, 33, 0);
    fetch("snorm16_point", "tex1d", texture(a2, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0), xs2, 33, 1);
    fetch("snorm16_lin", "tex1d", texture(a2, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0, 0), xs2, 33, 1);

    /* 2-D uchar4 4x4, read as normalised float. */
    unsigned char px[4 * 4 * 4];
    for (int i = 0; i < 64; i++) px[i] = (unsigned char)((i * 37 + 11) & 255);
    CUarray a3 = array(CU_AD_FORMAT_UNSIGNED_INT8, 4, 4, 4, px, 4);
    unsigned n2 = 0;
    float *xy = malloc(41 * 5 * 8);
    const float ys[5] = {-0.25f, 0.5f, 1.3f, 2.77f, 4.1f};
    for (int j = 0; j < 5; j++)
        for (int k = 0; k <= 40; k++) {
            xy[2 * n2] = -0.5f + (float)k / 8;
            xy[2 * n2 + 1] = ys[j];
            n2++;
        }
    fetch("unorm8x4_lin", "tex2d", texture(a3, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0, 0), xy, n2, 4);
    fetch("unorm8x4_point", "tex2d", texture(a3, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0), xy, n2, 4);

    /* 2-D float 4x4 gathered with tld4.r. */
    float g[16];
    for (int i = 0; i < 16; i++) g[i] = (float)(i + 1);
    CUarray a4 = array(CU_AD_FORMAT_FLOAT, 1, 4, 4, g, 4);
    fetch("tld4r_clamp", "tld4r", texture(a4, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0), xy, n2, 4);
    fetch("tld4r_wrap_norm", "tld4r",
          texture(a4, CU_TR_ADDRESS_MODE_WRAP, CU_TR_FILTER_MODE_POINT, CU_TRSF_NORMALIZED_COORDINATES, 0), xy, n2, 4);

    /* Every channel of 1- and 2-channel textures: what a GPU gives for the channels a format lacks. */
    float *few = sweep(0.0f, 1.0f, 4, 0);
    fetch("float1_all4", "tex1d", texture(a1, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0), few, 4, 4);
    fetch("snorm16_all4", "tex1d", texture(a2, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0), few, 4, 4);
    float two[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    CUarray a5 = array(CU_AD_FORMAT_FLOAT, 2, 4, 0, two, 8);
    fetch("float2_all4", "tex1d", texture(a5, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0, 0), few, 4, 4);
    unsigned char u1[4] = {0, 85, 170, 255};
    CUarray a6 = array(CU_AD_FORMAT_UNSIGNED_INT8, 1, 4, 0, u1, 1);
    fetch("unorm8_all4", "tex1d", texture(a6, CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR, 0, 0), few, 4, 4);
    fflush(stdout);
    return 0;
}
