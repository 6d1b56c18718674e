/* cg_smem.c: the kernel's shared memory: buffers, their accesses, the area.
 *
 * Expects: emit_func's two emissions of one kernel (codegen.c). The first
 * records every buffer the body asks for (smem_buffer) and every access to
 * one, in program order among the marks of loops and ifs (smem_access,
 * smem_mark), with offsets 0; which conversions a value needs is decided
 * only as it is emitted (cg_get and its cache), so the first emission is
 * the list. smem_place makes the plan (smem_plan.c); the second emission
 * asks the same buffers and accesses in the same order and gets their
 * offsets, and a barrier before each event the plan puts one before: no
 * other code places a barrier for shared memory, except the wait of
 * asynchronous copies (smem_fixed_barrier).
 * Guarantees: a mismatch between the two emissions is an internal error,
 * never a wrong address; the area is one array, static while it fits
 * CODEGEN_MAX_STATIC_SHARED bytes, else the block's dynamic shared memory. */
#include "cg.h"
#include "target.h"

#include <string.h>

enum { SMEM_ALIGN = 16 };   /* every buffer: 16-byte vectors, cp.async chunks and ldmatrix rows */

static int64_t round16(int64_t bytes) { return (bytes + 15) / 16 * 16; }

/* Starts an emission: an empty area (a placeholder until its size is
 * known), and for the second one the recorded plan's cursors. */
void smem_begin(Cg *c, bool replay)
{
    char name[300];
    snprintf(name, sizeof name, "%s_shared_placeholder", c->f->name);
    c->smem = LLVMAddGlobalInAddressSpace(c->mod, LLVMInt8TypeInContext(c->ctx), name, 3);
    c->smem_replay = replay;
    c->smem_next_buf = c->smem_next_event = 0;
    if (!replay) smem_plan_free(&c->smem_plan);
    memset(c->ring_in_flight, 0, sizeof c->ring_in_flight);
}

/* Discards the first emission's placeholder, which nothing uses any more. */
void smem_discard(Cg *c)
{
    LLVMDeleteGlobal(c->smem);
    c->smem = NULL;
}

/* Places the recorded buffers. */
bool smem_place(Cg *c)
{
    char err[256];
    if (!smem_plan_make(&c->smem_plan, err, sizeof err)) {
        cg_fail(c, NULL, err);
        return false;
    }
    return true;
}

static int aligned_buffer(Cg *c, SmemKind kind, int64_t bytes, int align)
{
    bytes = round16(bytes);
    if (!c->smem_replay) return smem_add_buffer(&c->smem_plan, kind, bytes, align);
    int id = c->smem_next_buf++;
    if (id >= c->smem_plan.bufs.len || c->smem_plan.bufs.data[id].kind != kind || c->smem_plan.bufs.data[id].bytes != bytes) {
        cg_fail(c, NULL, "internal error: the second emission asks for other shared buffers than the first");
        return 0;
    }
    return id;
}

int smem_buffer(Cg *c, SmemKind kind, int64_t bytes) { return aligned_buffer(c, kind, bytes, SMEM_ALIGN); }

int smem_operand_buffer(Cg *c, SmemKind kind, int64_t bytes)
{
    int align = c->target->operand_align > SMEM_ALIGN ? c->target->operand_align : SMEM_ALIGN;
    return aligned_buffer(c, kind, bytes, align);
}

const Layout *operand_layout(Cg *c, int rows, int cols, int elem_bytes)
{
    const Layout *l = c->target->operand_layout ? c->target->operand_layout(c->layouts, rows, cols, elem_bytes) : NULL;
    return l ? l : layout_shared(c->layouts, rows, cols, elem_bytes);
}

int64_t smem_offset(Cg *c, int buf)
{
    return c->smem_replay && buf >= 0 && buf < c->smem_plan.bufs.len ? c->smem_plan.bufs.data[buf].offset : 0;
}

/* The next event; in the second emission, a barrier where the plan puts one. */
static void smem_event(Cg *c, SmemEventKind kind, int buf, bool write, bool together, bool unordered)
{
    if (c->role == CG_PRODUCER) return;   /* codegen.c emit_roles says why */
    if (!c->smem_replay) {
        if (together) smem_add_access_together(&c->smem_plan, buf, write);
        else if (unordered) smem_add_access_unordered(&c->smem_plan, buf, write);
        else smem_add_event(&c->smem_plan, kind, buf, write);
        return;
    }
    int i = c->smem_next_event++;
    const SmemEvent *e = i < c->smem_plan.events.len ? &c->smem_plan.events.data[i] : NULL;
    if (!e || e->kind != kind ||
        (kind == SMEM_ACCESS && (e->buf != buf || e->write != write || e->together != together || e->unordered != unordered))) {
        cg_fail(c, NULL, "internal error: the second emission accesses shared memory otherwise than the first");
        return;
    }
    if (c->smem_plan.barrier[i]) barrier(c);
}

