/* cpusim_impl.h: what the files of the CPU executor share (cpusim.c: the
 * scheduler and launches; cpusim_intrinsics.c: the intrinsics and warp
 * collectives it models; cpusim_shared.c: shared-memory races and
 * cp.async; cpusim_module.c: loading and JIT compilation;
 * cpusim_rewrite.c: the module's rewrites for the host; cpusim_asm.c:
 * sm_90a's inline PTX recognised and made calls; cpusim_wgmma.c: Hopper's
 * wgmma and its proxy fence; cpusim_tma.c: mbarriers, the bulk tensor copy
 * and the tensor maps the launch passes it): the intrinsics' ids, the
 * loaded module, a launch in progress. */
#ifndef PHC_CPUSIM_IMPL_H
#define PHC_CPUSIM_IMPL_H

#include "cpusim.h"
#include "codegen/codegen.h"
#include "base/half.h"

#include <llvm-c/Core.h>
#include <llvm-c/ExecutionEngine.h>
#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

/* ---- the intrinsics, by the id the IR wrappers pass ---- */

enum {
    IN_TID_X, IN_TID_Y, IN_TID_Z, IN_CTAID_X, IN_CTAID_Y, IN_CTAID_Z, IN_NCTAID_X, IN_NCTAID_Y, IN_NCTAID_Z,
    IN_BARRIER, IN_SHFL_I32, IN_SHFL_F32, IN_LDM_X4, IN_LDM_X2, IN_LDM_X2_TRANS, IN_MMA_F16, IN_MMA_BF16,
    IN_EX2, IN_EX2_FTZ, IN_LG2, IN_RSQRT, IN_FMAX, IN_FMIN,
    /* cp.async, each size with and without src_size; then the group operations */
    IN_CP_CA4, IN_CP_CA8, IN_CP_CA16, IN_CP_CG16, IN_CP_CA4_S, IN_CP_CA8_S, IN_CP_CA16_S, IN_CP_CG16_S,
    IN_CP_COMMIT, IN_CP_WAIT_GROUP, IN_CP_WAIT_ALL, IN_LDM_X4_TRANS,
    IN_MBAR_INIT, IN_MBAR_ARRIVE, IN_MMA_S8, IN_BARRIER_CNT, IN_WARP_SYNC,
    /* sm_90a's inline PTX (cpusim_asm.c), by what its text says */
    IN_WGMMA, IN_WGMMA_WAIT, IN_WGMMA_FENCE, IN_WGMMA_COMMIT, IN_FENCE_PROXY_ASYNC, IN_MMA_F8, IN_SETMAXNREG, IN_FENCE_CTA,
    IN_FENCE_MBAR_INIT, IN_MBAR_EXPECT_TX, IN_MBAR_TRY_WAIT, IN_BULK_TENSOR, IN_BAR_ARRIVE, IN_RED_ADD_F32,
    IN_BULK_ADD_F32, IN_BULK_DRAIN, IN_BULK_WAIT_READ, IN_BULK_LOAD, IN_BULK_ADD_TENSOR, IN_COUNT
};

static inline bool is_async_copy(int id) { return id >= IN_CP_CA4 && id <= IN_CP_CG16_S; }
static inline bool is_async_wait(int id) { return id == IN_CP_WAIT_GROUP || id == IN_CP_WAIT_ALL; }

/* A cp.async's size in bytes, and whether it takes a src_size operand. */
static inline unsigned async_copy_bytes(int id)
{
    static const unsigned bytes[4] = {4, 8, 16, 16};
    return bytes[(id - IN_CP_CA4) % 4];
}
static inline bool async_copy_has_src_size(int id) { return id >= IN_CP_CA4_S; }

/* ---- the loaded module ---- */

typedef struct {
    char *name;
    int threads, nparams;
    IrParam *params;                       /* kinds and ranks only (names not kept) */
    void (*entry)(const uint64_t *slots);
    int area;                              /* its shared area (an index into cpusim.shared), -1 if none */
    int ndescs;                            /* its bulk copy descriptors (NAME_copy_descriptors, codegen.h) */
    CodegenCopyDesc descs[CODEGEN_MAX_COPY_DESCS];
    int maxnreg;                           /* its .maxnreg (nvvm.annotations), 0 if none: each thread's registers at launch */
} SimKernel;

