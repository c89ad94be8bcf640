// Throw-away probe (not committed): which shapes of memory-bound kernel reach the
// copy ceiling on this GPU, before porting the winner to Rust.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
namespace cg = cooperative_groups;

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ float warp_max(float v) { for (int o = 16; o; o /= 2) v = fmaxf(v, __shfl_xor_sync(~0u, v, o)); return v; }
__device__ __forceinline__ float warp_sum(float v) { for (int o = 16; o; o /= 2) v += __shfl_xor_sync(~0u, v, o); return v; }

template <int T>
__device__ __forceinline__ float block_red(float v, float* s, bool is_max) {
  v = is_max ? warp_max(v) : warp_sum(v);
  int w = threadIdx.x / 32, l = threadIdx.x % 32;
  if (l == 0) s[w] = v;
  __syncthreads();
  float r = l < T / 32 ? s[l] : (is_max ? -INFINITY : 0.f);
  r = is_max ? warp_max(r) : warp_sum(r);
  return r;
}

// A row of C*4*T*V floats over a cluster of C blocks; C = 1: a block per row.
template <int T, int V, int C>
__global__ void __launch_bounds__(T) sm_cluster(const float* __restrict__ x, float* __restrict__ y, int cols) {
  __shared__ float sm[32], ss[32];
  __shared__ float2 part;
  __shared__ float2 fin;
  int rank = C > 1 ? (int)cg::this_cluster().block_rank() : 0;
  size_t row = blockIdx.x / C;
  const float4* xr = (const float4*)(x + row * cols + (size_t)rank * 4 * T * V);
  float4* yr = (float4*)(y + row * cols + (size_t)rank * 4 * T * V);
  float4 v[V];
#pragma unroll
  for (int k = 0; k < V; k++) v[k] = xr[threadIdx.x + k * T];
  float m = -INFINITY;
#pragma unroll
  for (int k = 0; k < V; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
  m = block_red<T>(m, sm, true);
  float s = 0;
#pragma unroll
  for (int k = 0; k < V; k++) {
    v[k].x = __expf(v[k].x - m); v[k].y = __expf(v[k].y - m); v[k].z = __expf(v[k].z - m); v[k].w = __expf(v[k].w - m);
    s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
  }
  s = block_red<T>(s, ss, false);
  float f;
  if (C > 1) {
    cg::cluster_group cl = cg::this_cluster();
    if (threadIdx.x == 0) part = make_float2(m, s);
    cl.sync();
    if (threadIdx.x < 32) {
      float2 p = threadIdx.x < C ? *cl.map_shared_rank(&part, threadIdx.x) : make_float2(-INFINITY, 0.f);
      float M = warp_max(p.x);
      float S = warp_sum(p.y == 0.f ? 0.f : p.y * __expf(p.x - M));
      if (threadIdx.x == 0) fin = make_float2(M, S);
    }
    cl.sync();  // partners have read `part`; `fin` visible block-wide
    f = __expf(m - fin.x) / fin.y;
  } else {
    f = 1.f / s;
  }
#pragma unroll
  for (int k = 0; k < V; k++) { float4 e = v[k]; e.x *= f; e.y *= f; e.z *= f; e.w *= f; yr[threadIdx.x + k * T] = e; }
}

// Row sum of few long rows: `splits` blocks per row, U loads in flight per thread,
// atomics. NC: ld.global.nc (else ld.global.cs). STRIDE: blocks stride over the row
// (else each owns a contiguous part).
template <int T, int U, bool NC, bool STRIDE>
__global__ void __launch_bounds__(T) rowsum(const float* __restrict__ x, float* out, size_t cols, int splits) {
  __shared__ float s[32];
  int row = blockIdx.x / splits, part = blockIdx.x % splits;
  size_t n4 = cols / 4;
  const float4* xr = (const float4*)(x + row * cols);
  float acc[U] = {};
  size_t b, e, step;
  if (STRIDE) { b = (size_t)part * T * U; e = n4; step = (size_t)splits * T * U; }
  else { size_t per = (n4 + splits - 1) / splits; b = part * per; e = min(n4, b + per); step = (size_t)U * T; }
  size_t i = b + threadIdx.x;
  for (; i + (U - 1) * T < e; i += step) {
    float4 a[U];
#pragma unroll
    for (int u = 0; u < U; u++) a[u] = NC ? __ldg(xr + i + u * T) : __ldcs(xr + i + u * T);
#pragma unroll
    for (int u = 0; u < U; u++) acc[u] += (a[u].x + a[u].y) + (a[u].z + a[u].w);
  }
  if (!STRIDE) for (; i < e; i += T) { float4 a = xr[i]; acc[0] += (a.x + a.y) + (a.z + a.w); }
  float t = 0;
#pragma unroll
  for (int u = 0; u < U; u++) t += acc[u];
  t = block_red<T>(t, s, false);
  if (threadIdx.x == 0) atomicAdd(out + row, t);
}

static float* g_flush;
static void flush() { CK(cudaMemsetAsync(g_flush, 0, 256 << 20)); }

template <class F>
static float time_med(F f, int reps = 30) {
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; i++) f();
  std::vector<float> t;
  for (int i = 0; i < reps; i++) {
    flush();
    CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

static std::vector<double> ref_softmax_row(const std::vector<float>& h, size_t r, size_t cols) {
  double m = -INFINITY; for (size_t c = 0; c < cols; c++) m = std::max(m, (double)h[r * cols + c]);
  double s = 0; for (size_t c = 0; c < cols; c++) s += exp(h[r * cols + c] - m);
  std::vector<double> o(cols); for (size_t c = 0; c < cols; c++) o[c] = exp(h[r * cols + c] - m) / s; return o;
}

template <int T, int V, int C>
static void run_sm(const char* name, float* x, float* y, const std::vector<float>& hx, int rows, int cols, double copy_gbps) {
  if (cols != C * 4 * T * V) return;
  auto k = sm_cluster<T, V, C>;
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute at[1];
  cfg.gridDim = dim3(rows * C); cfg.blockDim = dim3(T);
  at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = C; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  if (C > 8) CK(cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  CK(cudaMemset(y, 0xff, (size_t)rows * cols * 4));
  auto launch = [&] { CK(cudaLaunchKernelEx(&cfg, k, (const float*)x, y, cols)); };
  launch(); CK(cudaDeviceSynchronize());
  std::vector<float> hy((size_t)rows * cols);
  CK(cudaMemcpy(hy.data(), y, hy.size() * 4, cudaMemcpyDeviceToHost));
  double err = 0;
  for (int r : {0, rows / 2, rows - 1}) { auto o = ref_softmax_row(hx, r, cols); for (int c = 0; c < cols; c++) err = std::max(err, fabs(hy[(size_t)r * cols + c] - o[c]) / (fabs(o[c]) + 1e-30)); }
  float ms = time_med(launch);
  double gbps = 8.0 * rows * cols / ms / 1e6;
  printf("softmax %-6s %5dx%-7d T=%4d V=%2d C=%2d  %.4f ms  %6.0f GB/s  %5.1f%% copy  err %.1e\n", name, rows, cols, T, V, C, ms, gbps, 100 * gbps / copy_gbps, err);
}

int main() {
  size_t big = 1ull << 28;  // floats: 1 GiB
  float *x, *y; CK(cudaMalloc(&x, big * 4)); CK(cudaMalloc(&y, big * 4)); CK(cudaMalloc(&g_flush, 256 << 20));
  std::vector<float> hx(big);
  uint32_t st = 12345; for (auto& v : hx) { st = st * 1664525 + 1013904223; v = ((st >> 8) / 16777216.0f - 0.5f) * 8.f; }
  CK(cudaMemcpy(x, hx.data(), big * 4, cudaMemcpyHostToDevice));
  float copy_ms = time_med([&] { CK(cudaMemcpyAsync(y, x, big * 4, cudaMemcpyDeviceToDevice)); }, 10);
  double copy = 2.0 * big * 4 / copy_ms / 1e6;
  printf("copy 1 GiB: %.3f ms = %.0f GB/s\n", copy_ms, copy);
  // Row sum of 4 x 2^26.
  {
    size_t cols = 1ull << 26; int rows = 4; float* out; CK(cudaMalloc(&out, 16));
    double ref[4]; for (int r = 0; r < 4; r++) { double s = 0; for (size_t c = 0; c < cols; c++) s += hx[r * cols + c]; ref[r] = s; }
    auto go = [&](auto kern, const char* name, int T, int splits) {
      auto launch = [&] { CK(cudaMemsetAsync(out, 0, 16)); kern<<<rows * splits, T>>>(x, out, cols, splits); };
      launch(); CK(cudaDeviceSynchronize());
      float h[4]; CK(cudaMemcpy(h, out, 16, cudaMemcpyDeviceToHost));
      double err = 0; for (int r = 0; r < 4; r++) err = std::max(err, fabs(h[r] - ref[r]) / 1e3);
      float ms = time_med(launch);
      double gbps = 4.0 * rows * cols / ms / 1e6;
      printf("rowsum 4x2^26 %-22s splits=%4d  %.4f ms  %6.0f GB/s read  (abs err/1e3 %.1e)\n", name, splits, ms, gbps, err);
    };
    for (int sp : {528, 1056, 2112}) {
      go(rowsum<256, 2, false, false>, "T256 U2 cs contig", 256, sp);
      go(rowsum<512, 4, false, false>, "T512 U4 cs contig", 512, sp);
      go(rowsum<512, 4, true, false>, "T512 U4 nc contig", 512, sp);
      go(rowsum<512, 8, false, false>, "T512 U8 cs contig", 512, sp);
      go(rowsum<256, 8, true, false>, "T256 U8 nc contig", 256, sp);
    }
    for (int sp : {132, 264, 528}) {
      go(rowsum<512, 4, false, true>, "T512 U4 cs stride", 512, sp);
      go(rowsum<512, 4, true, true>, "T512 U4 nc stride", 512, sp);
      go(rowsum<256, 8, true, true>, "T256 U8 nc stride", 256, sp);
    }
  }
#define SM(T, V, C) run_sm<T, V, C>(#T "x" #V, x, y, hx, rows, cols, copy)
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{{4096, 8192}, {4096, 16384}, {256, 65536}, {64, 262144}}) {
    SM(512, 4, 1); SM(256, 8, 1); SM(128, 16, 1); SM(512, 8, 1);
    SM(512, 8, 4); SM(256, 16, 4); SM(512, 16, 8); SM(512, 8, 16);
  }
  printf("done\n");
}
