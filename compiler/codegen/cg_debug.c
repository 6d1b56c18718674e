/* cg_debug.c: ph.device_print and ph.device_assert, lowered as CUDA's
 * printf and assert are: a call of vprintf(format, arguments) with a
 * global format string and a local buffer of the arguments (each aligned
 * to its size, floats as doubles), and a call of __assertfail(message,
 * file, line, function, 1), which prints and traps, so the launch fails
 * with CUDA_ERROR_ASSERT. The driver's JIT resolves both; the CPU executor
 * (tests/cpusim) models them.
 *
 * Expects: verified IR (print operands are i32, f32 or bool scalars).
 * Guarantees: a print runs in thread 0 only (its scalars are the block's),
 * one line per block; an assert calls __assertfail in every thread that
 * holds a false element (for a scalar, in thread 0). */
#include "target.h"

#include <stdlib.h>
#include <string.h>

/* A private global string in global memory, as a generic pointer. */
static LLVMValueRef global_string(Cg *c, const char *s)
{
    size_t n = strlen(s);
    LLVMValueRef init = LLVMConstStringInContext(c->ctx, s, (unsigned)n, 0);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, LLVMTypeOf(init), ".ph.str", 1);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(g, 1);
    return LLVMBuildAddrSpaceCast(c->b, g, LLVMPointerTypeInContext(c->ctx, 0), "");
}

/* An alloca in the entry block (one a loop's body reuses; mem2reg's kind). */
LLVMValueRef entry_alloca(Cg *c, LLVMTypeRef t)
{
    LLVMBuilderRef B = LLVMCreateBuilderInContext(c->ctx);
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(c->fn);
    LLVMValueRef first = LLVMGetFirstInstruction(entry);
    if (first) LLVMPositionBuilderBefore(B, first);
    else LLVMPositionBuilderAtEnd(B, entry);
    LLVMValueRef a = LLVMBuildAlloca(B, t, "");
    LLVMDisposeBuilder(B);
    return a;
}

/* The format: "pid (%d, %d, %d) PREFIX" then " %d", " %lld" (i64) or
 * " %.9g" per value; a '%' of the prefix doubled. */
static char *print_format(Cg *c, const IrOp *op)
{
    size_t n = strlen(op->str);
    char *f = xmalloc(2 * n + 8 * (size_t)op->nargs + 32), *o = f;
    o += sprintf(o, "pid (%%d, %%d, %%d) ");
    for (const char *q = op->str; *q; q++) {
        if (*q == '%') *o++ = '%';
        *o++ = *q;
    }
    for (int i = 0; i < op->nargs; i++) {
        DType dt = vtype(c, op->args[i]).dt;
        o += sprintf(o, dt == DT_F32 ? " %%.9g" : dt == DT_I64 ? " %%lld" : " %%d");
    }
    *o++ = '\n';
    *o = 0;
    return f;
}

void emit_device_print(Cg *c, const IrOp *op)
{
    int n = 3 + op->nargs;
    LLVMTypeRef *fields = xcalloc((size_t)n, sizeof *fields);
    LLVMValueRef *vals = xcalloc((size_t)n, sizeof *vals);
    for (int a = 0; a < 3; a++) {
        fields[a] = c->ti32;
        vals[a] = c->target->isa->block_index(c, a);
    }
    for (int i = 0; i < op->nargs; i++) {
        LLVMValueRef v = c->vals[op->args[i]].v[0];
        DType dt = vtype(c, op->args[i]).dt;
        fields[3 + i] = dt == DT_F32 ? c->tf64 : dt == DT_I64 ? c->ti64 : c->ti32;
        vals[3 + i] = dt == DT_F32 ? LLVMBuildFPExt(c->b, v, c->tf64, "") : dt == DT_BOOL ? LLVMBuildZExt(c->b, v, c->ti32, "") : v;
    }
    LLVMValueRef tid = c->target->isa->thread_index(c);
    Guard g = guard_begin(c, LLVMBuildICmp(c->b, LLVMIntEQ, tid, i32c(c, 0), ""));
    LLVMTypeRef st = LLVMStructTypeInContext(c->ctx, fields, (unsigned)n, 0);
    LLVMValueRef buf = entry_alloca(c, st);
    for (int i = 0; i < n; i++) LLVMBuildStore(c->b, vals[i], LLVMBuildStructGEP2(c->b, st, buf, (unsigned)i, ""));
    char *fmt = print_format(c, op);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(c->ctx, 0), pts[2] = {ptr, ptr};
    LLVMValueRef args[2] = {global_string(c, fmt), buf};
    cg_call(c, "vprintf", c->ti32, 2, pts, args);
    guard_end(c, g);
    free(fmt);
    free(fields);
    free(vals);
}

void emit_device_assert(Cg *c, const IrOp *op)
{
    ValueId cond = op->args[0];
    LLVMValueRef failed;
    if (vtype(c, cond).rank == 0) {
        LLVMValueRef tid = c->target->isa->thread_index(c);
        failed = and1(c, LLVMBuildNot(c->b, c->vals[cond].v[0], ""), LLVMBuildICmp(c->b, LLVMIntEQ, tid, i32c(c, 0), ""));
    } else {   /* the thread's valid slots, any of them false */
        const Layout *l = reg_layout(c, cond);
        Slots v = cg_get(c, cond, l);
        failed = LLVMConstInt(c->ti1, 0, 0);
        for (int s = 0; s < v.n; s++) {
            SlotPos p = slot_pos(c, l, s);
            LLVMValueRef bad = and1(c, LLVMBuildNot(c->b, v.v[s], ""), p.valid);
            failed = LLVMBuildOr(c->b, failed, bad, "");
        }
    }
    Guard g = guard_begin(c, failed);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(c->ctx, 0), pts[5] = {ptr, ptr, c->ti32, ptr, c->ti64};
    LLVMValueRef args[5] = {global_string(c, op->str), global_string(c, op->file), i32c(c, op->loc.line),
                            global_string(c, c->f->name), LLVMConstInt(c->ti64, 1, 0)};
    cg_call(c, "__assertfail", c->tvoid, 5, pts, args);
    guard_end(c, g);
}