/* One inline asm call of the module, as cpusim_asm.c read its text: which
 * instruction, its immediates, and which argument (slot) is which operand. */
typedef struct {
    int op;                 /* IN_WGMMA ... IN_BULK_TENSOR */
    int32_t site;           /* where it is (cpusim.sites) */
    int pending;            /* wait_group's N */
    int regs;               /* setmaxnreg: the count, negative for .dec */
    int n;                  /* mma: the N of m64nNk16; its accumulators are n / 2; red.add: the floats it adds; bulk add: its bytes */
    bool bf16;              /* mma: bf16 operands, else f16 */
    bool a_e5m2, b_e5m2;    /* fp8 mma.sync: each operand e5m2, else e4m3 */
    bool trans_a, trans_b;  /* mma: A M-major, B N-major (imm-trans-a, -b) */
    int scale_a, scale_b;   /* mma: imm-scale-a, -b (1 or -1) */
    int desc_a, desc_b, scale_d;   /* mma: the arguments holding them (desc_a -1: A from registers) */
    int reg_a[4];           /* mma with A from registers: the arguments of its fragment */
    int nacc;               /* the accumulators: outputs 0.., each tied to argument acc[i] */
    int *acc;
} AsmCall;

/* The race shadow of one shared byte: who wrote it last and who read it,
 * each in which barrier epoch, and the access sites (indexes into
 * cpusim.sites). Two readers are kept, so a writer always finds one that
 * is not itself when there is one. copier is the thread whose cp.async to
 * the byte is in flight (issued, no wait of that thread has covered it
 * yet), NO_THREAD when none. */
#define NO_THREAD 0xffff
typedef struct {
    uint64_t w_epoch, r_epoch;
    uint16_t writer, reader[2], copier;
    int32_t w_site, r_site[2], c_site;
    uint32_t w_clock, r_clock[2];   /* the writer's and readers' own clocks then (cpusim_order.c) */
    /* wgmma (cpusim_wgmma.c): the fence count when last written (a
     * fence.proxy.async since orders the write before the async proxy's
     * reads); how many wgmmas in flight read the byte, the last one's
     * warpgroup and site */
    uint32_t w_tick;
    uint16_t wg_reads, wg_group;
    int32_t wg_site;
    /* the bulk tensor copy (cpusim_tma.c): TMA_IN_FLIGHT from its issue
     * until its mbarrier's phase tma_phase completes, then TMA_LANDED
     * (written by the async proxy) until a thread writes the byte; the
     * copy's site is c_site */
    uint8_t tma, tma_bar;
    uint32_t tma_phase;
} ByteShadow;
enum { TMA_NONE, TMA_IN_FLIGHT, TMA_LANDED };

typedef struct { char *name; unsigned char *addr; size_t bytes; ByteShadow *shadow; } SharedArea;

#define STACK_BYTES (1u << 20)
/* Every shared area starts on a multiple of this (cpusim_module.c says why). */
#define SHARED_AREA_ALIGN (1u << 18)
#define PAGE 4096u

struct cpusim {
    LLVMContextRef ctx;
    LLVMExecutionEngineRef ee;
    SimKernel *kernels;
    int nkernels;
    SharedArea *shared;
    int nshared;
    unsigned char *stacks;                 /* nstacks fiber stacks, each above a guard page */
    int nstacks;
    char **sites;                          /* each instrumented access: "function, block %name" */
    int nsites;
    AsmCall *asm_calls;                    /* the inline asm calls, by the index their wrappers pass */
    int nasm_calls;
    uint64_t epoch;                        /* the barrier epoch now; a new one per block and barrier */
    unsigned long bulk_copies, async_copies;   /* issued so far, over every launch (cpusim_copy_counts) */
    unsigned long bulk_adds, box_adds;         /* adds by the bulk engine so far, and of them boxes (cpusim_bulk_adds) */
    char *printed;                         /* what vprintf printed, over every launch (cpusim_printed) */
    size_t nprinted;
};

