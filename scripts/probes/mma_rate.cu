// Probe: the mma.sync issue rate of TF32 m16n8k8 against BF16 m16n8k16, register
// fragments only (no memory): the ceiling issue 10's mma.sync targets live under.
// nvcc -O3 -arch=sm_90 -o mma_rate mma_rate.cu && ./mma_rate
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

template <bool TF32>
__global__ void __launch_bounds__(256) rate(float* out, int iters) {
    int lane = threadIdx.x & 31;
    uint32_t a[4], b[2];
    for (int i = 0; i < 4; i++) a[i] = TF32 ? 0x3f800000u + (lane << 13) : 0x3f803f80u + (lane & 7);
    for (int i = 0; i < 2; i++) b[i] = TF32 ? 0x3a800000u : 0x3a803a80u;
    float acc[16][4] = {};
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int j = 0; j < 16; j++) {
            if (TF32)
                asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
            else
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                             : "+f"(acc[j][0]), "+f"(acc[j][1]), "+f"(acc[j][2]), "+f"(acc[j][3])
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
        }
    }
    float s = 0;
    for (int j = 0; j < 16; j++) s += acc[j][0] + acc[j][1] + acc[j][2] + acc[j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main() {
    cudaDeviceProp p; cudaGetDeviceProperties(&p, 0);
    float* out; cudaMalloc(&out, 1 << 24);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
    int iters = 4096;
    for (int per_sm : {1, 2, 4}) {
        int blocks = p.multiProcessorCount * per_sm;
        for (int tf = 0; tf < 2; tf++) {
            float best = 1e9;
            for (int r = 0; r < 5; r++) {
                cudaEventRecord(a);
                if (tf) rate<true><<<blocks, 256>>>(out, iters); else rate<false><<<blocks, 256>>>(out, iters);
                cudaEventRecord(b); cudaEventSynchronize(b);
                float ms; cudaEventElapsedTime(&ms, a, b); if (ms < best) best = ms;
            }
            double flops = (double)blocks * 8 * iters * 16 * (tf ? 2.0 * 16 * 8 * 8 : 2.0 * 16 * 8 * 16);
            printf("%s, %d blocks of 8 warps per SM: %.1f TFLOP/s\n", tf ? "tf32 m16n8k8  " : "bf16 m16n8k16", per_sm, flops / best / 1e9);
        }
    }
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
