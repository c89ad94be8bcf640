// The timing harness of session 35's probes (gelu_mlp.cu, softmax_rows.cu): the
// sweep's method, with the variants of one shape interleaved.
//
// * before each timed run L2 is flushed by writing a buffer of twice its size (as
//   `bin/benchmarking --sweep` and `triton.testing.do_bench` do, leaving it dirty);
// * CUDA events around the variant's launch alone;
// * 20 warm-up runs of each variant, then `reps` rounds in which every variant runs
//   once, so a slow stretch of the device touches all of them alike;
// * each round of a probe allocates its buffers behind a `Spacer`, so their physical
//   placement changes while the code does not.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <functional>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1);} } while (0)

// The Rust kernels' fast math (`simt_std::math`): ex2.approx and rcp.approx.
__device__ __forceinline__ float ex2(float x) { float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
__device__ __forceinline__ float rcp_approx(float x) { float y; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
constexpr float LOG2E = 1.4426950408889634f;

__global__ void harness_fill(float* p, size_t n, float v) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = v;
}

// One design under test: its name and its launch.
struct Variant {
    std::string name;
    std::function<void()> f;
};

struct Harness {
    int sms = 0;
    float* flush = nullptr;
    size_t flush_n = 0;  // floats: twice L2
    cudaEvent_t a, b;

    Harness() {
        cudaDeviceProp prop;
        CK(cudaGetDeviceProperties(&prop, 0));
        sms = prop.multiProcessorCount;
        printf("device %s, %d SMs, L2 %d MiB\n", prop.name, sms, prop.l2CacheSize >> 20);
        flush_n = (size_t)prop.l2CacheSize / 2;
        CK(cudaMalloc(&flush, flush_n * 4));
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
    }

    // Times every variant (see the file's doc) and prints its median, 10th and 90th
    // percentiles, names padded to `width`.
    void time(const std::vector<Variant>& vs, int width, int reps = 30) {
        std::vector<std::vector<float>> t(vs.size());
        for (auto& v : vs)
            for (int w = 0; w < 20; w++) v.f();
        CK(cudaDeviceSynchronize());
        for (int r = 0; r < reps; r++)
            for (size_t k = 0; k < vs.size(); k++) {
                harness_fill<<<sms * 8, 512>>>(flush, flush_n, (float)r);
                CK(cudaEventRecord(a));
                vs[k].f();
                CK(cudaEventRecord(b));
                CK(cudaEventSynchronize(b));
                float ms;
                CK(cudaEventElapsedTime(&ms, a, b));
                t[k].push_back(ms);
            }
        for (size_t k = 0; k < vs.size(); k++) {
            std::sort(t[k].begin(), t[k].end());
            auto q = [&](double p) { return t[k][(size_t)std::lround((t[k].size() - 1) * p)]; };
            printf("  %-*s median %.4f  p10 %.4f  p90 %.4f ms\n", width, vs[k].name.c_str(), q(0.5), q(0.1), q(0.9));
        }
    }
};

// `round · 37` MiB allocated first, so that the buffers allocated after it land
// elsewhere in device memory each round; freed with the round.
struct Spacer {
    void* p = nullptr;
    explicit Spacer(int round) {
        if (round) CK(cudaMalloc(&p, (size_t)round * 37 << 20));
    }
    ~Spacer() {
        if (p) CK(cudaFree(p));
    }
};
