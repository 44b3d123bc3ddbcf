// Hopper's warpgroup MMA (wgmma) as CUTLASS's CuTe library drives it, checked against a reference
// product on the host. Built by the venv's nvcc for compute_90a (PTX only) with CuTe's headers from
// the nvidia-cutlass wheel, and run on the `h100` device profile.
//
// CuTe lays each tile out in shared memory in one of its canonical wgmma layouts (K- or M/N-major;
// no swizzle, or 32-, 64-, 128-byte swizzles) and makes the matrix descriptors itself, so the
// emulation's reading of descriptors is checked against what the library writes for real GPUs. Each
// case computes one CTA tile C = A * B^T (A is M x K, B is N x K) over several k-tiles with inputs
// small enough that every sum is exact, and compares every element.

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cute/tensor.hpp>

using namespace cute;

// One CTA: the BM x BN tile of C, A and B staged through shared memory one BK-wide k-tile at a time.
// With `FromRegisters`, each thread copies its A fragment out of shared memory into registers first
// (the `_RS` atoms); otherwise both come to wgmma as descriptors.
template <bool FromRegisters, class TA, class TB, class TC, class LayoutA, class LayoutB, class Mma>
__global__ void tile_gemm(TA const* A, TB const* B, TC* C, int k_tiles, bool a_k_major, bool b_k_major,
                          LayoutA la, LayoutB lb, Mma mma)
{
    constexpr int BM = size<0>(LayoutA{}), BN = size<0>(LayoutB{}), BK = size<1>(LayoutA{});
    extern __shared__ __align__(1024) unsigned char smem[];
    TA* pa = reinterpret_cast<TA*>(smem);
    TB* pb = reinterpret_cast<TB*>(smem + ((cosize(la) * sizeof(TA) + 1023) / 1024) * 1024);
    Tensor sA = make_tensor(make_smem_ptr(pa), la);  // (BM, BK)
    Tensor sB = make_tensor(make_smem_ptr(pb), lb);  // (BN, BK)
    int K = k_tiles * BK;

    ThrMMA thr = mma.get_slice(threadIdx.x);
    Tensor tCsA = thr.partition_A(sA);
    Tensor tCsB = thr.partition_B(sB);
    auto tCrA = [&] {
        if constexpr (FromRegisters) {
            return thr.partition_fragment_A(sA);
        } else {
            return thr.make_fragment_A(tCsA);
        }
    }();
    Tensor tCrB = thr.make_fragment_B(tCsB);
    Tensor gC = make_tensor(make_gmem_ptr(C), make_shape(Int<BM>{}, Int<BN>{}), make_stride(Int<BN>{}, Int<1>{}));
    Tensor tCgC = thr.partition_C(gC);
    Tensor tCrC = thr.make_fragment_C(tCgC);
    clear(tCrC);

    for (int kt = 0; kt < k_tiles; ++kt) {
        // Global A is row-major (K-major) or column-major (M-major) as the case asks, likewise B.
        for (int i = threadIdx.x; i < BM * BK; i += blockDim.x) {
            int m = i % BM, k = i / BM, gk = kt * BK + k;
            sA(m, k) = A[a_k_major ? m * K + gk : gk * BM + m];
        }
        for (int i = threadIdx.x; i < BN * BK; i += blockDim.x) {
            int n = i % BN, k = i / BN, gk = kt * BK + k;
            sB(n, k) = B[b_k_major ? n * K + gk : gk * BN + n];
        }
        __syncthreads();
        if constexpr (FromRegisters) copy(tCsA, tCrA);
        warpgroup_fence_operand(tCrC);
        warpgroup_arrive();
        gemm(mma, tCrA, tCrB, tCrC);
        warpgroup_commit_batch();
        warpgroup_wait<0>();
        warpgroup_fence_operand(tCrC);
        __syncthreads();
    }
    for (int i = 0; i < size(tCrC); ++i) tCgC(i) = tCrC(i);
}

