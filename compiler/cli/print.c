/* print.c: phc's text views of what the pipeline's stages made: tokens
 * (--emit=tokens), the configs (--list) and the layouts (--emit=layouts). */
#include "cli.h"
#include "layout/layout.h"
#include "codegen/codegen.h"
#include "driver/targets.h"
#include "nvidia/mma_layout.h"

#include <stdlib.h>
#include <string.h>

void phc_print_tokens(FILE *out, const Token *t, int n)
{
    for (int i = 0; i < n; i++) {
        fprintf(out, "%d:%d %s", t[i].loc.line, t[i].loc.col, tok_kind_name(t[i].kind));
        if (t[i].kind == T_NAME || t[i].kind == T_INT || t[i].kind == T_FLOAT || t[i].kind == T_RESERVED)
            fprintf(out, " %.*s", t[i].len, t[i].start);
        else if (t[i].kind == T_STRING) {
            fputs(" \"", out);
            for (const char *s = t[i].str; *s; s++)
                if (*s == '\n') fputs("\\n", out);
                else if (*s == '"' || *s == '\\') fprintf(out, "\\%c", *s);
                else if ((unsigned char)*s < 32) fprintf(out, "\\x%02x", (unsigned char)*s);
                else fputc(*s, out);
            fputc('"', out);
        }
        fputc('\n', out);
    }
}

void phc_print_list(FILE *out, const IrModule *m)
{
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        if (i == 0 || strcmp(f->kernel, m->funcs[i - 1]->kernel)) fprintf(out, "%s\n", f->kernel);
        fprintf(out, "  %s", f->name);
        for (int j = 0; j < f->nmeta; j++) fprintf(out, " %s=%lld", f->meta[j].name, (long long)f->meta[j].value);
        fprintf(out, " threads=%d%s%s\n", f->threads, f->producer_threads ? f->turns ? " producer=128 turns" : " producer=128" : "", f->tensorcore ? " tensorcore" : "");
    }
}

/* --emit=layouts: each tile value with the layout the code generator emits
 * it in, in program order and numbered as --emit=ir numbers values; values
 * built where they are used, and dot operands folded into their dot, say so. */
typedef struct { FILE *out; const IrFunc *f; LayoutPlan *p; int *num; int next; } LayoutPrinter;

static void print_value_layout(LayoutPrinter *lp, ValueId v, const IrOp *def, int depth)
{
    lp->num[v] = ++lp->next;
    IrType ty = ir_vtype(lp->f, v);
    if (ty.rank == 0) return;
    char type[64], lay[256];
    ir_type_str(ty, type, sizeof type);
    if (lp->p->absorbed[v]) snprintf(lay, sizeof lay, "folded into the dot that reads it");
    else if (!lp->p->of[v]) snprintf(lay, sizeof lay, "built where used");
    else layout_str(lp->p->of[v], lay, sizeof lay);
    const char *name = lp->f->values[v].name;
    fprintf(lp->out, "%*s%%%d%s%s = %s : %s  %s%s\n", 2 * depth, "", lp->num[v], name ? "." : "", name ? name : "",
            def ? ir_op_name(def) : "loop value", type, lay, def && def->kind == OP_DOT && lp->p->mma_dot[v] ? " (tensor cores)" : "");
}

static void print_block_layouts(LayoutPrinter *lp, const IrBlock *b, int depth)
{
    for (int i = 0; i < b->nops; i++) {
        const IrOp *op = b->ops[i];
        for (int j = 0; j < op->nres; j++) print_value_layout(lp, op->res[j], op, depth);
        bool args = op->kind == OP_FOR || op->kind == OP_WHILE;   /* regions with arguments */
        if (args && op->body)
            for (int j = 0; j < op->body->nargs; j++) print_value_layout(lp, op->body->args[j], NULL, depth + 1);
        if (op->body) print_block_layouts(lp, op->body, depth + 1);
        if (op->kind == OP_WHILE && op->els)
            for (int j = 0; j < op->els->nargs; j++) print_value_layout(lp, op->els->args[j], NULL, depth + 1);
        if (op->els) print_block_layouts(lp, op->els, depth + 1);
    }
}

void phc_print_layouts(FILE *out, const IrModule *m, const char *arch)
{
    const struct Target *target = target_find(arch);
    LayoutDotPolicy dots = target ? codegen_dot_policy(target) : mma_sync_layouts;
    for (int i = 0; i < m->nfuncs; i++) {
        const IrFunc *f = m->funcs[i];
        LayoutTable *t = layout_table_new();
        LayoutPlan p = layout_plan(f, t, &dots);
        LayoutPrinter lp = {out, f, &p, xcalloc((size_t)f->nvalues + 1, sizeof(int)), 0};
        fprintf(out, "func %s (%d threads)\n", f->name, f->threads);
        print_block_layouts(&lp, f->body, 1);
        free(lp.num);
        layout_plan_free(&p);
        layout_table_free(t);
    }
}
