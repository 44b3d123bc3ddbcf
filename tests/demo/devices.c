/* Several presented devices (PTXJIT_DEVICE_COUNT=2): ordinals, names, PCI bus ids and UUIDs; primary
 * contexts per device; allocations that know their device; a kernel on the second device; peer access
 * between the two devices' contexts and a peer copy. The Makefile runs it with the variable set; it
 * prints DEVICES VERIFIED or stops at the first difference. Usage: devices */
#include "driver_util.h"
#include <string.h>

static const char *PTX =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry add_one(.param .u64 p) {\n"
    " .reg .u32 %r<3>; .reg .u64 %rd<4>;\n"
    " ld.param.u64 %rd1, [p]; mov.u32 %r1, %tid.x; mul.wide.u32 %rd2, %r1, 4; add.u64 %rd3, %rd1, %rd2;\n"
    " ld.global.u32 %r2, [%rd3]; add.u32 %r2, %r2, 1; st.global.u32 [%rd3], %r2; ret;\n}\n";

int main(void) {
    CHECK(cuInit(0));
    int n = 0;
    CHECK(cuDeviceGetCount(&n));
    ASSERT(n == 2);
    CUdevice d0, d1, d;
    CHECK(cuDeviceGet(&d0, 0));
    CHECK(cuDeviceGet(&d1, 1));
    ASSERT(d0 == 0 && d1 == 1);
    EXPECT(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
    EXPECT(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 2), CUDA_ERROR_INVALID_DEVICE);

    /* Identical devices with their own identity. */
    char name0[128], name1[128], bus[32];
    CHECK(cuDeviceGetName(name0, sizeof name0, d0));
    CHECK(cuDeviceGetName(name1, sizeof name1, d1));
    ASSERT(strcmp(name0, name1) == 0);
    int bus0, bus1;
    CHECK(cuDeviceGetAttribute(&bus0, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d0));
    CHECK(cuDeviceGetAttribute(&bus1, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d1));
    ASSERT(bus0 == 0 && bus1 == 1);
    CHECK(cuDeviceGetPCIBusId(bus, sizeof bus, d1));
    CHECK(cuDeviceGetByPCIBusId(&d, bus));
    ASSERT(d == 1);
    CUuuid u0, u1;
    CHECK(cuDeviceGetUuid(&u0, d0));
    CHECK(cuDeviceGetUuid(&u1, d1));
    ASSERT(memcmp(&u0, &u1, sizeof u0) != 0);
    int can;
    CHECK(cuDeviceCanAccessPeer(&can, d0, d1));
    ASSERT(can == 1);
    CHECK(cuDeviceCanAccessPeer(&can, d1, d1));
    ASSERT(can == 0);

    /* A primary context per device. */
    CUcontext c0, c1, again;
    CHECK(cuDevicePrimaryCtxRetain(&c0, d0));
    CHECK(cuDevicePrimaryCtxRetain(&c1, d1));
    CHECK(cuDevicePrimaryCtxRetain(&again, d1));
    ASSERT(c0 != c1 && again == c1);
    CHECK(cuCtxSetCurrent(c1));
    CHECK(cuCtxGetDevice(&d));
    ASSERT(d == 1);

    /* A kernel on device 1, on memory that knows its device. */
    unsigned host[32], back[32];
    for (int i = 0; i < 32; i++) host[i] = 10 * i;
    CUdeviceptr b1, b0;
    CHECK(cuMemAlloc(&b1, sizeof host));
    int ordinal = -5;
    CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b1));
    ASSERT(ordinal == 1);
    CHECK(cuMemcpyHtoD(b1, host, sizeof host));
    CUmodule m;
    CUfunction f;
    CHECK(cuModuleLoadData(&m, PTX));
    CHECK(cuModuleGetFunction(&f, m, "add_one"));
    void *args[] = {&b1};
    CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CHECK(cuCtxSynchronize());

    /* Peer access from device 0's context, and a peer copy of device 1's result. */
    CHECK(cuCtxSetCurrent(c0));
    CHECK(cuMemAlloc(&b0, sizeof host));
    CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, b0));
    ASSERT(ordinal == 0);
    EXPECT(cuCtxEnablePeerAccess(c0, 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
    CHECK(cuCtxEnablePeerAccess(c1, 0));
    EXPECT(cuCtxEnablePeerAccess(c1, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    CHECK(cuMemcpyPeer(b0, c0, b1, c1, sizeof host));
    CHECK(cuMemcpyDtoH(back, b0, sizeof back));
    for (int i = 0; i < 32; i++) ASSERT(back[i] == 10u * i + 1);
    CHECK(cuCtxDisablePeerAccess(c1));
    EXPECT(cuCtxDisablePeerAccess(c1), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);

    CHECK(cuMemFree(b0));
    CHECK(cuCtxSetCurrent(c1));
    CHECK(cuModuleUnload(m));
    CHECK(cuMemFree(b1));
    CHECK(cuDevicePrimaryCtxRelease(d1));
    CHECK(cuDevicePrimaryCtxRelease(d1));
    CHECK(cuDevicePrimaryCtxRelease(d0));
    unsigned flags;
    int active = -1;
    CHECK(cuDevicePrimaryCtxGetState(d1, &flags, &active));
    ASSERT(active == 0);
    printf("DEVICES VERIFIED\n");
    return 0;
}
