// add_rates.cu: how fast each way of adding a 64 x D f32 tile into a global f32 accumulator runs
// on the GPU (docs/performance.md, "sixteenth": why the fused backward adds four floats at a time).
// Plain CUDA, apart from the project: built and run by hand on the GPU machine, which has nvcc.
//
// What it measures
// ----------------
// The access pattern of the dQ accumulation in a fused FlashAttention backward kernel (sm_90):
//   acc      : [H*N, D] f32, row-major, contiguous (H = 128 heads, N = 16384 rows per head).
//   grid     : (N/128, H) = (128, 128) CTAs of 256 threads (two warpgroups of 128).
//   CTA (bx, by) loops it = 0 .. ITERS-1 (ITERS = N/64 = 256) and adds a 64 x D tile into rows
//   by*N + 64*it .. +63 (all D columns). So all 128 CTAs of head `by` add into the same sequence
//   of row blocks (heavy same-address contention, as in dQ accumulation).
// Per-thread tile registers use the Hopper wgmma accumulator layout, split by columns between the
// two warpgroups: warpgroup g = tid/128 owns cols [g*D/2, (g+1)*D/2); warp w = (tid%128)/32 owns
// rows 16w..16w+15; lane l holds, for each 8-col chunk j, the pairs (row 16w + l/4, cols c, c+1)
// and (row 16w + 8 + l/4, cols c, c+1), c = g*D/2 + 8j + 2*(l%4). That is 64*D/256 floats/thread.
//
// Tile values: v = ((col + 3*row_in_tile + it + bx) % 7) * 0.25f, kept in registers and advanced
// by one FADD + select per element per iteration (cheap, loop-carried, cannot be folded away).
// Sums of quarter-integers <= 192 are exact in f32, so the result is order-independent and the
// host can check it exactly.
//
// Variants (template parameter VAR):
//   red_v2          : red.global.add.v2.f32 per register pair (fire-and-forget vector reduction)
//   red_v4          : lanes l, l^1 swap pairs with shfl so each holds 4 consecutive cols, then
//                     red.global.add.v4.f32 (half the instructions of red_v2)
//   atomicAdd       : scalar float atomicAdd per element (baseline; compiles to RED.E.ADD.F32)
//   bulk_rows       : regs -> smem tile (64 x D row-major, double buffered), fence.proxy.async,
//                     barrier, then 64 threads each issue one cp.reduce.async.bulk .add.f32 of one
//                     row (D*4 bytes); commit; wait_group.read 1
//   bulk_tile       : as bulk_rows but one thread issues ONE bulk reduce of 64*D*4 bytes
//                     (the 64 rows x D cols are contiguous in global memory)
//   bulk_tile_wait0 : as bulk_tile but wait_group.read 0 immediately after commit
//   none            : loop + smem writes + fences + barriers of bulk_tile, no global adds
//   none_regs       : only the loop with register updates, no memory traffic
// Note: the smem tile is plain row-major (needed for bulk_tile); the float2 stores from the wgmma
// layout therefore have bank conflicts -- their cost shows up in `none`.
//
// Rate = (total bytes added = gridX*gridY*ITERS*64*D*4) / time. Timing: warm-up once, median of 5
// cudaEvent-timed runs. Correctness: acc zeroed, one run, a few rows compared with host sums.
//
// Build/run: nvcc -O3 -arch=sm_90a -o add_rates bench/add_rates.cu && ./add_rates [occ1]
//   occ1: pad dynamic smem to 116 KB so only 1 CTA/SM fits (like a real FA3 bwd kernel).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>

#define CK(x)                                                                                \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "CUDA error '%s' at %s:%d: %s\n", #x, __FILE__, __LINE__,              \
              cudaGetErrorString(e_));                                                       \
      exit(1);                                                                               \
    }                                                                                        \
  } while (0)

constexpr int H = 128, N = 16384, TILE = 64, ITERS = N / TILE, NTHR = 256, GX = N / 128;

enum { RED_V2, RED_V4, ATOMIC, BULK_ROWS, BULK_TILE, BULK_TILE_WAIT0, NONE, NONE_REGS, NVAR };
static const char* kNames[NVAR] = {"red_v2",    "red_v4",          "atomicAdd", "bulk_rows",
                                   "bulk_tile", "bulk_tile_wait0", "none",      "none_regs"};
__host__ __device__ constexpr bool uses_smem(int v) { return v >= BULK_ROWS && v <= NONE; }

