/* cg_ptxas.c: rewrites of emitted PTX that steer around defects of
 * NVIDIA's PTX assembler (ptxas, and the driver's JIT, which is the same
 * compiler).
 *
 * Expects: PTX text as LLVM's NVPTX backend prints it, one instruction a
 * line. Guarantees: the same program, instruction for instruction, except
 * where a rewrite below replaces one instruction by others that compute
 * the same bits.
 *
 * Integer negation feeding a min or max. The assembler of CUDA 13.0
 * (driver 580) fuses two chained integer min/max into one three-input
 * VIMNMX3 and drops the negation of the inner one's second operand:
 *     neg.s32 %r6, %r2;  max.s32 %r11, %r1, %r6;  max.s32 %r9, %r11, %r3;
 * assembles to VIMNMX3 R9, R1, R2, R3 (no negation anywhere), for sm_90
 * and for sm_80 PTX alike. `rowmax(-x)` on i32 tiles is exactly that
 * chain. Written as ~x + 1 (not, then add 1: the same bits in two's
 * complement) the negation survives: ptxas folds the add into a VIADDMNMX
 * and no longer forms the faulty VIMNMX3 (checked on the H200, see
 * tests/difftest/regressions/rowmax-broadcast-gpu-seed-20261980.ph).
 *
 * The PTX version of fp8 mma.sync and the vector reductions. LLVM 19
 * writes `.version 8.0` (its +ptx80) and has neither, which dot_mma_f8 and
 * ptx_red_add_f32 write as inline PTX; fp8 mma needs PTX ISA 8.4 and
 * red.global.add.v2/v4.f32 8.1, so a module holding either says 8.4 (which
 * changes nothing else: 8.4 is 8.0 with additions). Other modules keep
 * 8.0, and their text.
 *
 * And one rewrite of the optimized LLVM module, before LLVM 19's NVPTX
 * back end sees it: that back end lowers `sitofp i1` as if it were
 * `uitofp` (selp.u32 1, 0, then cvt.rn.f32.s32: true converts to 1.0, not
 * -1.0). Our lowering writes no such conversion, but InstCombine forms
 * one from -(x % 2) converted to a float (a negated floor-modulo by two
 * of i32, tests/difftest/regressions/neg-mod2-to-float-gpu-seed-2026120300.ph).
 * It becomes a select of -1.0 and 0.0, which the back end lowers
 * as written. */
#include "codegen/cg.h"
#include "nvidia/targets.h"

#include <ctype.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* If `line` (without its newline) is `[@pred ]neg.s32 D, S;`, writes its
 * replacement to `out` and returns true. */
static bool rewrite_neg_s32(const char *line, size_t len, FILE *out)
{
    const char *p = line, *end = line + len;
    while (p < end && isspace((unsigned char)*p)) p++;
    const char *guard = p;
    size_t guard_len = 0;
    if (p < end && *p == '@') {
        while (p < end && !isspace((unsigned char)*p)) p++;
        guard_len = (size_t)(p - guard);
        while (p < end && isspace((unsigned char)*p)) p++;
    }
    static const char op[] = "neg.s32";
    if ((size_t)(end - p) < sizeof op || memcmp(p, op, sizeof op - 1) || !isspace((unsigned char)p[sizeof op - 1]))
        return false;
    p += sizeof op - 1;
    char dst[64], src[64];
    int n = 0;
    char rest[256];
    size_t rest_len = (size_t)(end - p);
    if (rest_len >= sizeof rest) return false;
    memcpy(rest, p, rest_len);
    rest[rest_len] = 0;
    if (sscanf(rest, " %63[^, \t] , %63[^; \t] ;%n", dst, src, &n) != 2 || n == 0) return false;
    for (const char *q = rest + n; *q; q++)
        if (!isspace((unsigned char)*q)) return false;   /* a comment or more: leave the line alone */
    fprintf(out, "\t%.*s%snot.b32 \t%s, %s;\n", (int)guard_len, guard, guard_len ? " " : "", dst, src);
    fprintf(out, "\t%.*s%sadd.s32 \t%s, %s, 1;", (int)guard_len, guard, guard_len ? " " : "", dst, dst);
    return true;
}

/* fp8 mma.sync (8.4) and the vector reductions (red.global.add.v2.f32,
 * 8.1): both in 8.4 */
static bool needs_ptx84(const char *ptx)
{
    return strstr(ptx, "mma.sync.aligned.m16n8k32.row.col.f32.e") != NULL || strstr(ptx, "red.global.add.v") != NULL;
}

/* The constant c of fp type t, or a vector of it when t is one. */
static LLVMValueRef fp_constant(LLVMTypeRef t, double c)
{
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return LLVMConstReal(t, c);
    unsigned n = LLVMGetVectorSize(t);
    LLVMValueRef *lanes = xcalloc(n, sizeof *lanes);
    for (unsigned i = 0; i < n; i++) lanes[i] = LLVMConstReal(LLVMGetElementType(t), c);
    LLVMValueRef v = LLVMConstVector(lanes, n);
    free(lanes);
    return v;
}

static bool is_bool(LLVMTypeRef t)
{
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind) t = LLVMGetElementType(t);
    return LLVMGetTypeKind(t) == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == 1;
}

void nvptx_workarounds(LLVMModuleRef mod)
{
    LLVMBuilderRef b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb), next; i; i = next) {
                next = LLVMGetNextInstruction(i);
                if (LLVMGetInstructionOpcode(i) != LLVMSIToFP || !is_bool(LLVMTypeOf(LLVMGetOperand(i, 0)))) continue;
                LLVMTypeRef t = LLVMTypeOf(i);
                LLVMPositionBuilderBefore(b, i);
                LLVMValueRef v = LLVMBuildSelect(b, LLVMGetOperand(i, 0), fp_constant(t, -1.0), fp_constant(t, 0.0), "");
                LLVMReplaceAllUsesWith(i, v);
                LLVMInstructionEraseFromParent(i);
            }
    LLVMDisposeBuilder(b);
}

char *ptxas_workarounds(const char *ptx)
{
    bool v84 = needs_ptx84(ptx);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    if (!out) return NULL;
    for (const char *line = ptx; *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        if (v84 && len == 12 && !memcmp(line, ".version 8.0", 12)) fputs(".version 8.4", out);
        else if (!rewrite_neg_s32(line, len, out)) fwrite(line, 1, len, out);
        if (nl) fputc('\n', out);
        line += len + (nl ? 1 : 0);
    }
    if (fclose(out)) {
        free(text);
        return NULL;
    }
    return text;
}
