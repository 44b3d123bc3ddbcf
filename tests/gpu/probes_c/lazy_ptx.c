/* Where a GPU driver reports an error in one kernel of a PTX module: at cuModuleLoadData, or (with
 * lazy loading) when the kernel is looked up. A module of two kernels, one with an undeclared
 * register, a module whose only error is in a function no kernel calls, and a module whose kernel
 * calls an .extern function nothing defines; each call's result is printed. Run with
 * CUDA_MODULE_LOADING=LAZY, then =EAGER: an H200 (driver 580.159.04) wrote lazy_ptx.expected, every
 * load failing with 218 (INVALID_PTX) in both modes, and `make test` compares ptx-jit's output.
 * Usage: lazy_ptx */
#include "../../demo/driver_util.h"

static const char *HEAD = ".version 7.0\n.target sm_75\n.address_size 64\n";
static const char *GOOD = ".visible .entry good(.param .u64 p) {\n .reg .u64 %rd<2>;\n"
                          " ld.param.u64 %rd1, [p]; st.global.u32 [%rd1], 5; ret;\n}\n";
static const char *BROKEN_KERNEL = ".visible .entry broken() {\n .reg .u32 %r<2>;\n mov.u32 %r9, 3;\n ret;\n}\n";
static const char *BROKEN_FUNC = ".func unused() {\n .reg .u32 %r<2>;\n mov.u32 %r9, 3;\n ret;\n}\n";
/* Valid PTX whose kernel calls a function no module defines (ptx-jit: P0404, INVALID_PTX). */
static const char *UNDEFINED_CALLEE = ".extern .func missing();\n.visible .entry broken() {\n call missing;\n ret;\n}\n";

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
    probe("undefined callee", UNDEFINED_CALLEE);
    return 0;
}
