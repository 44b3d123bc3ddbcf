/* Peer-access answers on one device: cuDeviceCanAccessPeer of a device with itself, and
 * cuCtxEnablePeerAccess/cuCtxDisablePeerAccess between two contexts of that device. Prints one line per
 * call with its result code; peer_probe.expected is an H200's output (driver 580.159.04), which ptx-jit
 * must print too. Usage: peer_probe */
#include "../../demo/driver_util.h"

int main(void) {
    CUdevice d;
    CUcontext a, b;
    int can = -1;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CUresult r = cuDeviceCanAccessPeer(&can, d, d);
    printf("cuDeviceCanAccessPeer(0, 0) = %d, can = %d\n", r, can);
    CHECK(cuCtxCreate(&a, NULL, 0, d));
    CHECK(cuCtxCreate(&b, NULL, 0, d));
    CHECK(cuCtxSetCurrent(a));
    printf("cuCtxEnablePeerAccess(same device) = %d\n", cuCtxEnablePeerAccess(b, 0));
    printf("cuCtxEnablePeerAccess(same device, flags 1) = %d\n", cuCtxEnablePeerAccess(b, 1));
    printf("cuCtxDisablePeerAccess(never enabled) = %d\n", cuCtxDisablePeerAccess(b));
    printf("cuDeviceGetByPCIBusId(\"0000:ff:00.0\") = %d\n", cuDeviceGetByPCIBusId(&d, "0000:ff:00.0"));
    return 0;
}
