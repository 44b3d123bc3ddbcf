/* Every device attribute cuda.h numbers (1..161), the name, the compute capability and the total memory
 * of device 0, one per line: run on a GPU, its output is the real card's profile (tests/gpu/README.md);
 * run on ptx-jit with PTXJIT_DEVICE set, the presented one. A plain driver API program. */
#include <cuda.h>
#include <stdio.h>

int main(void) {
    CUdevice dev;
    char name[256];
    size_t total;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS) {
        printf("no device\n");
        return 1;
    }
    cuDeviceGetName(name, sizeof name, dev);
    cuDeviceTotalMem(&total, dev);
    printf("name %s\ntotal_mem %zu\n", name, total);
    for (int a = 1; a <= 161; a++) {
        int v;
        CUresult r = cuDeviceGetAttribute(&v, (CUdevice_attribute)a, dev);
        if (r == CUDA_SUCCESS) printf("attr %d %d\n", a, v);
        else printf("attr %d error %d\n", a, (int)r);
    }
    return 0;
}
