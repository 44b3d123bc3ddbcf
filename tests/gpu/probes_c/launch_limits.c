/* What a GPU's driver answers for launches that break a kernel's .maxntid/.reqntid, and for the
 * profiler calls: run on the real driver (tests/gpu/faults_on_device.sh) and on ours. */
#include "../../demo/driver_util.h"

static const char *ptx =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry maxntid64(.param .u64 out) .maxntid 64, 1, 1 { ret; }\n"
    ".visible .entry reqntid64(.param .u64 out) .reqntid 64, 1, 1 { ret; }\n"
    ".visible .entry plain(.param .u64 out) { ret; }\n";

static void launch(CUmodule m, const char *name, unsigned bx, unsigned by) {
    CUfunction f;
    CUresult r = cuModuleGetFunction(&f, m, name);
    if (r) { printf("%s: cuModuleGetFunction %d\n", name, r); return; }
    int maxt = -1;
    cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
    CUdeviceptr out = 0;
    void *args[] = {&out};
    CUresult l = cuLaunchKernel(f, 1, 1, 1, bx, by, 1, 0, NULL, args, NULL);
    CUresult s = cuCtxSynchronize();
    const char *ln = "?", *sn = "?";
    cuGetErrorName(l, &ln);
    cuGetErrorName(s, &sn);
    printf("%-10s block %4ux%-2u  MAX_THREADS_PER_BLOCK %4d  launch %s  sync %s\n", name, bx, by, maxt, ln, sn);
}

int main(void) {
    CUmodule m;
    context_on_device0();
    CUresult r = cuModuleLoadData(&m, ptx);
    if (r) { printf("load %d\n", r); return 1; }
    launch(m, "maxntid64", 64, 1);
    launch(m, "maxntid64", 32, 2);
    launch(m, "maxntid64", 65, 1);
    launch(m, "maxntid64", 128, 1);
    launch(m, "reqntid64", 64, 1);
    launch(m, "reqntid64", 32, 1);
    launch(m, "reqntid64", 32, 2);
    launch(m, "reqntid64", 128, 1);
    launch(m, "plain", 1024, 1);
    launch(m, "plain", 1025, 1);
    /* Looked up, not linked: a driver without them still runs the launches above. */
    const char *names[] = {"cuProfilerStart", "cuProfilerStop"};
    for (int i = 0; i < 2; i++) {
        CUresult (*fn)(void) = NULL;
        CUdriverProcAddressQueryResult q;
        r = cuGetProcAddress(names[i], (void **)&fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &q);
        const char *n = "?";
        if (r || !fn) {
            cuGetErrorName(r, &n);
            printf("%s: not found (%s)\n", names[i], n);
            continue;
        }
        cuGetErrorName(fn(), &n);
        printf("%s %s\n", names[i], n);
    }
    return 0;
}
