// Textures and surfaces through the CUDA runtime (static, nvcc's default), as image code writes them:
// a bilinear resize of a float image through a texture object on a CUDA array (cudaMallocArray,
// cudaMemcpy2DToArray, cudaCreateTextureObject), a uchar4 image inverted in place through a surface
// object (surf2Dread/surf2Dwrite), and tex1Dfetch on linear memory. Texels are small integers, so the
// texture unit's 8-bit fractional weights (the CUDA programming guide's texture-fetching appendix) give
// exact results whatever precision it sums in; the host computes the same. Prints TEXTURES VERIFIED or
// stops at the first difference.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t e_ = (call);                                                                     \
        if (e_ != cudaSuccess) {                                                                     \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

__global__ void resize(cudaTextureObject_t t, float *out, int w, int h, float sx, float sy) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[y * w + x] = tex2D<float>(t, (x + 0.5f) * sx, (y + 0.5f) * sy);
}

__global__ void invert(cudaSurfaceObject_t s, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        uchar4 v = surf2Dread<uchar4>(s, x * 4, y);
        surf2Dwrite(make_uchar4(255 - v.x, 255 - v.y, 255 - v.z, v.w), s, x * 4, y);
    }
}

__global__ void gather(cudaTextureObject_t t, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<int>(t, n - 1 - i);
}

// The texture unit's bilinear sample of a clamped w x h float image at (x, y).
static float reference(const float *img, int w, int h, float x, float y) {
    auto split = [](float c, int &i, int &a) {
        long f = (long)std::floor((double)c * 256.0 + 0.5) - 128;
        i = (int)(f >> 8);
        a = (int)(f & 255);
    };
    int i, a, j, b;
    split(x, i, a);
    split(y, j, b);
    auto at = [&](int u, int v) {
        u = u < 0 ? 0 : (u >= w ? w - 1 : u);
        v = v < 0 ? 0 : (v >= h ? h - 1 : v);
        return (double)img[v * w + u];
    };
    int w11 = (a * b + 128) >> 8;
    double s = (256 - a - b + w11) * at(i, j) + (a - w11) * at(i + 1, j) + (b - w11) * at(i, j + 1) +
               w11 * at(i + 1, j + 1);
    return (float)(s / 256);
}

int main() {
    // Resize 8 x 6 to 13 x 9.
    const int W = 8, H = 6, OW = 13, OH = 9;
    float img[W * H];
    for (int i = 0; i < W * H; i++) img[i] = (float)((i * 7) % 23);
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float>();
    cudaArray_t arr;
    CHECK(cudaMallocArray(&arr, &fd, W, H));
    CHECK(cudaMemcpy2DToArray(arr, 0, 0, img, W * sizeof(float), W * sizeof(float), H, cudaMemcpyHostToDevice));
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = arr;
    cudaTextureDesc td = {};
    td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
    td.filterMode = cudaFilterModeLinear;
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t t;
    CHECK(cudaCreateTextureObject(&t, &rd, &td, nullptr));
    float *out;
    CHECK(cudaMalloc(&out, OW * OH * sizeof(float)));
    float sx = (float)W / OW, sy = (float)H / OH;
    resize<<<dim3(1, 1), dim3(16, 16)>>>(t, out, OW, OH, sx, sy);
    CHECK(cudaGetLastError());
    float got[OW * OH];
    CHECK(cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost));
    for (int y = 0; y < OH; y++)
        for (int x = 0; x < OW; x++) {
            float want = reference(img, W, H, (x + 0.5f) * sx, (y + 0.5f) * sy);
            if (got[y * OW + x] != want) {
                std::printf("resize (%d, %d): %.9g, expected %.9g\n", x, y, got[y * OW + x], want);
                return 1;
            }
        }
    CHECK(cudaDestroyTextureObject(t));
    CHECK(cudaFreeArray(arr));

    // Invert a 5 x 3 uchar4 image in place through a surface.
    const int SW = 5, SH = 3;
    uchar4 px[SW * SH], back[SW * SH];
    for (int i = 0; i < SW * SH; i++) px[i] = make_uchar4(i, 2 * i, 3 * i, 7);
    cudaChannelFormatDesc cd = cudaCreateChannelDesc<uchar4>();
    cudaArray_t sa;
    CHECK(cudaMallocArray(&sa, &cd, SW, SH, cudaArraySurfaceLoadStore));
    CHECK(cudaMemcpy2DToArray(sa, 0, 0, px, SW * 4, SW * 4, SH, cudaMemcpyHostToDevice));
    rd.res.array.array = sa;
    cudaSurfaceObject_t s;
    CHECK(cudaCreateSurfaceObject(&s, &rd));
    invert<<<dim3(1, 1), dim3(8, 4)>>>(s, SW, SH);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy2DFromArray(back, SW * 4, sa, 0, 0, SW * 4, SH, cudaMemcpyDeviceToHost));
    for (int i = 0; i < SW * SH; i++)
        if (back[i].x != 255 - i || back[i].y != 255 - 2 * i || back[i].z != 255 - 3 * i || back[i].w != 7) {
            std::printf("invert %d: %d %d %d %d\n", i, back[i].x, back[i].y, back[i].z, back[i].w);
            return 1;
        }
    CHECK(cudaDestroySurfaceObject(s));
    CHECK(cudaFreeArray(sa));

    // tex1Dfetch on linear memory.
    const int N = 300;
    int host[N], *lin, *res;
    for (int i = 0; i < N; i++) host[i] = i * i - 5000;
    CHECK(cudaMalloc(&lin, sizeof host));
    CHECK(cudaMalloc(&res, sizeof host));
    CHECK(cudaMemcpy(lin, host, sizeof host, cudaMemcpyHostToDevice));
    cudaResourceDesc lr = {};
    lr.resType = cudaResourceTypeLinear;
    lr.res.linear.devPtr = lin;
    lr.res.linear.desc = cudaCreateChannelDesc<int>();
    lr.res.linear.sizeInBytes = sizeof host;
    cudaTextureDesc ld = {};
    ld.readMode = cudaReadModeElementType;
    cudaTextureObject_t lt;
    CHECK(cudaCreateTextureObject(&lt, &lr, &ld, nullptr));
    gather<<<(N + 127) / 128, 128>>>(lt, res, N);
    CHECK(cudaGetLastError());
    int fetched[N];
    CHECK(cudaMemcpy(fetched, res, sizeof fetched, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        if (fetched[i] != host[N - 1 - i]) {
            std::printf("tex1Dfetch %d: %d, expected %d\n", i, fetched[i], host[N - 1 - i]);
            return 1;
        }
    CHECK(cudaDestroyTextureObject(lt));
    std::printf("TEXTURES VERIFIED\n");
    return 0;
}
