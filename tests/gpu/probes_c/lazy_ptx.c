/* Where a GPU driver reports an error in one kernel of a PTX module: at cuModuleLoadData, or (with
 * lazy loading) when the kernel is looked up. A module of two kernels, one with an undeclared
 * register, and a module whose only error is in a function no kernel calls; each call's result is
 * printed. Run it with CUDA_MODULE_LOADING=LAZY and =EAGER. ptx-jit reports a kernel's errors at its
 * lookup when lazy and at load when eager (tests/demo/lazy.c); not yet run on a GPU.
 * Usage: lazy_ptx */
#include "../../demo/driver_util.h"

static const char *HEAD = ".version 7.0\n.target sm_75\n.address_size 64\n";
static const char *GOOD = ".visible .entry good(.param .u64 p) {\n .reg .u64 %rd<2>;\n"
                          " ld.param.u64 %rd1, [p]; st.global.u32 [%rd1], 5; ret;\n}\n";
static const char *BROKEN_KERNEL = ".visible .entry broken() {\n .reg .u32 %r<2>;\n mov.u32 %r9, 3;\n ret;\n}\n";
static const char *BROKEN_FUNC = ".func unused() {\n .reg .u32 %r<2>;\n mov.u32 %r9, 3;\n ret;\n}\n";

static void probe(const char *what, const char *body2) {
    char text[4096];
    snprintf(text, sizeof text, "%s%s%s", HEAD, GOOD, body2);
    CUmodule m;
    CUfunction f;
    CUresult r = cuModuleLoadData(&m, text);
    printf("%s: cuModuleLoadData %d\n", what, (int)r);
    if (r != CUDA_SUCCESS) return;
    printf("%s: cuModuleGetFunction(good) %d\n", what, (int)cuModuleGetFunction(&f, m, "good"));
    printf("%s: cuModuleGetFunction(broken) %d\n", what, (int)cuModuleGetFunction(&f, m, "broken"));
    cuModuleUnload(m);
}

int main(void) {
    context_on_device0();
    CUmoduleLoadingMode mode;
    CHECK(cuModuleGetLoadingMode(&mode));
    printf("loading mode %d\n", (int)mode);
    probe("broken kernel", BROKEN_KERNEL);
    probe("broken unused function", BROKEN_FUNC);
    return 0;
}