// ---------------------------------------------------------------- PTX wrappers
// Vector red (PTX ISA 8.1+, sm_90). ISA syntax: red{.sem}{.scope}{.global}.add{.level::cache_hint}
// .vec_32_bit.f32 [a], b;  -> "red.global.add.v2.f32". The ISA examples also write the other order,
// "red.global.v2.f32.add" (used e.g. in CUTLASS); if ptxas rejects one form, swap to the other.
#define RED_V2_F32 "red.global.add.v2.f32 [%0], {%1, %2};"
#define RED_V4_F32 "red.global.add.v4.f32 [%0], {%1, %2, %3, %4};"
// Fallback if neither vector form assembles: two/four `red.global.add.f32 [%0], %1;`
// or atomicAdd(reinterpret_cast<float2*>(p), make_float2(a, b)) (CUDA 12.x, sm_90).

__device__ __forceinline__ void red_add_v2(float* p, float a, float b) {
  asm volatile(RED_V2_F32 ::"l"(p), "f"(a), "f"(b) : "memory");
}
__device__ __forceinline__ void red_add_v4(float* p, float a, float b, float c, float d) {
  asm volatile(RED_V4_F32 ::"l"(p), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
// Bulk (non-tensor) async reduction smem -> global; size multiple of 16, both addresses 16B aligned.
__device__ __forceinline__ void bulk_reduce_add_f32(float* gdst, unsigned ssrc, unsigned bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(gdst),
               "r"(ssrc), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int Nw>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(Nw) : "memory");
}
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// ---------------------------------------------------------------- kernel
template <int D, int VAR>
__global__ void __launch_bounds__(NTHR) bench(float* __restrict__ acc, int sink) {
  constexpr int NJ = D / 16;  // 8-column chunks per warpgroup (D/2 cols each)
  static_assert(NJ % 2 == 0, "red_v4 pairs chunks");
  extern __shared__ __align__(128) float sm[];
  const int tid = threadIdx.x, g = tid >> 7, w = (tid & 127) >> 5, l = tid & 31, q = l & 3;
  const int r0 = 16 * w + (l >> 2);        // this thread's rows: r0 and r0 + 8
  const int cbase = g * (D / 2) + 2 * q;   // this thread's cols: cbase + 8j, +1
  const bool odd = l & 1;

  float v[NJ][2][2];
#pragma unroll
  for (int j = 0; j < NJ; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        v[j][h][e] = (float)((cbase + 8 * j + e + 3 * (r0 + 8 * h) + (int)blockIdx.x) % 7) * 0.25f;

  const size_t head_row0 = (size_t)blockIdx.y * N;
  const unsigned sbase = static_cast<unsigned>(__cvta_generic_to_shared(sm));

  for (int it = 0; it < ITERS; ++it) {
    float* gt = acc + (head_row0 + (size_t)it * TILE) * D;  // 64 x D tile, contiguous
    if constexpr (VAR == RED_V2) {
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) red_add_v2(gt + (r0 + 8 * h) * D + cbase + 8 * j, v[j][h][0], v[j][h][1]);
    } else if constexpr (VAR == RED_V4) {
#pragma unroll
      for (int j = 0; j < NJ; j += 2)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          // even lane keeps its chunk-j pair, gets partner's chunk-j pair; odd lane the same for j+1
          float s0 = odd ? v[j][h][0] : v[j + 1][h][0];
          float s1 = odd ? v[j][h][1] : v[j + 1][h][1];
          float t0 = __shfl_xor_sync(0xffffffffu, s0, 1);
          float t1 = __shfl_xor_sync(0xffffffffu, s1, 1);
          float a0 = odd ? t0 : v[j][h][0], a1 = odd ? t1 : v[j][h][1];
          float a2 = odd ? v[j + 1][h][0] : t0, a3 = odd ? v[j + 1][h][1] : t1;
          int col = cbase + 8 * j + (odd ? 6 : 0);  // odd: g*D/2 + 8(j+1) + 2(q-1)
          red_add_v4(gt + (r0 + 8 * h) * D + col, a0, a1, a2, a3);
        }
    } else if constexpr (VAR == ATOMIC) {
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float* p = gt + (r0 + 8 * h) * D + cbase + 8 * j;
          atomicAdd(p, v[j][h][0]);
          atomicAdd(p + 1, v[j][h][1]);
        }
    } else if constexpr (uses_smem(VAR)) {
      const int slot = it & 1;
      float* st = sm + slot * TILE * D;
      __syncthreads();  // slot was last read by iteration it-2's bulk op; its issuer waited (.read) for it
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          *reinterpret_cast<float2*>(st + (r0 + 8 * h) * D + cbase + 8 * j) = make_float2(v[j][h][0], v[j][h][1]);
      fence_proxy_async_smem();  // make generic-proxy smem writes visible to the async proxy
      __syncthreads();
      const unsigned sslot = sbase + (unsigned)(slot * TILE * D * 4);
      if constexpr (VAR == BULK_ROWS) {
        if (tid < TILE) {
          bulk_reduce_add_f32(gt + tid * D, sslot + tid * D * 4, D * 4);
          bulk_commit();
          bulk_wait_read<1>();
        }
      } else if constexpr (VAR == BULK_TILE || VAR == BULK_TILE_WAIT0) {
        if (tid == 0) {
          bulk_reduce_add_f32(gt, sslot, TILE * D * 4);
          bulk_commit();
          if constexpr (VAR == BULK_TILE) bulk_wait_read<1>();
          else bulk_wait_read<0>();
        }
      }
    }
    // advance tile values: v = ((... + it + 1) % 7) * 0.25
#pragma unroll
    for (int j = 0; j < NJ; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float x = v[j][h][e] + 0.25f;
          v[j][h][e] = (x >= 1.75f) ? 0.f : x;
        }
  }
  if constexpr (VAR == BULK_ROWS || VAR == BULK_TILE || VAR == BULK_TILE_WAIT0) {
    if ((VAR == BULK_ROWS && tid < TILE) || tid == 0) bulk_wait_all();
  }
  if (sink) {  // never true at run time; keeps the register updates alive in none_regs
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < NJ; ++j) s += v[j][0][0] + v[j][0][1] + v[j][1][0] + v[j][1][1];
    acc[tid] = s;
  }
}