/* ---- a launch in progress ---- */

typedef enum { TH_READY, TH_BARRIER, TH_WARP, TH_MBARRIER, TH_EXITED } ThreadState;

/* mbarriers a block may use at once (the code generator's take 8) */
#define MAX_MBARRIERS 32
#define MAX_NAMED_BARRIERS 16   /* bar.sync and bar.arrive ids 0 to 15 */

/* A cp.async in flight: its source was read at issue (the GPU reads it
 * some time before the wait; another thread's store to it meanwhile would
 * be a global-memory race, not modelled); data reaches shared memory when
 * a wait of its thread covers group. */
typedef struct {
    SharedArea *area;
    size_t off;
    unsigned bytes;
    uint32_t group;
    int32_t site;
    unsigned char data[16];
} AsyncCopy;

/* A bulk add issued and not yet waited for (cp.async.bulk.wait_group.read
 * or wait_group): its shared bytes are read, and added, at that wait.
 * map: a tensor add's (its box at column x, row y), NULL for bytes added
 * to `to` in a row. */
typedef struct {
    SharedArea *area;
    size_t off;
    unsigned bytes;
    uint64_t to;
    int32_t site;
    const struct SimTensorMap *map;
    int64_t x, y;
} PendingAdd;

typedef struct {
    ucontext_t ctx;
    ThreadState st;
    int op;                 /* the collective posted */
    const uint64_t *in;     /* its arguments, one per slot */
    uint64_t *out;          /* its results */
    AsyncCopy *copies;      /* its cp.asyncs in flight, in issue order */
    int ncopies, copies_cap;
    PendingAdd *adds;       /* its bulk adds not yet waited for, in issue order */
    int nadds, adds_cap;
    uint32_t groups;        /* cp.async groups committed; the open one's number */
    int32_t async_site;     /* the site of the cp.async operation it is at */
    int32_t asm_call;       /* the inline asm call it is at (cpusim.asm_calls) */
    uint32_t wg_groups;     /* wgmma groups committed; the open one's number */
    uint32_t fenced_at;     /* the fence count after its last fence.proxy.async; 0 none */
    uint32_t mb_seen[MAX_MBARRIERS];   /* per mbarrier: the phases its try_waits saw complete */
    int mb_wait;            /* TH_MBARRIER: the mbarrier (Launch.mbar) it waits on, for parity mb_parity */
    uint32_t mb_parity;
    uint32_t bar_id, bar_count;   /* TH_BARRIER: the barrier (0: the block's) and, for a named one, its thread count */
} Thread;

/* An mbarrier of the block (cpusim_tma.c): its place, init count,
 * arrivals still pending in the current phase, transaction bytes still
 * expected (negative: more completed than expected), phases completed. */
typedef struct {
    SharedArea *area;
    size_t off;
    uint32_t count, pending, phases;
    int64_t tx;
} MBarrier;

/* A bulk tensor copy in flight: its box, read at issue and laid out as
 * shared memory will hold it, to land, completing its bytes on mbarrier
 * bar (issued in its phase `phase`). */
typedef struct {
    int bar;
    uint32_t phase;
    SharedArea *area;
    size_t off;
    unsigned bytes;
    unsigned char *data;
} BulkCopy;

/* What the executor puts in a descriptor's 128-byte kernel parameter
 * instead of the driver's opaque tensor map: what the runtime's
 * cuTensorMapEncodeTiled call says (runtime/exec_gpu.c build_map). */
typedef struct SimTensorMap {
    uint64_t magic;         /* SIM_MAP_MAGIC */
    uint64_t base;
    int64_t dims[2];        /* elements: the row's (dim 1 of the tensor), then the rows */
    int64_t row_stride;     /* bytes */
    int32_t box_rows, box_cols, swizzle, desc;
    int32_t elem;           /* bytes: 2 (moved as bytes) or 4 (f32) */
} SimTensorMap;
#define SIM_MAP_MAGIC 0x70686f626f73746dull

