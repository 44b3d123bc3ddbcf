/* A fat binary with machine code for another GPU only (no PTX): what cuModuleLoadData,
 * cuModuleGetFunction (a kernel it has, a name it lacks) and a launch answer, and whether
 * CUDA_MODULE_LOADING (LAZY, the default since CUDA 12.2, or EAGER) changes that; then the same
 * through the library API (cuLibraryLoadData, cuLibraryGetKernel).
 * Usage: lazy_no_binary FILE.fatbin KERNEL */
#include "../../demo/driver_util.h"

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    char *image = read_file(argv[1]);
    CUmodule m;
    CUfunction k;
    context_on_device0();
    CUlibrary lib;
    CUkernel kern;
    CUresult lr = cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0);
    printf("cuLibraryLoadData %d\n", (int)lr);
    if (lr == CUDA_SUCCESS) {
        printf("cuLibraryGetKernel(%s) %d\n", argv[2], (int)cuLibraryGetKernel(&kern, lib, argv[2]));
        printf("cuLibraryGetKernel(nope) %d\n", (int)cuLibraryGetKernel(&kern, lib, "nope"));
    }
    CUresult r = cuModuleLoadData(&m, image);
    printf("cuModuleLoadData %d\n", (int)r);
    if (r != CUDA_SUCCESS) return 0;
    printf("cuModuleGetFunction(%s) %d\n", argv[2], (int)(r = cuModuleGetFunction(&k, m, argv[2])));
    CUfunction other;
    printf("cuModuleGetFunction(nope) %d\n", (int)cuModuleGetFunction(&other, m, "nope"));
    if (r == CUDA_SUCCESS) {
        printf("cuLaunchKernel %d\n", (int)cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL));
        printf("cuCtxSynchronize %d\n", (int)cuCtxSynchronize());
    }
    return 0;
}