static int failures = 0;

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        printf("%s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

// Runs one case: inputs of small integers (scaled by `scale`, which keeps fp8 and tf32 exact), the
// tile on the device, and the exact product on the host; `negate` flips the expected sign.
template <class TA, class TB, class TC, class LayoutA, class LayoutB, class Mma>
static void run(const char* name, LayoutA la, LayoutB lb, Mma mma, int k_tiles, bool a_k, bool b_k,
                bool from_registers = false, double sign = 1.0)
{
    constexpr int BM = size<0>(LayoutA{}), BN = size<0>(LayoutB{}), BK = size<1>(LayoutA{});
    int K = k_tiles * BK;
    std::vector<TA> a(BM * K);
    std::vector<TB> b(BN * K);
    std::vector<double> av(BM * K), bv(BN * K);
    for (int m = 0; m < BM; ++m)
        for (int k = 0; k < K; ++k) {
            double v = double((m * 7 + k * 3) % 5) - 2.0;
            av[m * K + k] = v;
            a[a_k ? m * K + k : k * BM + m] = TA(v);
        }
    for (int n = 0; n < BN; ++n)
        for (int k = 0; k < K; ++k) {
            double v = double((n * 5 + k * 11) % 7) - 3.0;
            bv[n * K + k] = v;
            b[b_k ? n * K + k : k * BN + n] = TB(v);
        }
    TA* da;
    TB* db;
    TC* dc;
    check(cudaMalloc(&da, a.size() * sizeof(TA)), "cudaMalloc");
    check(cudaMalloc(&db, b.size() * sizeof(TB)), "cudaMalloc");
    check(cudaMalloc(&dc, BM * BN * sizeof(TC)), "cudaMalloc");
    check(cudaMemcpy(da, a.data(), a.size() * sizeof(TA), cudaMemcpyHostToDevice), "cudaMemcpy");
    check(cudaMemcpy(db, b.data(), b.size() * sizeof(TB), cudaMemcpyHostToDevice), "cudaMemcpy");
    int smem = int(((cosize(la) * sizeof(TA) + 1023) / 1024) * 1024 + cosize(lb) * sizeof(TB));
    int threads = int(size(mma));
    auto kernel = from_registers ? tile_gemm<true, TA, TB, TC, LayoutA, LayoutB, Mma>
                                 : tile_gemm<false, TA, TB, TC, LayoutA, LayoutB, Mma>;
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "attribute");
    kernel<<<1, threads, smem>>>(da, db, dc, k_tiles, a_k, b_k, la, lb, mma);
    check(cudaGetLastError(), name);
    check(cudaDeviceSynchronize(), name);
    std::vector<TC> c(BM * BN);
    check(cudaMemcpy(c.data(), dc, c.size() * sizeof(TC), cudaMemcpyDeviceToHost), "cudaMemcpy");
    int wrong = 0;
    for (int m = 0; m < BM; ++m)
        for (int n = 0; n < BN; ++n) {
            double want = 0;
            for (int k = 0; k < K; ++k) want += av[m * K + k] * bv[n * K + k];
            want *= sign;
            double got = double(c[m * BN + n]);
            if (got != want && wrong++ < 4) printf("  %s: C[%d][%d] = %g, want %g\n", name, m, n, got, want);
        }
    printf("%-44s %s (%dx%dx%d, %d threads)\n", name, wrong ? "WRONG" : "ok", BM, BN, K, threads);
    failures += wrong != 0;
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
}

