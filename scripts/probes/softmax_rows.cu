// Probe: the register-resident softmax (kernels/src/softmax_regs.rs) at 4096 x N in
// other block shapes, beside a copy of the same bytes, under the sweep's write flush.
//
// Session 35 found our fused GeLU at cudaMemcpy's speed at 64 MiB, and the fused
// softmax at 4096 x 4096 a few percent slower in the sweeps, level with Triton's (the same
// design: Triton's tutorial kernel with 8 warps a row). Which of the block's
// shape, its two barriers and the wave count cost the difference?
//
// ROWS(T, V, R): blocks of T threads, V 16-byte vectors a thread, R rows a block
// (R rows loaded before the first reduction; the R maxima share one barrier, as do
// the R sums). `softmax_row_4k` is ROWS(256, 4, 1).
//
// Timed in `harness.h`'s harness (the sweep's flush and timing, the variants
// interleaved, the buffers re-placed each round).
//
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90a -o softmax_rows softmax_rows.cu && ./softmax_rows
// (`./softmax_rows 5 barriers`: ours against the one-barrier kernel only, five rounds.)
#include "harness.h"

template <int T, int V, int R>
__global__ void __launch_bounds__(T) rows(const float4* __restrict__ x, float4* __restrict__ y, int nrows, int cols4) {
    constexpr int W = T / 32;
    __shared__ float red[2][R][W];
    const int t = threadIdx.x, lane = t & 31, w = t >> 5;
    const int r0 = blockIdx.x * R;
    float4 v[R][V];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int k = 0; k < V; k++) {
            int c = t + T * k;
            v[r][k] = (r0 + r < nrows && c < cols4) ? x[(size_t)(r0 + r) * cols4 + c] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        }
    float m[R], s[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        float a = -INFINITY;
#pragma unroll
        for (int k = 0; k < V; k++) a = fmaxf(a, fmaxf(fmaxf(v[r][k].x, v[r][k].y), fmaxf(v[r][k].z, v[r][k].w)));
#pragma unroll
        for (int o = 16; o; o >>= 1) a = fmaxf(a, __shfl_xor_sync(~0u, a, o));
        if (lane == 0) red[0][r][w] = a;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; r++) {
        float a = -INFINITY;
#pragma unroll
        for (int i = 0; i < W; i++) a = fmaxf(a, red[0][r][i]);
        m[r] = a * LOG2E;
        float b = 0.f;
#pragma unroll
        for (int k = 0; k < V; k++)
            b += ex2(fmaf(v[r][k].x, LOG2E, -m[r])) + ex2(fmaf(v[r][k].y, LOG2E, -m[r])) + ex2(fmaf(v[r][k].z, LOG2E, -m[r])) +
                 ex2(fmaf(v[r][k].w, LOG2E, -m[r]));
#pragma unroll
        for (int o = 16; o; o >>= 1) b += __shfl_xor_sync(~0u, b, o);
        if (lane == 0) red[1][r][w] = b;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; r++) {
        float b = 0.f;
#pragma unroll
        for (int i = 0; i < W; i++) b += red[1][r][i];
        s[r] = rcp_approx(b);
#pragma unroll
        for (int k = 0; k < V; k++) {
            int c = t + T * k;
            if (r0 + r < nrows && c < cols4) {
                float4 q = v[r][k];
                y[(size_t)(r0 + r) * cols4 + c] = make_float4(ex2(fmaf(q.x, LOG2E, -m[r])) * s[r], ex2(fmaf(q.y, LOG2E, -m[r])) * s[r],
                                                              ex2(fmaf(q.z, LOG2E, -m[r])) * s[r], ex2(fmaf(q.w, LOG2E, -m[r])) * s[r]);
            }
        }
    }
}