// ---------------------------------------------------------------- host
static double verify(const float* dacc, int D) {
  const int heads[3] = {0, 57, H - 1};
  const int rows[7] = {0, 1, 63, 64 + 17, 5 * 64 + 40, N / 2 + 40, N - 1};
  std::vector<float> buf(D);
  double maxerr = 0.0;
  for (int hd : heads)
    for (int rr : rows) {
      size_t R = (size_t)hd * N + rr;
      CK(cudaMemcpy(buf.data(), dacc + R * D, D * sizeof(float), cudaMemcpyDeviceToHost));
      int it = rr / TILE, r = rr % TILE;
      for (int col = 0; col < D; ++col) {
        double e = 0.0;
        for (int bx = 0; bx < GX; ++bx) e += (double)((col + 3 * r + it + bx) % 7) * 0.25;
        double err = fabs((double)buf[col] - e) / std::max(fabs(e), 1.0);
        maxerr = std::max(maxerr, err);
      }
    }
  return maxerr;
}

template <int D>
static void run_all(float* dacc, bool occ1) {
  typedef void (*Kern)(float*, int);
  Kern kern[NVAR] = {bench<D, RED_V2>,    bench<D, RED_V4>,          bench<D, ATOMIC>, bench<D, BULK_ROWS>,
                     bench<D, BULK_TILE>, bench<D, BULK_TILE_WAIT0>, bench<D, NONE>,   bench<D, NONE_REGS>};
  const dim3 grid(GX, H), block(NTHR);
  const double bytes = (double)GX * H * ITERS * TILE * D * 4.0;
  const size_t accBytes = (size_t)H * N * D * sizeof(float);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int var = 0; var < NVAR; ++var) {
    size_t smem = uses_smem(var) ? (size_t)2 * TILE * D * sizeof(float) : 0;
    if (occ1) smem = std::max(smem, (size_t)116 * 1024);
    CK(cudaFuncSetAttribute(kern[var], cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kern[var], NTHR, smem));
    // verification run
    CK(cudaMemset(dacc, 0, accBytes));
    kern[var]<<<grid, block, smem>>>(dacc, 0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    const bool checkable = var != NONE && var != NONE_REGS;
    double err = checkable ? verify(dacc, D) : 0.0;
    // warm-up + 5 timed runs
    kern[var]<<<grid, block, smem>>>(dacc, 0);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int rep = 0; rep < 5; ++rep) {
      CK(cudaEventRecord(e0));
      kern[var]<<<grid, block, smem>>>(dacc, 0);
      CK(cudaGetLastError());
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      float ms = 0.f;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    const float ms = t[2];
    char errs[32];
    if (checkable) snprintf(errs, sizeof errs, "%g", err);
    else snprintf(errs, sizeof errs, "n/a");
    printf("D %3d %-16s %9.3f ms  %6.2f TB/s  maxerr %s  (%d CTA/SM, smem %zu B)%s\n", D, kNames[var], ms,
           bytes / (ms * 1e-3) / 1e12, errs, occ, smem, (checkable && err > 1e-3) ? "  MISMATCH" : "");
    fflush(stdout);
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
}

int main(int argc, char** argv) {
  const bool occ1 = argc > 1 && strcmp(argv[1], "occ1") == 0;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs; grid (%d, %d) x %d thr, ITERS %d, H %d, N %d%s\n", prop.name,
         prop.multiProcessorCount, GX, H, NTHR, ITERS, H, N, occ1 ? ", smem padded to 1 CTA/SM" : "");
  float* dacc = nullptr;
  CK(cudaMalloc(&dacc, (size_t)H * N * 128 * sizeof(float)));  // 1 GiB, enough for D = 128
  run_all<64>(dacc, occ1);
  run_all<128>(dacc, occ1);
  CK(cudaFree(dacc));
  return 0;
}