/* A wgmma.mma_async in flight: issued by warpgroup wg into its group
 * number group, until a wait_group of each of its four warps covers it.
 * It read (at issue) the 16-byte chunks at offsets chunk[] of area. */
typedef struct {
    int wg;
    uint32_t group;
    unsigned waited;        /* a bit per warp of the warpgroup whose wait covered it */
    int32_t site;
    SharedArea *area;
    int nchunks;
    uint32_t *chunk;
} WgmmaInFlight;

/* The bytes a tensor argument spans, by its dims: what a cp.async may read. */
typedef struct { uint64_t lo, hi; } TensorSpan;

typedef struct {
    cpusim *s;
    const SimKernel *k;
    const uint64_t *slots;
    unsigned grid[3], block[3];
    int T, cur;
    Thread *th;
    ucontext_t sched;
    bool in_thread;         /* a fiber runs: a memory fault is the kernel's */
    uint64_t block_epoch;   /* the epoch the block started in: a write before it is another block's */
    struct {                /* the first read, this epoch, of a byte the block had not written */
        bool seen;
        int thread;
        size_t byte;
        const SharedArea *area;
        int32_t site;
    } unwritten;
    TensorSpan tensors[256];
    int ntensors;
    SharedArea *area;       /* the kernel's shared area, where a wgmma descriptor points */
    uint32_t fence_tick;    /* fence.proxy.async executed so far in the launch */
    WgmmaInFlight *wgmma;   /* the block's wgmmas in flight */
    int nwgmma, wgmma_cap;
    MBarrier mbar[MAX_MBARRIERS];   /* the block's mbarriers, in order of first init */
    int nmbar;
    BulkCopy *bulk;         /* the block's bulk tensor copies in flight */
    int nbulk, bulk_cap;
    _Alignas(64) unsigned char maps[CODEGEN_MAX_COPY_DESCS][128];   /* the descriptors' parameters */
    uint32_t map_ok[CODEGEN_MAX_COPY_DESCS];
    uint32_t *vc;           /* T x T: each thread's vector clock (cpusim_order.c) */
    uint32_t *mb_vc;        /* per mbarrier, T each: the clocks its current and its last completed phase released */
    uint32_t *bar_vc;       /* per named barrier, T each: the clocks its bar.arrive threads released */
    uint32_t bar_arrived[MAX_NAMED_BARRIERS], bar_arrive_count[MAX_NAMED_BARRIERS];   /* bar.arrive threads at each since its last completion, and their count */
    /* setmaxnreg (with the kernel's maxnreg): each warp's registers a thread now, and the block's
     * pool of registers a thread that warps gave back and none has taken */
    int warp_regs[32], reg_pool;
    bool failed;
    char msg[640];
} Launch;

/* A shared access as the instrumented code reports it. ACCESS_COPY is a
 * cp.async's issue, ACCESS_BULK a bulk tensor copy's: checked as a write,
 * but what it leaves is the copy in flight, the write coming later. */
enum { ACCESS_READ, ACCESS_WRITE, ACCESS_COPY, ACCESS_BULK };

/* An intrinsic's argument or result slot as a 32-bit word or an f32. */
static inline uint32_t lo32(uint64_t v) { return (uint32_t)v; }
static inline float slot_f32(uint64_t v) { return ph_bits_f32(lo32(v)); }
static inline uint64_t f32_slot(float f) { return ph_f32_bits(f); }

/* Starts a barrier epoch: what threads did before no longer races with
 * what they do next. Epoch 0 is never (a fresh shadow). */
static inline void next_epoch(cpusim *s) { s->epoch++; }

/* ---- cpusim.c: launches ---- */
/* The JIT-compiled code reaches the executor through plain C calls, so
 * the launch running now is a global. Launches do not nest. */