// ROWS with one barrier: each warp reduces its slice to (m_w, Σ exp(x - m_w)) with
// shuffles, the block exchanges the W pairs once, every thread combines them
// (M = max m_w, S = Σ s_w·exp(m_w - M)), as the online softmax combines chunks.
template <int T, int V>
__global__ void __launch_bounds__(T) rows1b(const float4* __restrict__ x, float4* __restrict__ y, int nrows, int cols4) {
    constexpr int W = T / 32;
    __shared__ float2 pw[W];
    const int t = threadIdx.x, lane = t & 31, w = t >> 5, r = blockIdx.x;
    float4 v[V];
#pragma unroll
    for (int k = 0; k < V; k++) {
        int c = t + T * k;
        v[k] = c < cols4 ? x[(size_t)r * cols4 + c] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    }
    float a = -INFINITY;
#pragma unroll
    for (int k = 0; k < V; k++) a = fmaxf(a, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
#pragma unroll
    for (int o = 16; o; o >>= 1) a = fmaxf(a, __shfl_xor_sync(~0u, a, o));
    const float ml = a * LOG2E;
    float b = 0.f;
#pragma unroll
    for (int k = 0; k < V; k++)
        b += ex2(fmaf(v[k].x, LOG2E, -ml)) + ex2(fmaf(v[k].y, LOG2E, -ml)) + ex2(fmaf(v[k].z, LOG2E, -ml)) + ex2(fmaf(v[k].w, LOG2E, -ml));
#pragma unroll
    for (int o = 16; o; o >>= 1) b += __shfl_xor_sync(~0u, b, o);
    if (lane == 0) pw[w] = make_float2(a, b);
    __syncthreads();
    float M = -INFINITY;
#pragma unroll
    for (int i = 0; i < W; i++) M = fmaxf(M, pw[i].x);
    const float Ml = M * LOG2E;
    float S = 0.f;
#pragma unroll
    for (int i = 0; i < W; i++) S += pw[i].y * ex2(fmaf(pw[i].x, LOG2E, -Ml));
    const float inv = rcp_approx(S);
#pragma unroll
    for (int k = 0; k < V; k++) {
        int c = t + T * k;
        if (c < cols4) {
            float4 q = v[k];
            y[(size_t)r * cols4 + c] = make_float4(ex2(fmaf(q.x, LOG2E, -Ml)) * inv, ex2(fmaf(q.y, LOG2E, -Ml)) * inv,
                                                   ex2(fmaf(q.z, LOG2E, -Ml)) * inv, ex2(fmaf(q.w, LOG2E, -Ml)) * inv);
        }
    }
}

// A persistent grid of G blocks, block b taking rows b, b + G, ...: the next row's
// loads are issued before this row's barriers (software pipelining across rows).
template <int T, int V>
__global__ void __launch_bounds__(T) pipe(const float4* __restrict__ x, float4* __restrict__ y, int nrows, int cols4) {
    constexpr int W = T / 32;
    __shared__ float red[2][2][W];  // [parity][max, sum][warp]: a row's slots are rewritten two rows later
    const int t = threadIdx.x, lane = t & 31, w = t >> 5, G = gridDim.x;
    float4 cur[V], nxt[V];
    int r = blockIdx.x;
    auto load = [&](float4* v, int row) {
#pragma unroll
        for (int k = 0; k < V; k++) {
            int c = t + T * k;
            v[k] = c < cols4 ? x[(size_t)row * cols4 + c] : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        }
    };
    if (r < nrows) load(cur, r);
    for (int i = 0; r < nrows; r += G, i ^= 1) {
        if (r + G < nrows) load(nxt, r + G);
        float a = -INFINITY;
#pragma unroll
        for (int k = 0; k < V; k++) a = fmaxf(a, fmaxf(fmaxf(cur[k].x, cur[k].y), fmaxf(cur[k].z, cur[k].w)));
#pragma unroll
        for (int o = 16; o; o >>= 1) a = fmaxf(a, __shfl_xor_sync(~0u, a, o));
        if (lane == 0) red[i][0][w] = a;
        __syncthreads();
        a = -INFINITY;
#pragma unroll
        for (int j = 0; j < W; j++) a = fmaxf(a, red[i][0][j]);
        const float m = a * LOG2E;
        float b = 0.f;
#pragma unroll
        for (int k = 0; k < V; k++)
            b += ex2(fmaf(cur[k].x, LOG2E, -m)) + ex2(fmaf(cur[k].y, LOG2E, -m)) + ex2(fmaf(cur[k].z, LOG2E, -m)) + ex2(fmaf(cur[k].w, LOG2E, -m));
#pragma unroll
        for (int o = 16; o; o >>= 1) b += __shfl_xor_sync(~0u, b, o);
        if (lane == 0) red[i][1][w] = b;
        __syncthreads();
        b = 0.f;
#pragma unroll
        for (int j = 0; j < W; j++) b += red[i][1][j];
        const float s = rcp_approx(b);
#pragma unroll
        for (int k = 0; k < V; k++) {
            int c = t + T * k;
            if (c < cols4) {
                float4 q = cur[k];
                y[(size_t)r * cols4 + c] = make_float4(ex2(fmaf(q.x, LOG2E, -m)) * s, ex2(fmaf(q.y, LOG2E, -m)) * s,
                                                       ex2(fmaf(q.z, LOG2E, -m)) * s, ex2(fmaf(q.w, LOG2E, -m)) * s);
            }
        }
#pragma unroll
        for (int k = 0; k < V; k++) cur[k] = nxt[k];
    }
}

template <int T, int V>
static int pipe_grid(int sms, int nrows, int per_block_rows) {
    int per = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, pipe<T, V>, T, 0));
    int g = sms * per;
    if (per_block_rows) g = std::min(g, (nrows + per_block_rows - 1) / per_block_rows);
    return std::min(g, nrows);
}

