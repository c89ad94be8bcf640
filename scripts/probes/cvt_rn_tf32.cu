// cvt.rn.tf32.f32 against round-to-nearest-even in integers (simt_std::convert::tf32_rne_bits), all 2^32 inputs.
// nvcc -arch=sm_90a -O2 -o cvt_rn_tf32 cvt_rn_tf32.cu && ./cvt_rn_tf32   (H200, 2026-11-25: no mismatch in any class)
#include <cstdio>
#include <cstdint>
__device__ unsigned long long bad[4];
__device__ uint32_t first[4][3];
__global__ void k() {
  for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < (1ull << 32); i += (uint64_t)gridDim.x * blockDim.x) {
    uint32_t b = (uint32_t)i, r;
    float x = __uint_as_float(b);
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    uint32_t want = (x != x) ? 0x7fffe000u : (b + 0xfffu + ((b >> 13) & 1u)) & ~0x1fffu;
    if (r != want) {
      int cat = (x != x) ? 0 : ((b & 0x7f800000u) == 0 ? 1 : ((b & 0x7f800000u) == 0x7f800000u ? 2 : 3));
      unsigned long long n = atomicAdd(&bad[cat], 1ull);
      if (n == 0) { first[cat][0] = b; first[cat][1] = r; first[cat][2] = want; }
    }
  }
}
int main() {
  k<<<2048, 256>>>();
  cudaDeviceSynchronize();
  unsigned long long h[4]; uint32_t f[4][3];
  cudaMemcpyFromSymbol(h, bad, sizeof h); cudaMemcpyFromSymbol(f, first, sizeof f);
  const char* nm[4] = {"NaN", "zero/subnormal", "inf", "normal"};
  for (int c = 0; c < 4; c++) printf("%-15s mismatches %llu  first: in %08x got %08x want %08x\n", nm[c], h[c], f[c][0], f[c][1], f[c][2]);
  return 0;
}
