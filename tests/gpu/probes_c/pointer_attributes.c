/* Pointer attributes as the CUDA runtime asks for them (cudaPointerGetAttributes calls
 * cuPointerGetAttributes with context, memory type, device pointer, host pointer, managed and device
 * ordinal): on device memory, page-locked host memory, managed memory and a pointer the driver does not
 * know; and cuPointerGetAttribute's host pointer of device memory. Prints results and what each value
 * is, never addresses; pointer_attributes.expected is an H200's output (driver 580.159.04), which
 * ptx-jit must print too. Usage: pointer_attributes */
#include "../../demo/driver_util.h"

static CUpointer_attribute ATTRS[6] = {
    CU_POINTER_ATTRIBUTE_CONTEXT,      CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
    CU_POINTER_ATTRIBUTE_HOST_POINTER, CU_POINTER_ATTRIBUTE_IS_MANAGED,  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};

static void show(const char *what, CUdeviceptr p, CUcontext c) {
    CUcontext ctx = (CUcontext)1;
    unsigned type = 99, managed = 99;
    CUdeviceptr dev = 1;
    void *host = (void *)1;
    int ordinal = 99;
    void *data[6] = {&ctx, &type, &dev, &host, &managed, &ordinal};
    CUresult r = cuPointerGetAttributes(6, ATTRS, data, p);
    printf("%s: result %d, context %s, type %u, device pointer %s, host pointer %s, managed %u, ordinal %d\n",
           what, r, ctx == c ? "ours" : ctx ? "other" : "null", type,
           dev == p ? "same" : dev ? "other" : "null", host == (void *)p ? "same" : host ? "other" : "null",
           managed, ordinal);
}

int main(void) {
    CUdeviceptr dev, managed;
    void *host;
    int local = 0;
    CUcontext c = context_on_device0();
    CHECK(cuMemAlloc(&dev, 256));
    CHECK(cuMemAllocHost(&host, 256));
    CHECK(cuMemAllocManaged(&managed, 256, CU_MEM_ATTACH_GLOBAL));
    show("device", dev, c);
    show("host", (CUdeviceptr)host, c);
    show("managed", managed, c);
    show("unknown", (CUdeviceptr)&local, c);
    void *h = (void *)1;
    printf("cuPointerGetAttribute(HOST_POINTER, device) = %d\n",
           cuPointerGetAttribute(&h, CU_POINTER_ATTRIBUTE_HOST_POINTER, dev));
    return 0;
}