int main(int argc, char** argv) {
    Harness hx;
    const int sms = hx.sms;
    int rounds = argc > 1 ? atoi(argv[1]) : 3;
    const int M = 4096;
    for (int N : {2048, 4096, 8192}) {
        size_t n = (size_t)M * N; int c4 = N / 4;
        for (int round = 0; round < rounds; round++) {
            Spacer spacer(round);
            float *x, *y; CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4));
            std::vector<float> h(n);
            uint64_t st = 12345 + round;
            for (size_t i = 0; i < n; i++) { st = st * 6364136223846793005ull + 1442695040888963407ull; h[i] = ((st >> 40) / (float)(1 << 24)) * 8.f - 4.f; }
            CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
            const float4* X = (const float4*)x; float4* Y = (float4*)y;
            std::vector<Variant> vs;
            auto add_any = [&](int T, int V, int R, std::function<void()> f) {
                if (4 * T * V >= N && 4 * T * V < 2 * N) vs.push_back({"rows T" + std::to_string(T) + " V" + std::to_string(V) + " R" + std::to_string(R), f});
            };
            const bool only = argc > 2 && std::string(argv[2]) == "barriers";
            auto add = [&](int T, int V, int R, std::function<void()> f) {
                if (only && R != 1) return;
                const bool ours = (N == 2048 && T == 128 && V == 4) || (N == 4096 && T == 256 && V == 4) ||
                                  (N == 4096 && T == 128 && V == 8) || (N == 8192 && T == 512 && V == 4);
                if (only && !ours) return;  // ours (and 128 x 8) beside the one-barrier kernels
                add_any(T, V, R, f);
            };
            add(128, 4, 1, [&] { rows<128, 4, 1><<<M, 128>>>(X, Y, M, c4); });
            add(256, 2, 1, [&] { rows<256, 2, 1><<<M, 256>>>(X, Y, M, c4); });
            add(64, 8, 1, [&] { rows<64, 8, 1><<<M, 64>>>(X, Y, M, c4); });
            add(128, 4, 2, [&] { rows<128, 4, 2><<<M / 2, 128>>>(X, Y, M, c4); });
            add(256, 4, 1, [&] { rows<256, 4, 1><<<M, 256>>>(X, Y, M, c4); });
            add(128, 8, 1, [&] { rows<128, 8, 1><<<M, 128>>>(X, Y, M, c4); });
            add(512, 2, 1, [&] { rows<512, 2, 1><<<M, 512>>>(X, Y, M, c4); });
            add(1024, 1, 1, [&] { rows<1024, 1, 1><<<M, 1024>>>(X, Y, M, c4); });
            add(256, 4, 2, [&] { rows<256, 4, 2><<<M / 2, 256>>>(X, Y, M, c4); });
            // One barrier (session 35, call 11), at each width's shape of ours.
            if (N == 2048) vs.push_back({"rows1b T128 V4", [&] { rows1b<128, 4><<<M, 128>>>(X, Y, M, c4); }});
            if (N == 4096) vs.push_back({"rows1b T256 V4", [&] { rows1b<256, 4><<<M, 256>>>(X, Y, M, c4); }});
            if (N == 4096) vs.push_back({"rows1b T128 V8", [&] { rows1b<128, 8><<<M, 128>>>(X, Y, M, c4); }});
            if (N == 8192) vs.push_back({"rows1b T512 V4", [&] { rows1b<512, 4><<<M, 512>>>(X, Y, M, c4); }});
            add(512, 4, 1, [&] { rows<512, 4, 1><<<M, 512>>>(X, Y, M, c4); });
            add(256, 8, 1, [&] { rows<256, 8, 1><<<M, 256>>>(X, Y, M, c4); });
            add(1024, 2, 1, [&] { rows<1024, 2, 1><<<M, 1024>>>(X, Y, M, c4); });
            // The persistent pipelined kernel at the row shape of ours: every resident block,
            // and the fewest blocks that give each the same number of rows.
            if (!only) {
                const int T = N == 2048 ? 128 : N == 4096 ? 256 : 512;
                for (int even = 0; even < 2; even++) {
                    int g = 0;
                    std::function<void(int)> launch;
                    if (T == 128) { g = pipe_grid<128, 4>(sms, M, 0); launch = [&](int gg) { pipe<128, 4><<<gg, 128>>>(X, Y, M, c4); }; }
                    if (T == 256) { g = pipe_grid<256, 4>(sms, M, 0); launch = [&](int gg) { pipe<256, 4><<<gg, 256>>>(X, Y, M, c4); }; }
                    if (T == 512) { g = pipe_grid<512, 4>(sms, M, 0); launch = [&](int gg) { pipe<512, 4><<<gg, 512>>>(X, Y, M, c4); }; }
                    if (even) { int per = (M + g - 1) / g; g = (M + per - 1) / per; }
                    vs.push_back({"pipe T" + std::to_string(T) + " V4 G" + std::to_string(g), [launch, g] { launch(g); }});
                }
            }
            vs.push_back({"cudaMemcpyAsync (copy)", [&] { CK(cudaMemcpyAsync(y, x, n * 4, cudaMemcpyDeviceToDevice)); }});
            // Every variant checked against float64 on three rows, y poisoned first.
            for (auto& v : vs) {
                if (v.name[0] == 'c') continue;
                CK(cudaMemset(y, 0xff, n * 4));
                v.f();
                CK(cudaDeviceSynchronize());
                double worst = 0;
                std::vector<float> o(N);
                for (int r : {0, M / 2 + 1, M - 1}) {
                    CK(cudaMemcpy(o.data(), y + (size_t)r * N, N * 4, cudaMemcpyDeviceToHost));
                    double mx = -INFINITY, sum = 0;
                    for (int j = 0; j < N; j++) mx = std::max(mx, (double)h[(size_t)r * N + j]);
                    for (int j = 0; j < N; j++) sum += std::exp(h[(size_t)r * N + j] - mx);
                    for (int j = 0; j < N; j++) {
                        double ref = std::exp(h[(size_t)r * N + j] - mx) / sum, e = std::fabs(o[j] - ref) / ref;
                        worst = std::max(worst, e == e ? e : 1e9);
                    }
                }
                if (worst > 1e-4) printf("  %s: worst rel err %.1e BAD\n", v.name.c_str(), worst);
            }
            printf("4096x%d round %d (x at %p)\n", N, round, (void*)x);
            hx.time(vs, 28);
            CK(cudaFree(x)); CK(cudaFree(y));
        }
    }
    return 0;
}