int main()
{
    using namespace cute::GMMA;
    // f16 -> f32, both K-major, 128-byte swizzle; two k-tiles of four wgmma k-blocks each.
    run<half_t, half_t, float>("f16 K-major, 128B swizzle",
        tile_to_shape(Layout_K_SW128_Atom<half_t>{}, make_shape(_64{}, _64{})),
        tile_to_shape(Layout_K_SW128_Atom<half_t>{}, make_shape(_64{}, _64{})),
        make_tiled_mma(SM90_64x64x16_F32F16F16_SS<Major::K, Major::K>{}), 2, true, true);
    // f16 -> f16, both M/N-major (the transposes), 128-byte swizzle.
    run<half_t, half_t, half_t>("f16 MN-major, 128B swizzle, f16 accumulator",
        tile_to_shape(Layout_MN_SW128_Atom<half_t>{}, make_shape(_64{}, _64{})),
        tile_to_shape(Layout_MN_SW128_Atom<half_t>{}, make_shape(_64{}, _64{})),
        make_tiled_mma(SM90_64x64x16_F16F16F16_SS<Major::MN, Major::MN>{}), 2, false, false);
    // M/N-major with the 64- and 32-byte swizzles, and without.
    run<half_t, half_t, float>("f16 MN-major A, 64B swizzle; K-major B, 32B",
        tile_to_shape(Layout_MN_SW64_Atom<half_t>{}, make_shape(_64{}, _32{})),
        tile_to_shape(Layout_K_SW32_Atom<half_t>{}, make_shape(_64{}, _32{})),
        make_tiled_mma(SM90_64x64x16_F32F16F16_SS<Major::MN, Major::K>{}), 2, false, true);
    run<half_t, half_t, float>("f16 MN-major, no swizzle",
        tile_to_shape(Layout_MN_INTER_Atom<half_t>{}, make_shape(_64{}, _32{})),
        tile_to_shape(Layout_MN_INTER_Atom<half_t>{}, make_shape(_64{}, _32{})),
        make_tiled_mma(SM90_64x64x16_F32F16F16_SS<Major::MN, Major::MN>{}), 2, false, false);
    // bf16, K-major with the 64-byte swizzle, N = 32; and -A (imm-scale-a = -1).
    run<bfloat16_t, bfloat16_t, float>("bf16 K-major, 64B swizzle, -A",
        tile_to_shape(Layout_K_SW64_Atom<bfloat16_t>{}, make_shape(_64{}, _32{})),
        tile_to_shape(Layout_K_SW64_Atom<bfloat16_t>{}, make_shape(_32{}, _32{})),
        make_tiled_mma(SM90_64x32x16_F32BF16BF16_SS<Major::K, Major::K, ScaleIn::Neg, ScaleIn::One>{}), 2, true,
        true, false, -1.0);
    // tf32 (K-major only), 32-byte swizzle.
    run<tfloat32_t, tfloat32_t, float>("tf32 K-major, 32B swizzle",
        tile_to_shape(Layout_K_SW32_Atom<tfloat32_t>{}, make_shape(_64{}, _16{})),
        tile_to_shape(Layout_K_SW32_Atom<tfloat32_t>{}, make_shape(_16{}, _16{})),
        make_tiled_mma(SM90_64x16x8_F32TF32TF32_SS_TN<>{}), 3, true, true);
    // int8 -> s32 without swizzling (core matrices interleaved).
    run<int8_t, int8_t, int32_t>("s8 K-major, no swizzle",
        tile_to_shape(Layout_K_INTER_Atom<int8_t>{}, make_shape(_64{}, _64{})),
        tile_to_shape(Layout_K_INTER_Atom<int8_t>{}, make_shape(_32{}, _64{})),
        make_tiled_mma(SM90_64x32x32_S32S8S8_SS_TN{}), 2, true, true);
    // fp8 e4m3 -> f32, 128-byte swizzle.
    run<float_e4m3_t, float_e4m3_t, float>("e4m3 K-major, 128B swizzle",
        tile_to_shape(Layout_K_SW128_Atom<float_e4m3_t>{}, make_shape(_64{}, _128{})),
        tile_to_shape(Layout_K_SW128_Atom<float_e4m3_t>{}, make_shape(_64{}, _128{})),
        make_tiled_mma(SM90_64x64x32_F32E4M3E4M3_SS_TN<>{}), 1, true, true);
    // Two warpgroups along M (256 threads): the second holds rows 64..127.
    run<half_t, half_t, float>("f16 K-major, two warpgroups",
        tile_to_shape(Layout_K_SW128_Atom<half_t>{}, make_shape(_128{}, _64{})),
        tile_to_shape(Layout_K_SW128_Atom<half_t>{}, make_shape(_64{}, _64{})),
        make_tiled_mma(SM90_64x64x16_F32F16F16_SS<Major::K, Major::K>{}, Layout<Shape<_2, _1, _1>>{}), 1, true,
        true);
    // A from registers.
    run<half_t, half_t, float>("f16 A in registers, B K-major 128B swizzle",
        tile_to_shape(Layout_K_SW128_Atom<half_t>{}, make_shape(_64{}, _64{})),
        tile_to_shape(Layout_K_SW128_Atom<half_t>{}, make_shape(_64{}, _64{})),
        make_tiled_mma(SM90_64x64x16_F32F16F16_RS<Major::K, Major::K>{}), 2, true, true, true);
    if (failures) {
        printf("%d WGMMA CASES WRONG\n", failures);
        return 1;
    }
    printf("WGMMA VERIFIED\n");
    return 0;
}
