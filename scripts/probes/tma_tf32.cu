// What does the bulk tensor copy (TMA) do to f32 data under a TFLOAT32 tensor map?
// Loads a 16x64 f32 matrix of chosen bit patterns into shared memory through maps of
// data type FLOAT32 (7), FLOAT32_FTZ (10), TFLOAT32 (11) and TFLOAT32_FTZ (12), writes
// shared memory back with plain stores, and classifies each element against exact,
// truncation, round-to-nearest-even and round-to-nearest-away (cvt.rna) on the host.
// Then the other direction: plain stores into shared memory, a TMA store through each
// map. Build: nvcc -arch=sm_90a -o tma_tf32 tma_tf32.cu -lcuda
#include <cuda.h>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>

#define CK(x) do { CUresult r = (x); if (r != CUDA_SUCCESS) { const char* s; cuGetErrorString(r, &s); printf("%s: %s\n", #x, s); return 1; } } while (0)
#define CR(x) do { cudaError_t r = (x); if (r != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(r)); return 1; } } while (0)

constexpr int R = 16, C = 64, N = R * C;

__global__ void load_kernel(const __grid_constant__ CUtensorMap map, float* out) {
  __shared__ alignas(128) float tile[N];
  __shared__ alignas(8) uint64_t bar;
  uint32_t sb = (uint32_t)__cvta_generic_to_shared(&bar);
  uint32_t st = (uint32_t)__cvta_generic_to_shared(tile);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(sb));
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(sb), "r"(N * 4));
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(st), "l"(&map), "r"(0), "r"(0), "r"(sb) : "memory");
  }
  __syncthreads();
  uint32_t done = 0;
  while (!done) asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }" : "=r"(done) : "r"(sb) : "memory");
  for (int i = threadIdx.x; i < N; i += blockDim.x) out[i] = tile[i];
}

__global__ void store_kernel(const __grid_constant__ CUtensorMap map, const float* in) {
  __shared__ alignas(128) float tile[N];
  for (int i = threadIdx.x; i < N; i += blockDim.x) tile[i] = in[i];
  asm volatile("fence.proxy.async.shared::cta;");
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t st = (uint32_t)__cvta_generic_to_shared(tile);
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];" :: "l"(&map), "r"(0), "r"(0), "r"(st) : "memory");
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

static uint32_t trunc13(uint32_t x) { return x & ~0x1FFFu; }
static uint32_t rne(uint32_t x) {
  if ((x & 0x7F800000u) == 0x7F800000u) return (x & 0x7FFFFFu) ? (x | 0x400000u) & ~0x1FFFu : x;
  uint32_t lsb = (x >> 13) & 1; return (x + 0xFFFu + lsb) & ~0x1FFFu;
}
static uint32_t rna(uint32_t x) {
  if ((x & 0x7F800000u) == 0x7F800000u) return (x & 0x7FFFFFu) ? (x | 0x400000u) & ~0x1FFFu : x;
  return (x + 0x1000u) & ~0x1FFFu;
}

int main() {
  CK(cuInit(0)); CR(cudaSetDevice(0)); CR(cudaFree(0));
  std::vector<uint32_t> h(N);
  const uint32_t special[] = {0x3F800000, 0x3F801000, 0x3F803000, 0x3F800FFF, 0x3F801001, 0x3F801FFF, 0x3F802FFF,
                              0xBF801000, 0xBF803000, 0xBF801001, 0x7F7FFFFF, 0x7F7FF000, 0x7F800000, 0xFF800000,
                              0x7FC00000, 0x7F800001, 0x7FC01001, 0x00000001, 0x00001000, 0x00003000, 0x00400000,
                              0x007FFFFF, 0x80001001, 0x00800000, 0x00801000, 0x40490FDB,
                              0xFFC00000, 0xFF800001, 0xFFFFFFFF, 0x80001000, 0x80003000, 0x7F7FEFFF};
  const int ns = sizeof(special) / 4;
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < N; i++) {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    uint32_t e = 100 + (s >> 40) % 56;  // normal exponents around 1
    h[i] = i < ns ? special[i] : (uint32_t)((s >> 63) << 31) | (e << 23) | (uint32_t)(s & 0x7FFFFF);
  }
  float *din, *dout; CR(cudaMalloc(&din, N * 4)); CR(cudaMalloc(&dout, N * 4));
  CR(cudaMemcpy(din, h.data(), N * 4, cudaMemcpyHostToDevice));
  const int types[] = {7, 10, 11, 12};
  const char* names[] = {"FLOAT32", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"};
  for (int dir = 0; dir < 2; dir++) for (int t = 0; t < 4; t++) {
    CUtensorMap map; cuuint64_t dims[2] = {C, R}; cuuint64_t strides[1] = {C * 4};
    cuuint32_t box[2] = {C, R}; cuuint32_t es[2] = {1, 1};
    float* g = dir == 0 ? din : dout;
    CK(cuTensorMapEncodeTiled(&map, (CUtensorMapDataType)types[t], 2, g, dims, strides, box, es,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                              CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    CR(cudaMemset(dout, 0xFF, N * 4));
    if (dir == 0) load_kernel<<<1, 128>>>(map, dout); else store_kernel<<<1, 128>>>(map, din);
    CR(cudaDeviceSynchronize());
    std::vector<uint32_t> o(N); CR(cudaMemcpy(o.data(), dout, N * 4, cudaMemcpyDeviceToHost));
    int exact = 0, tr = 0, ne = 0, na = 0, other = 0;
    for (int i = 0; i < N; i++) {
      uint32_t x = h[i], y = o[i];
      exact += y == x; tr += y == trunc13(x); ne += y == rne(x); na += y == rna(x);
      other += y != x && y != trunc13(x) && y != rne(x) && y != rna(x);
    }
    printf("%s %-13s: of %d: exact %d, trunc %d, rne %d, rna %d, none of these %d\n", dir ? "store" : "load ", names[t], N, exact, tr, ne, na, other);
    for (int i = 0; i < ns; i++)
      printf("   in %08x -> %08x  (trunc %08x rne %08x rna %08x)\n", h[i], o[i], trunc13(h[i]), rne(h[i]), rna(h[i]));
  }
  return 0;
}
