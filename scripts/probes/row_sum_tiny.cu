// Row sums of 4194304 x 3 under a write flush (as rust-simt's harness and do_bench), the
// load and store variants of row_sum_tiny_3's design. On a GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 scripts/probes/row_sum_tiny.cu -o tp && ./tp
// H200, 2026-11-26 (docs/PERFORMANCE.md session 29): runs/2026-11-26-h200-s29.txt.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s\n", cudaGetErrorString(e)); return 1; } } while (0)
template <int POL>
__device__ __forceinline__ float4 ld4(const float* p) {
  float4 v;
  if (POL == 0) asm volatile("ld.global.nc.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  else if (POL == 1) asm volatile("{.reg .b64 pol; createpolicy.fractional.L2::evict_last.b64 pol, 1.0; ld.global.nc.L1::evict_last.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], pol;}" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  else if (POL == 2) asm volatile("ld.global.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  else if (POL == 3) asm volatile("{.reg .b64 pol; createpolicy.fractional.L2::evict_first.b64 pol, 1.0; ld.global.nc.L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], pol;}" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}
// 4 rows a thread, the warp's 128 rows loaded coalesced, through shared memory (rust-simt's row_sum_tiny_3).
template <int POL, int ST>
__global__ void __launch_bounds__(256) tiny3(const float* x, float* out, unsigned rows) {
  __shared__ float4 stage[256 * 3];
  unsigned i = blockIdx.x * 256 + threadIdx.x, lane = threadIdx.x % 32, first = i - lane;
  float4* st = stage + (threadIdx.x / 32) * 96;
  if (4 * (first + 32) <= rows) {
    float4 g0 = ld4<POL>(x + 12 * (size_t)first + 4 * lane), g1 = ld4<POL>(x + 12 * (size_t)first + 4 * (lane + 32)), g2 = ld4<POL>(x + 12 * (size_t)first + 4 * (lane + 64));
    st[lane] = g0; st[lane + 32] = g1; st[lane + 64] = g2;
    __syncwarp();
    float4 a = st[3 * lane], b = st[3 * lane + 1], c = st[3 * lane + 2];
    float4 s = make_float4(a.x + a.y + a.z, a.w + b.x + b.y, b.z + b.w + c.x, c.y + c.z + c.w);
    if (ST == 0) *(float4*)(out + 4 * (size_t)i) = s;
    else asm volatile("st.global.cs.v4.f32 [%0], {%1,%2,%3,%4};" :: "l"(out + 4 * (size_t)i), "f"(s.x), "f"(s.y), "f"(s.z), "f"(s.w));
  } else {
    for (unsigned r = 4 * i; r < rows && r < 4 * i + 4; r++) out[r] = x[3 * (size_t)r] + x[3 * (size_t)r + 1] + x[3 * (size_t)r + 2];
  }
}
// Triton's: a thread per row, three scalar loads with an evict_last policy.
template <int POL>
__global__ void __launch_bounds__(128) scalar3(const float* x, float* out, unsigned rows) {
  unsigned r = blockIdx.x * 128 + threadIdx.x;
  if (r >= rows) return;
  float a, b, c; const float* p = x + 3 * (size_t)r;
  if (POL == 1) asm volatile("{.reg .b64 pol; createpolicy.fractional.L2::evict_last.b64 pol, 1.0; ld.global.L1::evict_last.L2::cache_hint.f32 %0, [%3], pol; ld.global.L1::evict_last.L2::cache_hint.f32 %1, [%3+4], pol; ld.global.L1::evict_last.L2::cache_hint.f32 %2, [%3+8], pol;}" : "=f"(a), "=f"(b), "=f"(c) : "l"(p));
  else { a = p[0]; b = p[1]; c = p[2]; }
  out[r] = a + b + c;
}
__global__ void fill(float* p, size_t n) { for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = 1.0f; }
int main() {
  const unsigned rows = 4194304; size_t nf = 100u << 20; nf /= 4;
  float *x, *out, *fl; CK(cudaMalloc(&x, rows * 12)); CK(cudaMalloc(&out, rows * 4)); CK(cudaMalloc(&fl, nf * 4));
  std::vector<float> h(rows * 3); for (size_t i = 0; i < h.size(); i++) h[i] = (i % 1000) / 1000.0f;
  CK(cudaMemcpy(x, h.data(), rows * 12, cudaMemcpyHostToDevice));
  cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
  auto run = [&](const char* name, auto launch) {
    for (int w = 0; w < 2000; w++) launch();
    cudaDeviceSynchronize();
    std::vector<float> t;
    for (int r = 0; r < 60; r++) {
      fill<<<1056, 256>>>(fl, nf);
      cudaEventRecord(s); launch(); cudaEventRecord(e); cudaEventSynchronize(e);
      float ms; cudaEventElapsedTime(&ms, s, e); t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    std::vector<float> o(rows); cudaMemcpy(o.data(), out, rows * 4, cudaMemcpyDeviceToHost);
    double err = 0; for (unsigned r = 0; r < rows; r++) err = std::max(err, (double)fabsf(o[r] - (h[3 * r] + h[3 * r + 1] + h[3 * r + 2])));
    printf("%-34s median %.4f ms  p10 %.4f  err %.1e\n", name, t[30], t[6], err);
  };
  unsigned g256 = (rows / 4 + 255) / 256, g128 = (rows + 127) / 128;
  for (int round = 0; round < 2; round++) {
    run("tiny3 nc (ours)", [&] { tiny3<0, 0><<<g256, 256>>>(x, out, rows); });
    run("tiny3 nc + L2 evict_last", [&] { tiny3<1, 0><<<g256, 256>>>(x, out, rows); });
    run("tiny3 plain ld", [&] { tiny3<2, 0><<<g256, 256>>>(x, out, rows); });
    run("tiny3 nc + L2 evict_first", [&] { tiny3<3, 0><<<g256, 256>>>(x, out, rows); });
    run("tiny3 nc, st.cs", [&] { tiny3<0, 1><<<g256, 256>>>(x, out, rows); });
    run("tiny3 nc + evict_last, st.cs", [&] { tiny3<1, 1><<<g256, 256>>>(x, out, rows); });
    run("scalar3 (Triton's, evict_last)", [&] { scalar3<1><<<g128, 128>>>(x, out, rows); });
    run("scalar3 plain", [&] { scalar3<0><<<g128, 128>>>(x, out, rows); });
  }
  return 0;
}
