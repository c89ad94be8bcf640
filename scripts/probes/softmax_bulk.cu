// Probe (issue 12, session 33): long-row softmax with chunks brought into shared
// memory by 1-D bulk copies (`cp.async.bulk ... mbarrier::complete_tx`), a ring of
// ST chunks per block, one block per SM, so the DRAM reads of the next chunks are in
// flight while a block reduces, waits for its row and writes. Rows are cut into
// CHUNK-column chunks; block b takes chunks b, b + grid, ... The designs, in the
// order they were measured (docs/PERFORMANCE.md, session 33, has the numbers):
//
// smx     v1: one loop of 512 threads. MODE 0: the row wait in line, y stored from
//         registers; 1: y staged and bulk-stored; 2: the pipeline as a copy (the
//         ceiling); 3: no wait (wrong output: what the wait costs).
// smx_lag v1 with the write of chunk i - 1 after the stats of chunk i (CW: a control
//         warp publishes and waits).
// smx_ws  a control warp publishes and resolves, 16 compute warps with a named
//         barrier, fixed lag L; LL: pairs as epoch-tagged 64-bit words.
// smx_w   no barrier among compute warps (per-warp pairs), a publisher, a producer
//         and a resolver warp; fixed lag L; CP: as a copy.
// smx_w3  NS stats warps and 16 - NS write warps, no fixed lag, a shallow start of D
//         chunks (D = ST: none). What kernels/src/softmax_bulk.rs ports.
// smx_cw3 smx_w3 with each row on a cluster of C = splits blocks, the pairs exchanged
//         through distributed shared memory (no global round trip): 12-21% slower.
//
// Timings: median of 30 CUDA-event timings, L2 flushed by a 256 MiB memset before
// each (as do_bench). Every variant's output is checked on three rows.
//
//   nvcc -O3 -arch=sm_90a -o softmax_bulk softmax_bulk.cu -lcuda && ./softmax_bulk
//   ./softmax_bulk timeline    # smx_w3's timeline (session 34)
//   ./softmax_bulk chunks      # smx_w3 with chunks of 4096 and 16384 columns (session 35)
//   ./softmax_bulk launch PTX  # cooperative against ordinary launches (session 35)
//   ./softmax_bulk rust PTX    # the Rust kernel from a bundle's kernels_sm90a.ptx (-lcuda)
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e = (x);                                                             \
    if (e != cudaSuccess) {                                                          \
      printf("error %s at line %d: %s\n", #x, __LINE__, cudaGetErrorString(e));      \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

__device__ __forceinline__ uint32_t sa(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* b, uint32_t n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sa(b)), "r"(n));
}
__device__ __forceinline__ void mbar_expect(uint64_t* b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sa(b)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(sa(b)), "r"(parity)
        : "memory");
  }
}
__device__ __forceinline__ void mbar_arrive(uint64_t* b) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sa(b)) : "memory");
}
template <int HINT>
__device__ __forceinline__ void bulk_load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
  if (HINT) {
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(sa(dst)),
        "l"(src), "r"(bytes), "r"(sa(bar)), "l"(pol)
        : "memory");
  } else {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(sa(dst)),
                 "l"(src), "r"(bytes), "r"(sa(bar))
                 : "memory");
  }
}
__device__ __forceinline__ void bulk_store(void* dst, const void* src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(sa(src)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
__device__ __forceinline__ void bulk_wait_read0() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait0() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ uint32_t ld_acquire(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_release(uint32_t* p, uint32_t v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}


// A pair published as two self-validating 64-bit words {value, epoch} (NCCL's LL
// protocol): each 64-bit access is single-copy atomic, so a reader that sees the epoch
// in both words has the pair, with no release fence on the writer's side and one
// round trip on the reader's.
__device__ __forceinline__ void ll_put(uint4* p, float m, float s, uint32_t epoch) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(__float_as_uint(m)), "r"(epoch),
               "r"(__float_as_uint(s)), "r"(epoch)
               : "memory");
}
__device__ __forceinline__ uint4 ll_get(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p) : "memory");
  return v;
}

constexpr int T = 512;

// The timeline of TL variants: TLJ chunk slots of TLE stamps per block (issued,
// landed, published, resolved, written), then 2 stamps per block (start, end); a
// stamp is {%globaltimer (ns, 32 ns ticks), clock64}.
constexpr int TLJ = 64, TLE = 5;
__device__ unsigned long long* g_tl;
__device__ __forceinline__ void put_stamp(size_t i) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  g_tl[2 * i] = t;
  g_tl[2 * i + 1] = clock64();
}
template <int TL>
__device__ __forceinline__ void stamp(int b, int j, int e) {
  if (TL && j < TLJ) put_stamp(((size_t)b * TLJ + j) * TLE + e);
}
template <int TL>
__device__ __forceinline__ void stamp_block(int b, int G, int e) {
  if (TL) put_stamp((size_t)G * TLJ * TLE + 2 * b + e);
}
constexpr float LOG2E = 1.4426950408889634f;

// Combines the lanes' (M, S) pairs over xor offsets FIRST, FIRST/2, ..., 1 (every lane
// of a group of 2·FIRST gets the group's pair).
template <int FIRST>
__device__ __forceinline__ void combine_xor(float& M, float& S) {
#pragma unroll
  for (int o = FIRST; o; o >>= 1) {
    float Mo = __shfl_xor_sync(~0u, M, o), So = __shfl_xor_sync(~0u, S, o);
    float Mn = fmaxf(M, Mo);
    S = (Mn == -INFINITY) ? 0.f : S * ex2((M - Mn) * LOG2E) + So * ex2((Mo - Mn) * LOG2E);
    M = Mn;
  }
}

// The control warps of smx_w and smx_w3. Producer (one thread): chunk j into stage
// j % ST once the writes of chunk j - ST are done; only D chunks before the first
// landed (D = ST: the whole ring at once).
// K < ST (session 34): at most K chunks in flight, chunk j only once chunk j - K landed.
template <int CHUNK, int ST, int HINT, int D, int TL = 0, int K = ST>
__device__ void produce(const float* x, float4* stage, uint64_t* full, uint64_t* empty, int mine, int b, int G) {
  for (int j = 0; j < mine; j++) {
    const int s = j % ST;
    if (j >= ST) mbar_wait(&empty[s], ((j / ST) - 1) & 1);
    if (j == D && D < ST) mbar_wait(&full[0], 0);
    if (K < ST && j >= K) mbar_wait(&full[(j - K) % ST], ((j - K) / ST) & 1);
    mbar_expect(&full[s], CHUNK * 4);
    stamp<TL>(b, j, 0);
    bulk_load<HINT>(stage + s * (CHUNK / 4), x + (size_t)(b + j * G) * CHUNK, CHUNK * 4, &full[s]);
  }
}
// Publisher warp: each chunk's NP per-warp pairs combined and published as LL words;
// with `empty`, an arrival there once the pairs are read (as kernels/src/softmax_bulk.rs).
template <int ST, int NP, int TL = 0>
__device__ void publish(float2 (*pw)[NP], uint64_t* sdone, uint4* pairs, int mine, int b, int G, uint32_t epoch,
                        int lane, uint64_t* empty = nullptr) {
  for (int j = 0; j < mine; j++) {
    const int s = j % ST;
    mbar_wait(&sdone[s], (j / ST) & 1);
    float2 p = lane < NP ? pw[s][lane] : make_float2(-INFINITY, 0.f);
    float M = p.x, S = p.y;
    combine_xor<8>(M, S);
    if (lane == 0) {
      ll_put(pairs + b + j * G, M, S, epoch);
      if (empty) mbar_arrive(&empty[s]);
      stamp<TL>(b, j, 2);
    }
  }
}
// Resolver warp: each chunk's row from its published pairs (4 a lane in flight), posted
// as (M·log2 e, 1/S) with an arrival on rdy. Chunks j0, j0 + step, ... (session 34:
// several resolver warps, so their round trips overlap).
template <int ST, int TL = 0>
__device__ void resolve(uint64_t* sdone, uint64_t* rdy, float* rM, float* rI, const uint4* pairs, int mine, int b,
                        int G, int splits, uint32_t epoch, int lane, int j0 = 0, int step = 1) {
  for (int j = j0; j < mine; j += step) {
    const int s = j % ST, row = (b + j * G) / splits;
    mbar_wait(&sdone[s], (j / ST) & 1);
    const uint4* base = pairs + (size_t)row * splits;
    float M = -INFINITY, S = 0.f;
    for (int q0 = 0; q0 < splits; q0 += 128) {
      uint4 v[4];
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int q = q0 + u * 32 + lane;
        if (q < splits) v[u] = ll_get(base + q);
      }
      for (;;) {
        bool ok = true;
#pragma unroll
        for (int u = 0; u < 4; u++) {
          const int q = q0 + u * 32 + lane;
          if (q < splits && (v[u].y != epoch || v[u].w != epoch)) {
            ok = false;
            v[u] = ll_get(base + q);
          }
        }
        if (ok) break;
      }
#pragma unroll
      for (int u = 0; u < 4; u++) {
        const int q = q0 + u * 32 + lane;
        if (q < splits) {
          const float pm = __uint_as_float(v[u].x), psum = __uint_as_float(v[u].z);
          const float Mn = fmaxf(M, pm);
          S = S * ex2((M - Mn) * LOG2E) + psum * ex2((pm - Mn) * LOG2E);
          M = Mn;
        }
      }
    }
    combine_xor<16>(M, S);
    if (lane == 0) {
      rM[s] = M * LOG2E;
      rI[s] = 1.f / S;
      mbar_arrive(&rdy[s]);
      stamp<TL>(b, j, 3);
    }
  }
}

