/* Texture fetch throughput on the CPU: a 2048 x 2048 float image resized through a texture object
 * (one tex.2d per output pixel), with linear and with point filtering; prints the best of 5 launches
 * of each, in ms and fetches per second. Usage: texture_fetch (no arguments). */
#include "../tests/demo/driver_util.h"
#include <string.h>
#include <time.h>

static const char *PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry resize(.param .u64 t, .param .u64 o, .param .u32 w, .param .u32 h) {\n"
    " .reg .u32 %r<10>; .reg .u64 %rd<4>; .reg .f32 %f<8>; .reg .pred %p;\n"
    " mov.u32 %r1, %tid.x; mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mad.lo.u32 %r1, %r2, %r3, %r1;\n"
    " mov.u32 %r4, %tid.y; mov.u32 %r5, %ctaid.y; mov.u32 %r6, %ntid.y; mad.lo.u32 %r4, %r5, %r6, %r4;\n"
    " ld.param.u32 %r7, [w]; ld.param.u32 %r8, [h];\n"
    " setp.ge.u32 %p, %r1, %r7; @%p ret; setp.ge.u32 %p, %r4, %r8; @%p ret;\n"
    " cvt.rn.f32.u32 %f1, %r1; cvt.rn.f32.u32 %f2, %r4; mul.f32 %f1, %f1, 0f3F400000; mul.f32 %f2, %f2, 0f3F400000;\n"
    " ld.param.u64 %rd1, [t]; tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [%rd1, {%f1, %f2}];\n"
    " ld.param.u64 %rd1, [o]; mad.lo.u32 %r9, %r4, %r7, %r1; mul.wide.u32 %rd2, %r9, 4; add.u64 %rd3, %rd1, %rd2;\n"
    " st.global.f32 [%rd3], %f3;\n"
    " ret;\n}\n";

int main(void) {
    context_on_device0();
    CUmodule m;
    CHECK(cuModuleLoadData(&m, PTX));
    CUfunction k;
    CHECK(cuModuleGetFunction(&k, m, "resize"));
    const unsigned W = 2048, H = 2048;
    float *img = malloc((size_t)W * H * 4);
    for (unsigned i = 0; i < W * H; i++) img[i] = (float)(i % 97);
    CUDA_ARRAY_DESCRIPTOR ad = {W, H, CU_AD_FORMAT_FLOAT, 1};
    CUarray a;
    CHECK(cuArrayCreate(&a, &ad));
    array_copy(a, img, (size_t)W * 4, H, 1, 1);
    CUdeviceptr o;
    CHECK(cuMemAlloc(&o, (size_t)W * H * 4));
    const char *names[2] = {"point", "linear"};
    for (int filter = 0; filter < 2; filter++) {
        CUDA_RESOURCE_DESC rd = array_resource(a);
        CUtexObject t = texture_object(&rd, CU_TR_ADDRESS_MODE_CLAMP,
                                       filter ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT, 0, 0);
        unsigned w = W, h = H;
        void *args[] = {&t, &o, &w, &h};
        double best = 1e30;
        for (int rep = 0; rep < 5; rep++) {
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            CHECK(cuLaunchKernel(k, W / 16, H / 16, 1, 16, 16, 1, 0, NULL, args, NULL));
            CHECK(cuCtxSynchronize());
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
            if (ms < best) best = ms;
        }
        printf("%-6s %8.1f ms  %6.1f M fetches/s\n", names[filter], best, W * (double)H / best / 1e3);
        CHECK(cuTexObjectDestroy(t));
    }
    return 0;
}