extern Launch *current_launch;
/* Ends the launch with a message (the first failure's is kept). */
void launch_fail(Launch *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void yield_to_scheduler(Launch *L, Thread *me);
/* st, with the message in err. */
ph_status status_message(ph_status st, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- cpusim_intrinsics.c: the modelled intrinsics ---- */
extern const char *const intrinsic_names[IN_COUNT];
/* Called by the IR wrappers: in[] holds intrinsic id's arguments, out[]
 * receives its results. */
void sim_intrinsic(int32_t id, const uint64_t *in, uint64_t *out);
/* Computes the collectives of the warps whose live lanes all posted one;
 * true when any did. */
bool release_warps(Launch *L);
/* Gives MCJIT the half and bfloat libcalls the x86 back end emits. */
void add_libcalls(void);
void add_debug_calls(void);   /* cpusim_debug.c: vprintf and __assertfail */

/* ---- cpusim_shared.c: shared-memory races and cp.async ---- */
const char *site_name(const cpusim *s, int32_t site);
/* " reads", " writes", "'s cp.async writes"...: kind's verb after a thread's number. */
const char *access_verb(int kind);
/* Records thread t's access; false, the launch failed, on a race or an
 * access outside shared memory. */
bool check_shared_access(Launch *L, int t, uint64_t addr, uint64_t bytes, int kind, int32_t site);
/* At a barrier or the block's end; false, the launch failed, on a read of
 * a byte the block had not written. */
bool end_epoch(Launch *L);
/* The hooks the instrumented code calls (cpusim_rewrite.c). */
void sim_shared_access(uint64_t addr, uint64_t bytes, int32_t kind, int32_t site);
void sim_async_site(int32_t site);
bool issue_async_copy(Launch *L, int t, int id, const uint64_t *in);
/* Whether bytes bytes at addr lie in one tensor argument, by its dims. */
bool tensor_holds(const Launch *L, uint64_t addr, uint64_t bytes);
void wait_async_copies(Launch *L, int t, uint32_t pending);
void drop_async_copies(Launch *L);

/* ---- cpusim_module.c: loading ---- */
/* The id of the intrinsic named name, -1 when the executor does not model it. */
int intrinsic_id(const char *name);
/* A value passed to the executor as a 64-bit slot, and back (pointers,
 * integers, f32 and pairs of 16-bit floats). */
bool slot_type_ok(LLVMTypeRef t);
LLVMValueRef to_slot(LLVMBuilderRef b, LLVMContextRef ctx, LLVMValueRef v);
LLVMValueRef from_slot(LLVMBuilderRef b, LLVMContextRef ctx, LLVMValueRef v, LLVMTypeRef t);
LLVMValueRef slot_ptr(LLVMBuilderRef b, LLVMContextRef ctx, LLVMValueRef base, unsigned i);

/* ---- cpusim_rewrite.c: the module's rewrites ---- */
/* A site's description: "function, block %name", then what. */
int32_t add_site(cpusim *s, LLVMValueRef fn, LLVMBasicBlockRef bb, const char *what);
void instrument_shared_accesses(cpusim *s, LLVMModuleRef mod);
int define_dynamic_shared(LLVMModuleRef mod, LLVMValueRef kernel, char *err, size_t errlen);
void fuse_multiply_adds(LLVMModuleRef mod);

/* ---- cpusim_asm.c: inline PTX made calls ---- */
/* Replaces every inline asm call of mod by a call of a wrapper that
 * passes it to sim_asm; 1, with a message, on asm text it does not know. */
int lower_inline_asm(cpusim *s, LLVMModuleRef mod, char *err, size_t errlen);
void free_asm_calls(cpusim *s);

/* ---- cpusim_wgmma.c: wgmma and the async proxy ---- */
/* Called by the wrappers: in[] holds asm call `call`'s arguments, out[]
 * receives its outputs. */
void sim_asm(int32_t call, const uint64_t *in, uint64_t *out);
/* Computes warpgroup lo / 128's wgmma once its 128 threads posted it;
 * false while some have not, or the launch failed. */
bool release_wgmma(Launch *L, int lo);
/* The wait_group of the warp whose lanes from w posted it. */
void warp_wgmma_wait(Launch *L, Thread *w);
/* Thread t ends: false, the launch failed, when its warp left a wgmma in flight. */
bool wgmma_thread_end(Launch *L, int t);
/* Forgets every wgmma in flight and the threads' wgmma state (before a
 * block, after the launch). */
void drop_wgmma(Launch *L);
/* A write of a byte a wgmma in flight reads: fails the launch. */
void wgmma_overwrite_fail(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off);

/* ---- cpusim_order.c: the order of named barriers and mbarriers ---- */
void order_begin_block(Launch *L);
void order_end_launch(Launch *L);
/* Thread t's own clock now: what an access of its records. */
uint32_t order_now(const Launch *L, int t);
/* Whether thread from's access at its clock count is ordered before what thread to does now. */
bool order_before(const Launch *L, int from, uint32_t count, int to);
void order_mbarrier_init(Launch *L, int b);
void order_arrive(Launch *L, int t, int b);        /* thread t arrives on mbarrier b: a release */
void order_phase_complete(Launch *L, int b);
void order_wait_seen(Launch *L, int t, int b);     /* thread t's try_wait saw b's last phase complete: an acquire */
void order_warp_sync(Launch *L, int lo, int n);  /* bar.warp.sync of lanes lo .. lo + n - 1: each acquires what the others did */
bool release_named_barriers(Launch *L);
/* Whether named barrier id with count threads is one the code generator
 * uses (1 to MAX_NAMED_BARRIERS - 1, whole warps); else the launch fails,
 * naming the current thread and what (bar.sync, bar.arrive). */
bool named_barrier_ok(Launch *L, const char *what, uint32_t id, uint32_t count);
/* thread t's bar.arrive id, count: a release that counts towards the barrier without waiting */
void order_named_arrive(Launch *L, int t, uint32_t id, uint32_t count);

/* ---- cpusim_tma.c: mbarriers and the bulk tensor copy ---- */
/* The descriptors' parameters after the ABI's slots (from slot n): the
 * maps, then their flags; the tensor arguments are args. */
void pack_tensor_maps(Launch *L, const ph_arg *args, uint64_t *slots, int n);
/* mbarrier.init and arrive (intrinsics), expect_tx, try_wait and the bulk
 * copy (inline asm, call a). */
void sim_mbarrier_intrinsic(Launch *L, int id, const uint64_t *in, uint64_t *out);
void sim_tma_asm(Launch *L, const AsmCall *a, const uint64_t *in, uint64_t *out);
/* Whether the async proxy sees byte b as it is (cpusim_wgmma.c): not this
 * block's, a bulk copy's, or stored by a thread that fenced since (or
 * min_fenced, the fewest fences of the threads that count, is later). */
bool proxy_fenced(const Launch *L, const ByteShadow *b, uint32_t min_fenced);
/* cp.reduce.async.bulk .add.f32 with its commit and wait for the reads (cpusim_tma.c). */
void sim_bulk_add(Launch *L, const AsmCall *a, const uint64_t *in);
/* cp.reduce.async.bulk.tensor.2d .add of an f32 map's box, with its commit. */
void sim_bulk_tensor_add(Launch *L, const AsmCall *a, const uint64_t *in);
void sim_bulk_reads(Launch *L);
/* Lands every bulk copy in flight, its complete_tx counted; false when
 * none was in flight, or the launch failed. */
bool land_bulk_copies(Launch *L);
/* Whether an access of bytes [off, off + bytes) of a writes over no
 * mbarrier (else the launch failed, saying so). */
bool mbarrier_bytes_ok(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off, size_t bytes);
/* Resumes the threads whose mbarrier phase completed; true when any did. */
bool wake_mbarrier_waiters(Launch *L);
/* Thread t's access of byte b (at off of a), which a bulk copy wrote or
 * is writing: false, the launch failed, when t may not touch it yet. */
bool tma_access_ok(Launch *L, int t, int kind, int32_t site, const SharedArea *a, size_t off, ByteShadow *b);
/* Before a block: no mbarrier, no copy in flight, no byte a copy wrote. */
void drop_tma(Launch *L);
/* At the block's end: false, the launch failed, with a copy still in flight. */
bool tma_block_end(Launch *L);
/* The deadlock's detail for a thread waiting on an mbarrier, into buf. */
void describe_mbarrier_wait(const Launch *L, char *buf, size_t len);

#endif