template <int CHUNK, int ST, int MODE, int HINT>
__global__ void __launch_bounds__(T, 1)
    smx(const float* __restrict__ x, float* __restrict__ y, int n, int splits, float2* pairs, uint32_t* flags, uint32_t epoch) {
  constexpr int V = CHUNK / 4 / T;
  constexpr uint32_t BYTES = CHUNK * 4;
  extern __shared__ __align__(128) unsigned char sm[];
  float4* stage = reinterpret_cast<float4*>(sm);
  float4* outb = stage + ST * (CHUNK / 4);  // MODE 1 only
  __shared__ uint64_t full[ST];
  __shared__ float redm[16], reds[16], bc[2];
  const int G = gridDim.x, b = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
  if (t == 0) {
    for (int s = 0; s < ST; s++) mbar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (t == 0) {
    for (int s = 0; s < ST; s++) {
      int c = b + s * G;
      if (c < n) {
        mbar_expect(&full[s], BYTES);
        bulk_load<HINT>(stage + s * (CHUNK / 4), x + (size_t)c * CHUNK, BYTES, &full[s]);
      }
    }
  }
  for (int i = 0;; i++) {
    const int c = b + i * G;
    if (c >= n) break;
    const int s = i % ST;
    mbar_wait(&full[s], (i / ST) & 1);
    float4 v[V];
    const float4* src = stage + s * (CHUNK / 4);
#pragma unroll
    for (int k = 0; k < V; k++) v[k] = src[k * T + t];
    float4* dst = reinterpret_cast<float4*>(y + (size_t)c * CHUNK);
    if (MODE == 2) {
      __syncthreads();
      if (t == 0 && c + ST * G < n) {
        mbar_expect(&full[s], BYTES);
        bulk_load<HINT>(stage + s * (CHUNK / 4), x + (size_t)(c + ST * G) * CHUNK, BYTES, &full[s]);
      }
#pragma unroll
      for (int k = 0; k < V; k++) __stcs(dst + k * T + t, v[k]);
      continue;
    }
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < V; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
#pragma unroll
    for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
    if (lane == 0) redm[warp] = m;
    __syncthreads();  // every thread has read stage s: refill it
    if (t == 0 && c + ST * G < n) {
      mbar_expect(&full[s], BYTES);
      bulk_load<HINT>(stage + s * (CHUNK / 4), x + (size_t)(c + ST * G) * CHUNK, BYTES, &full[s]);
    }
    m = redm[lane & 15];
#pragma unroll
    for (int o = 8; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
    const float ml = m * LOG2E;
    float sum = 0.f;
#pragma unroll
    for (int k = 0; k < V; k++)
      sum += ex2(fmaf(v[k].x, LOG2E, -ml)) + ex2(fmaf(v[k].y, LOG2E, -ml)) + ex2(fmaf(v[k].z, LOG2E, -ml)) +
             ex2(fmaf(v[k].w, LOG2E, -ml));
#pragma unroll
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(~0u, sum, o);
    if (lane == 0) reds[warp] = sum;
    __syncthreads();
    const int row = c / splits;
    if (warp == 0) {
      sum = reds[lane & 15];
#pragma unroll
      for (int o = 8; o; o >>= 1) sum += __shfl_xor_sync(~0u, sum, o);
      if (lane == 0 && splits > 1) {
        pairs[c] = make_float2(m, sum);
        st_release(flags + c, epoch);
      }
      // wait for the row's pairs: lane l for chunks l, l + 32, ... (a row of one
      // chunk has its own pair)
      float M = -INFINITY, S = 0.f;
      if (splits == 1 && lane == 0) {
        M = m;
        S = sum;
      }
      if (MODE == 3 && lane == 0) {
        M = m;
        S = sum;
      }
      for (int k = lane; k < splits && splits > 1 && MODE != 3; k += 32) {
        const int j = row * splits + k;
        while (ld_acquire(flags + j) != epoch) {
        }
        float2 p = __ldcg(pairs + j);
        float Mn = fmaxf(M, p.x);
        S = S * ex2((M - Mn) * LOG2E) + p.y * ex2((p.x - Mn) * LOG2E);
        M = Mn;
      }
      combine_xor<16>(M, S);
      if (lane == 0) {
        bc[0] = M * LOG2E;
        bc[1] = 1.f / S;
        if (MODE == 1) bulk_wait_read0();  // the previous chunk's store has read outb
      }
    }
    __syncthreads();
    const float Ml = bc[0], inv = bc[1];
#pragma unroll
    for (int k = 0; k < V; k++) {
      float4 o;
      o.x = ex2(fmaf(v[k].x, LOG2E, -Ml)) * inv;
      o.y = ex2(fmaf(v[k].y, LOG2E, -Ml)) * inv;
      o.z = ex2(fmaf(v[k].z, LOG2E, -Ml)) * inv;
      o.w = ex2(fmaf(v[k].w, LOG2E, -Ml)) * inv;
      if (MODE != 1)
        __stcs(dst + k * T + t, o);
      else
        outb[k * T + t] = o;
    }
    if (MODE == 1) {
      fence_async_smem();
      __syncthreads();
      if (t == 0) bulk_store(dst, outb, BYTES);
    }
  }
  if (MODE == 1 && t == 0) bulk_wait0();
}


// The lagged pipeline: iteration i reduces chunk i and publishes its pair, then writes
// chunk i - 1 (whose row's pairs were published an iteration ago) from shared memory.
// CW = 1 adds a control warp (warp 16) that issues the loads, publishes and waits, so
// its release fence never waits for y's stores.
template <int CHUNK, int ST, int CW>
__global__ void __launch_bounds__(T + 32 * CW, 1)
    smx_lag(const float* __restrict__ x, float* __restrict__ y, int n, int splits, float2* pairs, uint32_t* flags, uint32_t epoch) {
  constexpr int V = CHUNK / 4 / T;
  constexpr uint32_t BYTES = CHUNK * 4;
  extern __shared__ __align__(128) unsigned char sm[];
  float4* stage = reinterpret_cast<float4*>(sm);
  __shared__ uint64_t full[ST];
  __shared__ float redm[16], reds[16], bc[2];
  const int G = gridDim.x, b = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const bool ctl = CW ? (warp == 16) : (warp == 0);  // the warp that publishes and waits
  const bool lead = CW ? (t == T) : (t == 0);          // the thread that issues copies
  const bool comp = t < T;
  if (lead) {
    for (int s = 0; s < ST; s++) mbar_init(&full[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (lead) {
    for (int s = 0; s < ST; s++) {
      int c = b + s * G;
      if (c < n) {
        mbar_expect(&full[s], BYTES);
        bulk_load<0>(stage + s * (CHUNK / 4), x + (size_t)c * CHUNK, BYTES, &full[s]);
      }
    }
  }
  int i = 0;
  for (;; i++) {
    const int c = b + i * G;
    const bool have = c < n;
    if (have) {
      const int s = i % ST;
      float m = -INFINITY;
      float4 v[V];
      if (comp) {
        mbar_wait(&full[s], (i / ST) & 1);
        const float4* src = stage + s * (CHUNK / 4);
#pragma unroll
        for (int k = 0; k < V; k++) v[k] = src[k * T + t];
#pragma unroll
        for (int k = 0; k < V; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
#pragma unroll
        for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
        if (lane == 0) redm[warp] = m;
      }
      __syncthreads();
      m = redm[lane & 15];
#pragma unroll
      for (int o = 8; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
      if (comp) {
        const float ml = m * LOG2E;
        float sum = 0.f;
#pragma unroll
        for (int k = 0; k < V; k++)
          sum += ex2(fmaf(v[k].x, LOG2E, -ml)) + ex2(fmaf(v[k].y, LOG2E, -ml)) + ex2(fmaf(v[k].z, LOG2E, -ml)) +
                 ex2(fmaf(v[k].w, LOG2E, -ml));
#pragma unroll
        for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(~0u, sum, o);
        if (lane == 0) reds[warp] = sum;
      }
      __syncthreads();
      if (ctl && splits > 1) {
        float sum = reds[lane & 15];
#pragma unroll
        for (int o = 8; o; o >>= 1) sum += __shfl_xor_sync(~0u, sum, o);
        if (lane == 0) {
          pairs[c] = make_float2(m, sum);
          st_release(flags + c, epoch);
        }
      }
    }
    if (i == 0) continue;
    // write chunk p = c - G from its stage
    const int p = c - G;
    if (p >= n) break;
    const int sp = (i - 1) % ST;
    const int row = p / splits;
    if (ctl) {
      float M = -INFINITY, S = 0.f;
      for (int k = lane; k < splits; k += 32) {
        const int j = row * splits + k;
        float2 q;
        if (splits > 1) {
          while (ld_acquire(flags + j) != epoch) {
          }
          q = __ldcg(pairs + j);
        } else {
          // a row of one chunk: its pair is not published; recompute from stage (rare path in the probe)
          q = make_float2(0.f, 0.f);
        }
        float Mn = fmaxf(M, q.x);
        S = S * ex2((M - Mn) * LOG2E) + q.y * ex2((q.x - Mn) * LOG2E);
        M = Mn;
      }
      combine_xor<16>(M, S);
      if (lane == 0) {
        bc[0] = M * LOG2E;
        bc[1] = 1.f / S;
      }
    }
    __syncthreads();
    if (comp) {
      const float Ml = bc[0], inv = bc[1];
      const float4* src = stage + sp * (CHUNK / 4);
      float4* dst = reinterpret_cast<float4*>(y + (size_t)p * CHUNK);
#pragma unroll
      for (int k = 0; k < V; k++) {
        float4 a = src[k * T + t], o;
        o.x = ex2(fmaf(a.x, LOG2E, -Ml)) * inv;
        o.y = ex2(fmaf(a.y, LOG2E, -Ml)) * inv;
        o.z = ex2(fmaf(a.z, LOG2E, -Ml)) * inv;
        o.w = ex2(fmaf(a.w, LOG2E, -Ml)) * inv;
        __stcs(dst + k * T + t, o);
      }
    }
    __syncthreads();
    if (lead && p + ST * G < n) {
      mbar_expect(&full[sp], BYTES);
      bulk_load<0>(stage + sp * (CHUNK / 4), x + (size_t)(p + ST * G) * CHUNK, BYTES, &full[sp]);
    }
    if (!have) break;
  }
}


__device__ __forceinline__ void bar_compute() { asm volatile("bar.sync 1, 512;" ::: "memory"); }

// Warp-specialised: 16 compute warps reduce chunk i and write chunk i - L; warp 16
// publishes pairs and resolves rows (chunk j - 1 after publishing j); warp 17 keeps
// the ring of ST stages full. Compute warps and the control warp meet only through
// shared-memory mbarriers, so the global round trips of the row exchange overlap the
// compute warps' work on other chunks.
template <int CHUNK, int ST, int L, int LL, int HINT>
__global__ void __launch_bounds__(T + 64, 1)
    smx_ws(const float* __restrict__ x, float* __restrict__ y, int n, int splits, float2* pairs, uint32_t* flags, uint32_t epoch) {
  constexpr int V = CHUNK / 4 / T;
  constexpr uint32_t BYTES = CHUNK * 4;
  static_assert(L >= 2 && L <= ST - 1, "lag");
  extern __shared__ __align__(128) unsigned char sm[];
  float4* stage = reinterpret_cast<float4*>(sm);
  __shared__ uint64_t full[ST], empty[ST], sdone[ST], rdy[ST];
  __shared__ float pm[ST], ps[ST], rM[ST], rI[ST];
  __shared__ float redm[16], reds[16];
  const int G = gridDim.x, b = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
  if (t == 0) {
    for (int s = 0; s < ST; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 16);
      mbar_init(&sdone[s], 1);
      mbar_init(&rdy[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int mine = (n - b + G - 1) / G;  // chunks of this block
  if (warp == 17) {
    if (lane == 0) {
      for (int j = 0; j < mine; j++) {
        const int s = j % ST;
        if (j >= ST) mbar_wait(&empty[s], ((j / ST) - 1) & 1);
        mbar_expect(&full[s], BYTES);
        bulk_load<HINT>(stage + s * (CHUNK / 4), x + (size_t)(b + j * G) * CHUNK, BYTES, &full[s]);
      }
    }
    return;
  }
  if (warp == 16) {
    auto resolve = [&](int k) {
      const int sk = k % ST, row = (b + k * G) / splits;
      float M = -INFINITY, S = 0.f;
      for (int q = lane; q < splits; q += 32) {
        const int j = row * splits + q;
        float2 p;
        if (LL) {
          const uint4* w = reinterpret_cast<const uint4*>(pairs) + j;
          uint4 v = ll_get(w);
          while (v.y != epoch || v.w != epoch) v = ll_get(w);
          p = make_float2(__uint_as_float(v.x), __uint_as_float(v.z));
        } else {
          while (ld_acquire(flags + j) != epoch) {
          }
          p = __ldcg(pairs + j);
        }
        float Mn = fmaxf(M, p.x);
        S = S * ex2((M - Mn) * LOG2E) + p.y * ex2((p.x - Mn) * LOG2E);
        M = Mn;
      }
      combine_xor<16>(M, S);
      if (lane == 0) {
        rM[sk] = M * LOG2E;
        rI[sk] = 1.f / S;
        mbar_arrive(&rdy[sk]);
      }
    };
    for (int j = 0; j < mine; j++) {
      const int s = j % ST;
      mbar_wait(&sdone[s], (j / ST) & 1);
      if (LL) {
        resolve(j);
        continue;
      }
      if (lane == 0) {
        pairs[b + j * G] = make_float2(pm[s], ps[s]);
        st_release(flags + b + j * G, epoch);
      }
      __syncwarp();
      if (j >= 1) resolve(j - 1);
    }
    if (!LL && mine >= 1) resolve(mine - 1);
    return;
  }
  // compute warps
  for (int i = 0; i < mine + L; i++) {
    if (i < mine) {
      const int s = i % ST;
      mbar_wait(&full[s], (i / ST) & 1);
      const float4* src = stage + s * (CHUNK / 4);
      float4 v[V];
#pragma unroll
      for (int k = 0; k < V; k++) v[k] = src[k * T + t];
      float m = -INFINITY;
#pragma unroll
      for (int k = 0; k < V; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
#pragma unroll
      for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
      if (lane == 0) redm[warp] = m;
      bar_compute();
      m = redm[lane & 15];
#pragma unroll
      for (int o = 8; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
      const float ml = m * LOG2E;
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < V; k++)
        sum += ex2(fmaf(v[k].x, LOG2E, -ml)) + ex2(fmaf(v[k].y, LOG2E, -ml)) + ex2(fmaf(v[k].z, LOG2E, -ml)) +
               ex2(fmaf(v[k].w, LOG2E, -ml));
#pragma unroll
      for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(~0u, sum, o);
      if (lane == 0) reds[warp] = sum;
      bar_compute();
      if (t == 0) {
        float tot = 0.f;
        for (int w = 0; w < 16; w++) tot += reds[w];
        if (LL) ll_put(reinterpret_cast<uint4*>(pairs) + b + i * G, m, tot, epoch);
        pm[s] = m;
        ps[s] = tot;
        mbar_arrive(&sdone[s]);
      }
    }
    const int j = i - L;
    if (j >= 0) {
      const int sj = j % ST;
      mbar_wait(&rdy[sj], (j / ST) & 1);
      const float Ml = rM[sj], inv = rI[sj];
      const float4* src = stage + sj * (CHUNK / 4);
      float4* dst = reinterpret_cast<float4*>(y + (size_t)(b + j * G) * CHUNK);
#pragma unroll
      for (int k = 0; k < V; k++) {
        float4 a = src[k * T + t], o;
        o.x = ex2(fmaf(a.x, LOG2E, -Ml)) * inv;
        o.y = ex2(fmaf(a.y, LOG2E, -Ml)) * inv;
        o.z = ex2(fmaf(a.z, LOG2E, -Ml)) * inv;
        o.w = ex2(fmaf(a.w, LOG2E, -Ml)) * inv;
        __stcs(dst + k * T + t, o);
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[sj]);
    }
  }
}

// Warp-decoupled: no barrier among the compute warps. Warp w reduces its 1/16 of
// chunk i to (m_w, s_w) and arrives; warp 16 combines the 16 pairs and publishes the
// chunk's pair (LL words); warp 18 resolves rows (all of a lane's pairs loaded at
// once); warp 17 keeps the ring full.
template <int CHUNK, int ST, int L, int HINT, int CP, int D = ST>
__global__ void __launch_bounds__(T + 96, 1)
    smx_w(const float* __restrict__ x, float* __restrict__ y, int n, int splits, uint4* pairs, uint32_t epoch) {
  constexpr int V = CHUNK / 4 / T;
  static_assert(L >= 1 && L <= ST - 1, "lag");
  extern __shared__ __align__(128) unsigned char sm[];
  float4* stage = reinterpret_cast<float4*>(sm);
  __shared__ uint64_t full[ST], empty[ST], sdone[ST], rdy[ST];
  __shared__ float2 pw[ST][16];
  __shared__ float rM[ST], rI[ST];
  const int G = gridDim.x, b = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
  if (t == 0) {
    for (int s = 0; s < ST; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 16);
      mbar_init(&sdone[s], 16);
      mbar_init(&rdy[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int mine = (n - b + G - 1) / G;
  if (warp == 17) {
    if (lane == 0) produce<CHUNK, ST, HINT, D>(x, stage, full, empty, mine, b, G);
    return;
  }
  if (warp == 16) {
    if (!CP) publish<ST, 16>(pw, sdone, pairs, mine, b, G, epoch, lane);
    return;
  }
  if (warp == 18) {
    if (!CP) resolve<ST>(sdone, rdy, rM, rI, pairs, mine, b, G, splits, epoch, lane);
    return;
  }
  // compute warps: warp w owns float4s [w·32·V, (w+1)·32·V) of every chunk
  const int off = warp * 32 * V + lane;
  if (CP) {
    for (int i = 0; i < mine; i++) {
      const int s = i % ST;
      mbar_wait(&full[s], (i / ST) & 1);
      const float4* src = stage + s * (CHUNK / 4) + off;
      float4* dst = reinterpret_cast<float4*>(y + (size_t)(b + i * G) * CHUNK) + off;
      float4 v[V];
#pragma unroll
      for (int k = 0; k < V; k++) v[k] = src[k * 32];
#pragma unroll
      for (int k = 0; k < V; k++) __stcs(dst + k * 32, v[k]);
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[s]);
    }
    return;
  }
  for (int i = 0; i < mine + L; i++) {
    if (i < mine) {
      const int s = i % ST;
      mbar_wait(&full[s], (i / ST) & 1);
      const float4* src = stage + s * (CHUNK / 4) + off;
      float4 v[V];
#pragma unroll
      for (int k = 0; k < V; k++) v[k] = src[k * 32];
      float m = -INFINITY;
#pragma unroll
      for (int k = 0; k < V; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
#pragma unroll
      for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
      const float ml = m * LOG2E;
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < V; k++)
        sum += ex2(fmaf(v[k].x, LOG2E, -ml)) + ex2(fmaf(v[k].y, LOG2E, -ml)) + ex2(fmaf(v[k].z, LOG2E, -ml)) +
               ex2(fmaf(v[k].w, LOG2E, -ml));
#pragma unroll
      for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(~0u, sum, o);
      if (lane == 0) {
        pw[s][warp] = make_float2(m, sum);
        mbar_arrive(&sdone[s]);
      }
    }
    const int j = i - L;
    if (j >= 0) {
      const int sj = j % ST;
      mbar_wait(&rdy[sj], (j / ST) & 1);
      const float Ml = rM[sj], inv = rI[sj];
      const float4* src = stage + sj * (CHUNK / 4) + off;
      float4* dst = reinterpret_cast<float4*>(y + (size_t)(b + j * G) * CHUNK) + off;
#pragma unroll
      for (int k = 0; k < V; k++) {
        float4 a = src[k * 32], o;
        o.x = ex2(fmaf(a.x, LOG2E, -Ml)) * inv;
        o.y = ex2(fmaf(a.y, LOG2E, -Ml)) * inv;
        o.z = ex2(fmaf(a.z, LOG2E, -Ml)) * inv;
        o.w = ex2(fmaf(a.w, LOG2E, -Ml)) * inv;
        __stcs(dst + k * 32, o);
      }
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[sj]);
    }
  }
}

// W2/W3: NS stats warps and 16 - NS output warps, no fixed lag: stats run as far ahead
// as the ring allows. The producer copies D chunks, then waits for the first to land
// before the rest of the first ring (D = ST: the whole ring at once, call 8's "W2").
//
// TL = 1 records a timeline: %globaltimer stamps (ns) per block and chunk into g_tl
// (issued, landed, resolved, written; then the block's start and end). NOWAIT = 1
// writes without waiting for the row (wrong output: the same pipeline as a copy).
template <int CHUNK, int ST, int HINT, int NS, int D, int TL = 0, int NOWAIT = 0, int K = ST, int R = 1>
__global__ void __launch_bounds__(T + 64 + 32 * R, 1)
    smx_w3(const float* __restrict__ x, float* __restrict__ y, int n, int splits, uint4* pairs, uint32_t epoch) {
  extern __shared__ __align__(128) unsigned char sm[];
  float4* stage = reinterpret_cast<float4*>(sm);
  __shared__ uint64_t full[ST], empty[ST], sdone[ST], rdy[ST];
  __shared__ float2 pw[ST][NS];
  __shared__ float rM[ST], rI[ST];
  const int G = gridDim.x, b = blockIdx.x, t = threadIdx.x, lane = t & 31, warp = t >> 5;
  if (t == 0) {
    for (int s = 0; s < ST; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 16 - NS + 1);
      mbar_init(&sdone[s], NS);
      mbar_init(&rdy[s], 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (t == 0) stamp_block<TL>(b, G, 0);
  const int mine = (n - b + G - 1) / G;
  if (warp == 17) {
    if (lane == 0) produce<CHUNK, ST, HINT, D, TL, K>(x, stage, full, empty, mine, b, G);
    return;
  }
  if (warp == 16) {
    publish<ST, NS, TL>(pw, sdone, pairs, mine, b, G, epoch, lane, empty);
    return;
  }
  if (warp >= 18) {
    if (!NOWAIT) resolve<ST, TL>(sdone, rdy, rM, rI, pairs, mine, b, G, splits, epoch, lane, warp - 18, R);
    return;
  }
  // stats warps 0..NS-1 own 1/NS of every chunk each; output warps NS..15 likewise
  constexpr int VS = CHUNK / 4 / (32 * NS), VO = CHUNK / 4 / (32 * (16 - NS));
  if (warp < NS) {
    const int off = warp * 32 * VS + lane;
    for (int i = 0; i < mine; i++) {
      const int s = i % ST;
      mbar_wait(&full[s], (i / ST) & 1);
      if (warp == 0 && lane == 0) stamp<TL>(b, i, 1);
      const float4* src = stage + s * (CHUNK / 4) + off;
      float4 v[VS];
#pragma unroll
      for (int k = 0; k < VS; k++) v[k] = src[k * 32];
      float m = -INFINITY;
#pragma unroll
      for (int k = 0; k < VS; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
#pragma unroll
      for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
      const float ml = m * LOG2E;
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < VS; k++)
        sum += ex2(fmaf(v[k].x, LOG2E, -ml)) + ex2(fmaf(v[k].y, LOG2E, -ml)) + ex2(fmaf(v[k].z, LOG2E, -ml)) +
               ex2(fmaf(v[k].w, LOG2E, -ml));
#pragma unroll
      for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(~0u, sum, o);
      if (lane == 0) {
        pw[s][warp] = make_float2(m, sum);
        mbar_arrive(&sdone[s]);
      }
    }
    return;
  }
  const int off = (warp - NS) * 32 * VO + lane;
  for (int j = 0; j < mine; j++) {
    const int sj = j % ST;
    mbar_wait(&full[sj], (j / ST) & 1);
    if (!NOWAIT) mbar_wait(&rdy[sj], (j / ST) & 1);
    const float Ml = NOWAIT ? 0.f : rM[sj], inv = NOWAIT ? 1.f : rI[sj];
    const float4* src = stage + sj * (CHUNK / 4) + off;
    float4* dst = reinterpret_cast<float4*>(y + (size_t)(b + j * G) * CHUNK) + off;
#pragma unroll
    for (int k = 0; k < VO; k++) {
      float4 a = src[k * 32], o;
      o.x = ex2(fmaf(a.x, LOG2E, -Ml)) * inv;
      o.y = ex2(fmaf(a.y, LOG2E, -Ml)) * inv;
      o.z = ex2(fmaf(a.z, LOG2E, -Ml)) * inv;
      o.w = ex2(fmaf(a.w, LOG2E, -Ml)) * inv;
      __stcs(dst + k * 32, o);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[sj]);
    if (warp == 15 && lane == 0) stamp<TL>(b, j, 4);
  }
  if (warp == 15 && lane == 0) stamp_block<TL>(b, G, 1);
}

// CW3 (session 33, a lead): W3 with each row on one thread-block cluster of C = splits
// blocks, block rank k holding part k of each of its cluster's rows; the pairs go to
// every block of the cluster through distributed shared memory (a store and a remote
// mbarrier arrival per block), so no global round trip. Slots and barriers of rows are
// indexed by j % (2 ST): block k publishes row j + 2 ST only after every block of the
// cluster consumed row j (its stats of row j + ST needed its own writes of row j).
__device__ __forceinline__ void mbar_wait_cluster(uint64_t* b, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(sa(b)), "r"(parity)
        : "memory");
  }
}
__device__ __forceinline__ uint32_t mapa(uint32_t a, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
template <int CHUNK, int ST, int NS, int D, int C>
__global__ void __launch_bounds__(T + 96, 1)
    smx_cw3(const float* __restrict__ x, float* __restrict__ y, int rows) {
  constexpr int VS = CHUNK / 4 / (32 * NS), VO = CHUNK / 4 / (32 * (16 - NS));
  constexpr uint32_t BYTES = CHUNK * 4;
  extern __shared__ __align__(128) unsigned char sm[];
  float4* stage = reinterpret_cast<float4*>(sm);
  __shared__ uint64_t full[ST], empty[ST], sdone[ST], rdy[ST], rowbar[2 * ST];
  __shared__ float2 pw[ST][NS];
  __shared__ float2 xp[2 * ST][C];
  __shared__ float rM[ST], rI[ST];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  const int cid = blockIdx.x / C, ncl = gridDim.x / C;
  if (t == 0) {
    for (int s = 0; s < ST; s++) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 16 - NS);
      mbar_init(&sdone[s], NS);
      mbar_init(&rdy[s], 1);
    }
    for (int q = 0; q < 2 * ST; q++) mbar_init(&rowbar[q], C);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
  const int mine = cid < rows ? (rows - cid + ncl - 1) / ncl : 0;
  auto src_of = [&](int j) { return x + ((size_t)(cid + j * ncl) * C + rank) * CHUNK; };
  if (warp == 17) {
    if (lane == 0) {
      for (int j = 0; j < mine; j++) {
        const int s = j % ST;
        if (j >= ST) mbar_wait(&empty[s], ((j / ST) - 1) & 1);
        if (j == D && D < ST) mbar_wait(&full[0], 0);
        mbar_expect(&full[s], BYTES);
        bulk_load<0>(stage + s * (CHUNK / 4), src_of(j), BYTES, &full[s]);
      }
    }
    return;
  }
  if (warp == 16) {  // publisher: the block's pair to every block of the cluster
    for (int j = 0; j < mine; j++) {
      const int s = j % ST, q = j % (2 * ST);
      mbar_wait(&sdone[s], (j / ST) & 1);
      float2 p = lane < NS ? pw[s][lane] : make_float2(-INFINITY, 0.f);
      float M = p.x, S = p.y;
      combine_xor<16>(M, S);
      if (lane < C) {
        const uint32_t slot = mapa(sa(&xp[q][rank]), lane), bar = mapa(sa(&rowbar[q]), lane);
        asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};" ::"r"(slot), "f"(M), "f"(S) : "memory");
        asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
      }
    }
    return;
  }
  if (warp == 18) {  // resolver: the C pairs of each row, from this block's shared memory
    for (int j = 0; j < mine; j++) {
      const int s = j % ST, q = j % (2 * ST);
      mbar_wait_cluster(&rowbar[q], (j / (2 * ST)) & 1);
      float2 p = lane < C ? xp[q][lane] : make_float2(-INFINITY, 0.f);
      float M = p.x, S = p.y;
      combine_xor<16>(M, S);
      if (lane == 0) {
        rM[s] = M * LOG2E;
        rI[s] = 1.f / S;
        mbar_arrive(&rdy[s]);
      }
    }
    return;
  }
  if (warp < NS) {
    const int off = warp * 32 * VS + lane;
    for (int i = 0; i < mine; i++) {
      const int s = i % ST;
      mbar_wait(&full[s], (i / ST) & 1);
      const float4* src = stage + s * (CHUNK / 4) + off;
      float4 v[VS];
#pragma unroll
      for (int k = 0; k < VS; k++) v[k] = src[k * 32];
      float m = -INFINITY;
#pragma unroll
      for (int k = 0; k < VS; k++) m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
#pragma unroll
      for (int o = 16; o; o >>= 1) m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
      const float ml = m * LOG2E;
      float sum = 0.f;
#pragma unroll
      for (int k = 0; k < VS; k++)
        sum += ex2(fmaf(v[k].x, LOG2E, -ml)) + ex2(fmaf(v[k].y, LOG2E, -ml)) + ex2(fmaf(v[k].z, LOG2E, -ml)) +
               ex2(fmaf(v[k].w, LOG2E, -ml));
#pragma unroll
      for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(~0u, sum, o);
      if (lane == 0) {
        pw[s][warp] = make_float2(m, sum);
        mbar_arrive(&sdone[s]);
      }
    }
    return;
  }
  const int off = (warp - NS) * 32 * VO + lane;
  for (int j = 0; j < mine; j++) {
    const int sj = j % ST;
    mbar_wait(&full[sj], (j / ST) & 1);
    mbar_wait(&rdy[sj], (j / ST) & 1);
    const float Ml = rM[sj], inv = rI[sj];
    const float4* src = stage + sj * (CHUNK / 4) + off;
    float4* dst = reinterpret_cast<float4*>(y + ((size_t)(cid + j * ncl) * C + rank) * CHUNK) + off;
#pragma unroll
    for (int k = 0; k < VO; k++) {
      float4 a = src[k * 32], o;
      o.x = ex2(fmaf(a.x, LOG2E, -Ml)) * inv;
      o.y = ex2(fmaf(a.y, LOG2E, -Ml)) * inv;
      o.z = ex2(fmaf(a.z, LOG2E, -Ml)) * inv;
      o.w = ex2(fmaf(a.w, LOG2E, -Ml)) * inv;
      __stcs(dst + k * 32, o);
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[sj]);
  }
}

__global__ void copy4(const float4* __restrict__ x, float4* __restrict__ y, size_t n4) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x, step = (size_t)gridDim.x * blockDim.x;
  for (; i + 3 * step < n4; i += 4 * step) {
    float4 a = x[i], b = x[i + step], c = x[i + 2 * step], d = x[i + 3 * step];
    y[i] = a;
    y[i + step] = b;
    y[i + 2 * step] = c;
    y[i + 3 * step] = d;
  }
  for (; i < n4; i += step) y[i] = x[i];
}

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Ctx {
  void* flush;
  size_t flush_bytes = 256ull << 20;
  cudaEvent_t a, b;
  int sms;
};

template <typename F>
static void timeit(Ctx& cx, const char* name, double bytes, F launch, int reps = 30) {
  launch();
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int r = 0; r < reps; r++) {
    CK(cudaMemsetAsync(cx.flush, r & 0xff, cx.flush_bytes));
    CK(cudaEventRecord(cx.a));
    launch();
    CK(cudaEventRecord(cx.b));
    CK(cudaEventSynchronize(cx.b));
    float t;
    CK(cudaEventElapsedTime(&t, cx.a, cx.b));
    ms.push_back(t);
  }
  CK(cudaGetLastError());
  float md = median(ms);
  printf("%-44s %.4f ms  %.0f GB/s\n", name, md, bytes / md / 1e6);
}

static uint32_t g_epoch = 0;

// Poisons y, launches once, checks rows 0, rows/2 and rows-1 against float64 (copy
// modes: bit equality with x), then times the launch.
template <typename F>
static void check_time(Ctx& cx, const char* name, int rows, int cols, float* y, const std::vector<float>& hx,
                       bool copy, F launch) {
  CK(cudaMemset(y, 0xff, (size_t)rows * cols * 4));  // poison (NaN)
  launch();
  CK(cudaDeviceSynchronize());
  double worst = 0;
  std::vector<float> hy(cols);
  for (int r : {0, rows / 2, rows - 1}) {
    CK(cudaMemcpy(hy.data(), y + (size_t)r * cols, cols * 4, cudaMemcpyDeviceToHost));
    const float* xr = hx.data() + (size_t)r * cols;
    if (copy) {
      for (int j = 0; j < cols; j++)
        if (hy[j] != xr[j]) worst = 1e9;
      continue;
    }
    double M = -INFINITY, S = 0;
    for (int j = 0; j < cols; j++) M = std::max(M, (double)xr[j]);
    for (int j = 0; j < cols; j++) S += std::exp((double)xr[j] - M);
    for (int j = 0; j < cols; j++) {
      double ref = std::exp((double)xr[j] - M) / S;
      double err = std::fabs(hy[j] - ref) / (ref + 1e-30);
      if (!(err <= 1e30)) err = 1e9;
      worst = std::max(worst, err);
    }
  }
  printf("  check %s: worst rel err %.2e %s\n", name, worst, worst < 1e-4 ? "ok" : "BAD");
  timeit(cx, name, 8.0 * rows * cols, launch);
}

// One block per resident slot, at most n; 0 (skip) when a row's chunks outnumber the
// grid or when `multi` and a row is one chunk.
template <typename K>
static int grid_for(Ctx& cx, K k, int threads, size_t smem, int n, int splits, bool multi) {
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int per = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, threads, smem));
  int grid = std::min(n, per * cx.sms);
  if (splits > grid || (multi && splits < 2)) {
    printf("skip: %d splits, grid %d\n", splits, grid);
    return 0;
  }
  return grid;
}

static bool g_plain = false;  // `launch` mode: an ordinary launch instead (every block fits anyway)
template <typename K, typename... A>
static void coop(K k, int grid, int threads, size_t smem, A... a) {
  void* args[] = {(void*)&a...};
  if (g_plain)
    CK(cudaLaunchKernel((void*)k, grid, threads, args, smem, 0));
  else
    CK(cudaLaunchCooperativeKernel((void*)k, grid, threads, args, smem));
}

template <int CHUNK, int ST, int MODE, int HINT>
static void run_smx(Ctx& cx, int rows, int cols, const float* x, float* y, float2* pairs, uint32_t* flags,
                    std::vector<float>& hx) {
  int splits = cols / CHUNK, n = rows * splits;
  size_t smem = (size_t)(ST + (MODE == 1)) * CHUNK * 4;
  auto k = smx<CHUNK, ST, MODE, HINT>;
  int grid = grid_for(cx, k, T, smem, n, splits, false);
  if (!grid) return;
  char name[160];
  snprintf(name, sizeof name, "%dx%d chunk%d st%d mode%d hint%d g%d", rows, cols, CHUNK, ST, MODE, HINT, grid);
  check_time(cx, name, rows, cols, y, hx, MODE == 2, [&] { coop(k, grid, T, smem, x, y, n, splits, pairs, flags, ++g_epoch); });
}

template <int CHUNK, int ST, int CW>
static void run_lag(Ctx& cx, int rows, int cols, const float* x, float* y, float2* pairs, uint32_t* flags,
                    std::vector<float>& hx) {
  int splits = cols / CHUNK, n = rows * splits, threads = T + 32 * CW;
  size_t smem = (size_t)ST * CHUNK * 4;
  auto k = smx_lag<CHUNK, ST, CW>;
  int grid = grid_for(cx, k, threads, smem, n, splits, true);
  if (!grid) return;
  char name[160];
  snprintf(name, sizeof name, "%dx%d LAG chunk%d st%d cw%d g%d", rows, cols, CHUNK, ST, CW, grid);
  check_time(cx, name, rows, cols, y, hx, false, [&] { coop(k, grid, threads, smem, x, y, n, splits, pairs, flags, ++g_epoch); });
}

template <int CHUNK, int ST, int L, int LL, int HINT = 0>
static void run_ws(Ctx& cx, int rows, int cols, const float* x, float* y, float2* pairs, uint32_t* flags,
                   std::vector<float>& hx) {
  int splits = cols / CHUNK, n = rows * splits, threads = T + 64;
  size_t smem = (size_t)ST * CHUNK * 4;
  auto k = smx_ws<CHUNK, ST, L, LL, HINT>;
  int grid = grid_for(cx, k, threads, smem, n, splits, true);
  if (!grid) return;
  char name[160];
  snprintf(name, sizeof name, "%dx%d WS chunk%d st%d lag%d ll%d hint%d g%d", rows, cols, CHUNK, ST, L, LL, HINT, grid);
  check_time(cx, name, rows, cols, y, hx, false, [&] { coop(k, grid, threads, smem, x, y, n, splits, pairs, flags, ++g_epoch); });
}

template <int CHUNK, int ST, int L, int HINT = 0, int CP = 0, int D = ST>
static void run_w(Ctx& cx, int rows, int cols, const float* x, float* y, float2* pairs2, std::vector<float>& hx) {
  uint4* pairs = reinterpret_cast<uint4*>(pairs2);
  int splits = cols / CHUNK, n = rows * splits, threads = T + 96;
  size_t smem = (size_t)ST * CHUNK * 4;
  auto k = smx_w<CHUNK, ST, L, HINT, CP, D>;
  int grid = grid_for(cx, k, threads, smem, n, splits, false);
  if (!grid) return;
  char name[160];
  snprintf(name, sizeof name, "%dx%d W chunk%d st%d lag%d hint%d cp%d d%d g%d", rows, cols, CHUNK, ST, L, HINT, CP, D, grid);
  check_time(cx, name, rows, cols, y, hx, CP, [&] { coop(k, grid, threads, smem, x, y, n, splits, pairs, ++g_epoch); });
}

template <int CHUNK, int ST, int HINT, int NS, int D>
static void run_w3(Ctx& cx, int rows, int cols, const float* x, float* y, float2* pairs2, std::vector<float>& hx) {
  uint4* pairs = reinterpret_cast<uint4*>(pairs2);
  int splits = cols / CHUNK, n = rows * splits, threads = T + 96;
  size_t smem = (size_t)ST * CHUNK * 4;
  auto k = smx_w3<CHUNK, ST, HINT, NS, D>;
  int grid = grid_for(cx, k, threads, smem, n, splits, false);
  if (!grid) return;
  char name[160];
  snprintf(name, sizeof name, "%dx%d W3 chunk%d st%d hint%d ns%d d%d g%d", rows, cols, CHUNK, ST, HINT, NS, D, grid);
  check_time(cx, name, rows, cols, y, hx, false, [&] { coop(k, grid, threads, smem, x, y, n, splits, pairs, ++g_epoch); });
}

// The timeline of smx_w3 (TL = 1): five flushed launches; of the one of median span,
// the median stamps per chunk index relative to the first block's start and 1 us bins
// of the bytes landed and written. NOWAIT = 1: the same pipeline as a copy.
template <int CHUNK, int ST, int NS, int D, int NOWAIT, int K, int R = 1>
static void timeline_w3(Ctx& cx, int rows, int cols, const float* x, float* y, float2* pairs2) {
  uint4* pairs = reinterpret_cast<uint4*>(pairs2);
  int splits = cols / CHUNK, n = rows * splits, threads = T + 64 + 32 * R;
  size_t smem = (size_t)ST * CHUNK * 4;
  auto k = smx_w3<CHUNK, ST, 0, NS, D, 1, NOWAIT, K, R>;
  int grid = grid_for(cx, k, threads, smem, n, splits, false);
  if (!grid) return;
  const size_t stamps = (size_t)grid * TLJ * TLE + 2 * grid, words = 2 * stamps, blk = (size_t)grid * TLJ * TLE;
  unsigned long long* tl;
  CK(cudaMalloc(&tl, words * 8));
  CK(cudaMemcpyToSymbol(g_tl, &tl, sizeof tl));
  // Each block's clock64 stamps put on the global timer (ns from the earliest stamp):
  // the clock's rate from the block's start and end, its offset the mean of
  // (globaltimer - clock / rate) over all its stamps. -1: not stamped.
  auto align = [&](const std::vector<unsigned long long>& h) {
    unsigned long long g_min = ~0ull;
    for (size_t i = 0; i < stamps; i++)
      if (h[2 * i]) g_min = std::min(g_min, h[2 * i]);
    std::vector<double> out(stamps, -1);
    for (int b = 0; b < grid; b++) {
      std::vector<size_t> idx = {blk + 2 * b, blk + 2 * b + 1};
      for (int j = 0; j < TLJ; j++)
        for (int e = 0; e < TLE; e++)
          if (h[2 * (((size_t)b * TLJ + j) * TLE + e)]) idx.push_back(((size_t)b * TLJ + j) * TLE + e);
      const unsigned long long c0 = h[2 * idx[0] + 1];
      const double ghz = (double)(h[2 * idx[1] + 1] - c0) / (double)(h[2 * idx[1]] - h[2 * idx[0]]);
      double off = 0;
      for (size_t i : idx) off += (double)(h[2 * i] - g_min) - (double)(h[2 * i + 1] - c0) / ghz;
      off /= idx.size();
      for (size_t i : idx) out[i] = off + (double)(h[2 * i + 1] - c0) / ghz;
    }
    double t0 = 1e30;
    for (int b = 0; b < grid; b++) t0 = std::min(t0, out[blk + 2 * b]);
    for (double& v : out)
      if (v >= -0.5) v = (v - t0) / 1e3;  // us from the first block's start
    return out;
  };
  auto span = [&](const std::vector<double>& h) {
    double z = 0;
    for (int b = 0; b < grid; b++) z = std::max(z, h[blk + 2 * b + 1]);
    return z;
  };
  std::vector<std::vector<double>> runs;
  for (int r = 0; r < 5; r++) {
    CK(cudaMemset(tl, 0, words * 8));
    CK(cudaMemsetAsync(cx.flush, r & 0xff, cx.flush_bytes));
    coop(k, grid, threads, smem, x, y, n, splits, pairs, ++g_epoch);
    CK(cudaDeviceSynchronize());
    std::vector<unsigned long long> h(words);
    CK(cudaMemcpy(h.data(), tl, words * 8, cudaMemcpyDeviceToHost));
    runs.push_back(align(h));
  }
  CK(cudaFree(tl));
  std::sort(runs.begin(), runs.end(), [&](auto& p, auto& q) { return span(p) < span(q); });
  printf("timeline %dx%d %s K%d R%d, spans (us):", rows, cols, NOWAIT ? "NOWAIT" : "softmax", K, R);
  for (auto& h : runs) printf(" %.2f", span(h));
  printf("\n");
  const auto& h = runs[2];
  auto at = [&](int b, int j, int e) { return h[((size_t)b * TLJ + j) * TLE + e]; };
  auto med = [](std::vector<double> v) {
    if (v.empty()) return -1.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::vector<double> st, en;
  for (int b = 0; b < grid; b++) {
    st.push_back(h[blk + 2 * b]);
    en.push_back(h[blk + 2 * b + 1]);
  }
  std::sort(st.begin(), st.end());
  std::sort(en.begin(), en.end());
  printf("  block start max %.2f; block end min %.2f med %.2f max %.2f\n", st.back(), en[0], en[en.size() / 2], en.back());
  // When chunk c's row was all published: the latest publish stamp of its chunks.
  auto row_pub = [&](int c) {
    const int r = c / splits;
    double z = -1;
    for (int q = r * splits; q < (r + 1) * splits; q++) {
      const int qb = q % grid, qj = q / grid;
      if (qj >= TLJ || at(qb, qj, 2) < 0) return -1.0;
      z = std::max(z, at(qb, qj, 2));
    }
    return z;
  };
  printf("  median stamps (us) per chunk index j; max of resolved and written; the row's last\n"
         "  publish (median) and the median wait from it to this block's resolve\n");
  printf("    j  issued  landed publish resolve written | res.max  wr.max | row.pub    wait\n");
  const int maxmine = std::min((n + grid - 1) / grid, TLJ);
  for (int j = 0; j < maxmine; j++) {
    std::vector<double> v[TLE], rp, wait;
    double rmax = -1, wmax = -1;
    for (int b = 0; b < grid; b++) {
      if (b + j * grid >= n) continue;
      for (int e = 0; e < TLE; e++)
        if (at(b, j, e) >= 0) v[e].push_back(at(b, j, e));
      rmax = std::max(rmax, at(b, j, 3));
      wmax = std::max(wmax, at(b, j, 4));
      const double z = row_pub(b + j * grid);
      if (z >= 0 && at(b, j, 3) >= 0) {
        rp.push_back(z);
        wait.push_back(at(b, j, 3) - z);
      }
    }
    printf("   %2d %7.2f %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f | %7.2f %7.2f\n", j, med(v[0]), med(v[1]), med(v[2]),
           med(v[3]), med(v[4]), rmax, wmax, med(rp), med(wait));
  }
  const int nb = (int)span(h) + 1;
  std::vector<double> land(nb, 0), wr(nb, 0);
  for (int b = 0; b < grid; b++)
    for (int j = 0; j < maxmine; j++) {
      if (b + j * grid >= n) continue;
      const int bl = (int)at(b, j, 1), bw = (int)at(b, j, 4);
      if (at(b, j, 1) >= 0 && bl < nb) land[bl] += CHUNK * 4.0;
      if (at(b, j, 4) >= 0 && bw < nb) wr[bw] += CHUNK * 4.0;
    }
  printf("  us: GB/s landed, written (stores issued)\n");
  for (int i = 0; i < nb; i++) printf("   %3d %6.0f %6.0f\n", i, land[i] / 1e3, wr[i] / 1e3);
}

// smx_w3 with at most K chunks in flight per block (K = ST: no limit, as ported) and R
// resolver warps, timed.
template <int K, int R = 1, int CHUNK = 8192, int ST = 7>
static void time_k(Ctx& cx, int rows, int cols, const float* x, float* y, float2* pairs2, std::vector<float>& hx,
                   int max_grid = 1 << 30) {
  uint4* pairs = reinterpret_cast<uint4*>(pairs2);
  int splits = cols / CHUNK, n = rows * splits, threads = T + 64 + 32 * R;
  size_t smem = (size_t)ST * CHUNK * 4;
  auto k = smx_w3<CHUNK, ST, 0, 8, 2, 0, 0, K, R>;
  int grid = std::min(max_grid, grid_for(cx, k, threads, smem, n, splits, false));
  if (!grid) return;
  char name[160];
  if (CHUNK == 8192 && ST == 7)
    snprintf(name, sizeof name, "%dx%d W3 K%d R%d g%d", rows, cols, K, R, grid);
  else
    snprintf(name, sizeof name, "%dx%d W3 chunk%d st%d K%d R%d g%d", rows, cols, CHUNK, ST, K, R, grid);
  check_time(cx, name, rows, cols, y, hx, false, [&] { coop(k, grid, threads, smem, x, y, n, splits, pairs, ++g_epoch); });
}

// The Rust kernel (kernels/src/softmax_bulk.rs) from a bundle's PTX, launched in this
// harness (session 34: is the difference from smx_w3 the kernel or the harness?).
struct MatC {
  const float* ptr;
  uint32_t rows, cols, ld;
};
struct BulkParamsC {  // kernels::params::SoftmaxBulkParams (repr(C), 80 bytes)
  MatC x, y;
  uint32_t splits;
  uint64_t* pairs;
  uint32_t epoch, evict_first, in_flight;
};
static_assert(sizeof(BulkParamsC) == 80, "SoftmaxBulkParams is 80 bytes");
#define CU(x)                                                       \
  do {                                                              \
    CUresult e = (x);                                               \
    if (e != CUDA_SUCCESS) {                                        \
      printf("driver error %d at line %d: %s\n", e, __LINE__, #x); \
      exit(1);                                                      \
    }                                                               \
  } while (0)
static uint64_t* g_rust_pairs = nullptr;
static CUfunction rust_load(const char* ptx) {
  CUmodule m;
  CUfunction f;
  CU(cuModuleLoad(&m, ptx));
  CU(cuModuleGetFunction(&f, m, "softmax_bulk"));
  CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 7 * 8192 * 4));
  if (!g_rust_pairs) {
    CK(cudaMalloc(&g_rust_pairs, (1 << 18) * 8));
    CK(cudaMemset(g_rust_pairs, 0, (1 << 18) * 8));
  }
  return f;
}
static void time_rust(Ctx& cx, CUfunction g_rust, const char* tag, int rows, int cols, const float* x, float* y,
                      std::vector<float>& hx, int in_flight) {
  const int splits = cols / 8192, n = rows * splits, grid = std::min(n, cx.sms);
  BulkParamsC p = {{x, (uint32_t)rows, (uint32_t)cols, (uint32_t)cols},
                   {y, (uint32_t)rows, (uint32_t)cols, (uint32_t)cols},
                   (uint32_t)splits, g_rust_pairs, 0, 0, (uint32_t)in_flight};
  char name[160];
  snprintf(name, sizeof name, "%dx%d RUST%s in_flight%d g%d", rows, cols, tag, in_flight, grid);
  check_time(cx, name, rows, cols, y, hx, false, [&] {
    p.epoch = ++g_epoch;
    void* args[] = {&p};
    if (g_plain)
      CU(cuLaunchKernel(g_rust, grid, 1, 1, 608, 1, 1, 7 * 8192 * 4, 0, args, nullptr));
    else
      CU(cuLaunchCooperativeKernel(g_rust, grid, 1, 1, 608, 1, 1, 7 * 8192 * 4, 0, args));
  });
}

// CW3: clusters of C = splits blocks, as many clusters as the device holds at once.
template <int CHUNK, int ST, int NS, int D, int C>
static void run_cw3(Ctx& cx, int rows, int cols, const float* x, float* y, std::vector<float>& hx) {
  if (cols != C * CHUNK) return;
  int threads = T + 96;
  size_t smem = (size_t)ST * CHUNK * 4;
  auto k = smx_cw3<CHUNK, ST, NS, D, C>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = C;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cfg.gridDim = dim3(C * 132);
  int ncl = 0;
  CK(cudaOccupancyMaxActiveClusters(&ncl, k, &cfg));
  ncl = std::min(ncl, rows);
  cfg.gridDim = dim3(C * ncl);
  char name[160];
  snprintf(name, sizeof name, "%dx%d CW3 chunk%d st%d ns%d d%d c%d clusters%d", rows, cols, CHUNK, ST, NS, D, C, ncl);
  check_time(cx, name, rows, cols, y, hx, false, [&] { CK(cudaLaunchKernelEx(&cfg, k, x, y, rows)); });
}

int main(int argc, char** argv) {
  const bool tl = argc > 1 && std::string(argv[1]) == "timeline";
  const bool rust = argc > 2 && std::string(argv[1]) == "rust";
  const bool launch = argc > 2 && std::string(argv[1]) == "launch";
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Ctx cx;
  CK(cudaDeviceGetAttribute(&cx.sms, cudaDevAttrMultiProcessorCount, 0));
  CK(cudaMalloc(&cx.flush, cx.flush_bytes));
  CK(cudaEventCreate(&cx.a));
  CK(cudaEventCreate(&cx.b));
  size_t maxe = 1ull << 26;  // 4096 x 16384
  float *x, *y;
  CK(cudaMalloc(&x, maxe * 4));
  CK(cudaMalloc(&y, maxe * 4));
  std::vector<float> hx(maxe);
  uint64_t s = 12345;
  for (size_t i = 0; i < maxe; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    hx[i] = ((s >> 40) / (float)(1 << 24)) * 8.f - 4.f;
  }
  CK(cudaMemcpy(x, hx.data(), maxe * 4, cudaMemcpyHostToDevice));
  float2* pairs;
  uint32_t* flags;
  CK(cudaMalloc(&pairs, (1 << 17) * sizeof(float2)));
  CK(cudaMemset(pairs, 0, (1 << 17) * sizeof(float2)));
  CK(cudaMalloc(&flags, (1 << 16) * 4));
  CK(cudaMemset(flags, 0, (1 << 16) * 4));
  {
    size_t n4 = (64ull << 20) / 16;
    timeit(cx, "copy4 64 MiB (1056 x 512)", 128.0 * (1 << 20), [&] { copy4<<<cx.sms * 8, 512>>>((float4*)x, (float4*)y, n4); });
  }
  if (rust) {
    // argv[2..]: a bundle's kernels_sm90a.ptx and variants of it, tagged 0, 1, ...
    std::vector<CUfunction> fs;
    for (int a = 2; a < argc; a++) fs.push_back(rust_load(argv[a]));
    run_smx<16384, 3, 2, 0>(cx, 256, 65536, x, y, pairs, flags, hx);  // the copy ceiling
    for (int rep = 0; rep < 3; rep++)
      for (auto rc : {std::make_pair(256, 65536), std::make_pair(64, 262144), std::make_pair(128, 131072),
                      std::make_pair(8, 1 << 20)}) {
        const int r = rc.first, c = rc.second;
        time_k<2>(cx, r, c, x, y, pairs, hx);
        for (size_t i = 0; i < fs.size(); i++) {
          const std::string tag = "#" + std::to_string(i);
          time_rust(cx, fs[i], tag.c_str(), r, c, x, y, hx, 2);
        }
      }
    return 0;
  }
  if (launch) {
    // Session 35: does the cooperative launch itself cost time? The probe's design and
    // the Rust kernel (argv[2], a bundle's kernels_sm90a.ptx), each launched
    // cooperatively and plainly, alternating (one block per SM: every block is
    // resident either way on an otherwise idle GPU).
    CUfunction f = rust_load(argv[2]);
    for (int rep = 0; rep < 3; rep++)
      for (auto rc : {std::make_pair(256, 65536), std::make_pair(64, 262144), std::make_pair(8, 1 << 20)}) {
        const int r = rc.first, c = rc.second;
        for (int plain = 0; plain < 2; plain++) {
          g_plain = plain;
          const std::string tag = plain ? " plain" : " coop";
          printf("launch:%s\n", tag.c_str());
          time_k<2>(cx, r, c, x, y, pairs, hx);
          time_rust(cx, f, tag.c_str(), r, c, x, y, hx, 2);
        }
      }
    g_plain = false;
    return 0;
  }
  if (argc > 1 && std::string(argv[1]) == "chunks") {
    // Session 35: chunks of 4096 and 16384 columns against 8192 (the ring kept at
    // about 224 KiB), each with a few in-flight limits.
    run_smx<16384, 3, 2, 0>(cx, 256, 65536, x, y, pairs, flags, hx);  // the copy ceiling
    for (int rep = 0; rep < 3; rep++)
      for (auto rc : {std::make_pair(256, 65536), std::make_pair(64, 262144), std::make_pair(128, 131072),
                      std::make_pair(8, 1 << 20)}) {
        const int r = rc.first, c = rc.second;
        time_k<2>(cx, r, c, x, y, pairs, hx);
        time_k<2, 1, 4096, 14>(cx, r, c, x, y, pairs, hx);
        time_k<3, 1, 4096, 14>(cx, r, c, x, y, pairs, hx);
        time_k<4, 1, 4096, 14>(cx, r, c, x, y, pairs, hx);
        time_k<1, 1, 16384, 3>(cx, r, c, x, y, pairs, hx);
        time_k<2, 1, 16384, 3>(cx, r, c, x, y, pairs, hx);
      }
    return 0;
  }
  if (tl) {
    run_smx<16384, 3, 2, 0>(cx, 256, 65536, x, y, pairs, flags, hx);  // the copy ceiling
    for (int c : {65536, 262144}) {
      const int r = (64 << 20) / 4 / c;
      timeline_w3<8192, 7, 8, 2, 0, 7>(cx, r, c, x, y, pairs);
      timeline_w3<8192, 7, 8, 2, 0, 3>(cx, r, c, x, y, pairs);
    }
    for (int rep = 0; rep < 2; rep++)
      for (int c : {65536, 262144, 131072}) {
        const int r = (64 << 20) / 4 / c;
        time_k<7>(cx, r, c, x, y, pairs, hx);
        time_k<3>(cx, r, c, x, y, pairs, hx);
        time_k<2>(cx, r, c, x, y, pairs, hx);
        time_k<3>(cx, r, c, x, y, pairs, hx, 128);
        time_k<2>(cx, r, c, x, y, pairs, hx, 128);
      }
    return 0;
  }
  const int shapes[][2] = {{256, 65536}, {512, 32768}, {1024, 65536}, {64, 262144}};
  for (auto& sh : shapes) {
    int r = sh[0], c = sh[1];
    run_smx<16384, 3, 2, 0>(cx, r, c, x, y, pairs, flags, hx);  // the copy ceiling
    run_w3<8192, 7, 0, 8, 2>(cx, r, c, x, y, pairs, hx);  // as ported
    run_cw3<8192, 7, 8, 2, 8>(cx, r, c, x, y, hx);
    run_cw3<8192, 7, 8, 2, 4>(cx, r, c, x, y, hx);
    run_cw3<8192, 7, 8, 7, 8>(cx, r, c, x, y, hx);
    run_cw3<8192, 7, 8, 7, 4>(cx, r, c, x, y, hx);
  }
  return 0;
}