/* An access of buffer buf: its memory operations follow, with no other
 * shared-memory access or barrier before them. */
void smem_access(Cg *c, int buf, bool write) { smem_event(c, SMEM_ACCESS, buf, write, false, false); }

/* An access of a ring that the ring's waits do not order after its loop's
 * reads: a copy before the loop (SmemEvent.unordered). */
void smem_access_unordered(Cg *c, int buf, bool write) { smem_event(c, SMEM_ACCESS, buf, write, false, true); }

/* An access whose memory operations are those of the access just made (a
 * loop that reads two buffers): its barrier, if it needs one, goes before
 * that access. */
void smem_access_together(Cg *c, int buf, bool write) { smem_event(c, SMEM_ACCESS, buf, write, true, false); }

void smem_mark(Cg *c, SmemEventKind kind) { smem_event(c, kind, -1, false, false, false); }

/* A barrier the code generator runs whatever the plan (a wait's). */
void smem_fixed_barrier(Cg *c)
{
    smem_event(c, SMEM_BARRIER, -1, false, false, false);
    barrier(c);
}

/* A byte of the area. */
LLVMValueRef smem_byte_ptr(Cg *c, LLVMValueRef offset)
{
    return LLVMBuildInBoundsGEP2(c->b, LLVMInt8TypeInContext(c->ctx), c->smem, &offset, 1, "");
}

/* ---- the area ---- */

/* Past the static limit the area is the block's dynamic shared memory, one
 * extern array. The constant <entry>_dynamic_shared_bytes (codegen.h) keeps
 * the size the launch must ask for; external, so the optimizer keeps it and
 * the PTX shows it. */
/* The area's start: as aligned as any buffer in it asks. */
static unsigned area_align(Cg *c) { return c->target->operand_align > SMEM_ALIGN ? (unsigned)c->target->operand_align : SMEM_ALIGN; }

static void place_dynamic_shared(Cg *c, int64_t bytes)
{
    char name[300];
    snprintf(name, sizeof name, "%s%s", c->f->name, CODEGEN_DYNAMIC_AREA_SUFFIX);
    LLVMTypeRef at = LLVMArrayType2(LLVMInt8TypeInContext(c->ctx), 0);
    LLVMValueRef area = LLVMAddGlobalInAddressSpace(c->mod, at, name, 3);
    LLVMSetLinkage(area, LLVMExternalLinkage);
    LLVMSetAlignment(area, area_align(c));
    LLVMReplaceAllUsesWith(c->smem, area);
    LLVMDeleteGlobal(c->smem);
    snprintf(name, sizeof name, "%s%s", c->f->name, CODEGEN_DYNAMIC_SHARED_SUFFIX);
    LLVMValueRef size = LLVMAddGlobalInAddressSpace(c->mod, c->ti32, name, 4);
    LLVMSetInitializer(size, i32c(c, bytes));
    LLVMSetGlobalConstant(size, 1);
    LLVMSetAlignment(size, 4);
}

/* Sizes the area now that the plan has placed every buffer: a static array
 * <entry>_smem while it fits CODEGEN_MAX_STATIC_SHARED bytes (the PTX of
 * such a kernel does not depend on the limit), else dynamic; a kernel with
 * no buffer has none. */
void smem_place_area(Cg *c)
{
    int64_t bytes = round16(c->smem_plan.bytes);
    if (!bytes && LLVMGetFirstUse(c->smem)) bytes = 16;   /* addresses of buffers nothing accesses */
    if (bytes > CODEGEN_MAX_STATIC_SHARED) {
        place_dynamic_shared(c, bytes);
    } else if (bytes) {
        char name[300];
        snprintf(name, sizeof name, "%s_smem", c->f->name);
        LLVMTypeRef at = LLVMArrayType2(LLVMInt8TypeInContext(c->ctx), (uint64_t)bytes);
        LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, at, name, 3);
        LLVMSetInitializer(g, LLVMGetUndef(at));
        LLVMSetLinkage(g, LLVMInternalLinkage);
        LLVMSetAlignment(g, area_align(c));
        LLVMReplaceAllUsesWith(c->smem, g);
        LLVMDeleteGlobal(c->smem);
    } else {
        LLVMDeleteGlobal(c->smem);
    }
    c->smem = NULL;
    if (c->smem_next_event != c->smem_plan.events.len || c->smem_next_buf != c->smem_plan.bufs.len)
        cg_fail(c, NULL, "internal error: the second emission missed shared-memory accesses of the first");
}
