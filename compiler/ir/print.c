/* print.c: the tile IR's text form (docs/ir.md), one op a line, structured
 * regions indented. Values are renumbered densely in the order they are
 * defined in the text, so ir_parse, which creates values in that same
 * order, gives back a function whose ValueIds are the printed numbers and
 * which prints identically. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PRINT_MAX_DEPTH = 1000 };

typedef struct {
    FILE *out;
    const IrFunc *f;
    int *num;     /* ValueId -> printed number, 0 when not yet numbered */
    int next;
} Printer;

static bool is_ident(const char *s, bool allow_dot)
{
    if (!s || !*s || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool ok = c == '_' || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
                  || (allow_dot && c == '.');
        if (!ok) return false;
    }
    return true;
}

static void number_value(Printer *p, ValueId v)
{
    if (v > 0 && v < p->f->nvalues && !p->num[v]) p->num[v] = ++p->next;
}

static void print_value(Printer *p, ValueId v)
{
    if (v <= 0 || v >= p->f->nvalues) {
        fprintf(p->out, "%%?%d", v);
        return;
    }
    /* a use before any definition (malformed IR) still gets a stable number */
    number_value(p, v);
    fprintf(p->out, "%%%d", p->num[v]);
    const char *name = p->f->values[v].name;
    if (is_ident(name, true)) fprintf(p->out, ".%s", name);
}

static void print_values(Printer *p, int n, const ValueId *vs)
{
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", p->out);
        print_value(p, vs[i]);
    }
}

static void print_type(Printer *p, IrType t)
{
    char buf[64];
    ir_type_str(t, buf, sizeof buf);
    fputs(buf, p->out);
}

static void print_types(Printer *p, int n, const ValueId *vs)
{
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", p->out);
        if (vs[i] > 0 && vs[i] < p->f->nvalues) print_type(p, p->f->values[vs[i]].type);
        else fputs("void", p->out);
    }
}

/* The shortest decimal form that reads back as the same double. */
static void print_double(FILE *out, double d)
{
    if (isnan(d)) { fputs("nan", out); return; }
    if (isinf(d)) { fputs(d < 0 ? "-inf" : "inf", out); return; }
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, d);
        if (strtod(buf, NULL) == d) break;
    }
    fputs(buf, out);
    if (!strpbrk(buf, ".en")) fputs(".0", out);
}

static void print_param_ref(Printer *p, int param)
{
    if (param >= 0 && param < p->f->nparams && is_ident(p->f->params[param].name, false))
        fputs(p->f->params[param].name, p->out);
    else
        fprintf(p->out, "%d", param);
}

static void indent(Printer *p, int depth)
{
    for (int i = 0; i < depth; i++) fputs("  ", p->out);
}

static void print_loc(Printer *p, Loc loc)
{
    if (loc.line > 0) fprintf(p->out, " @%d:%d", loc.line, loc.col);
}

static void print_block(Printer *p, const IrBlock *b, int depth);

/* " iter(%a = %init, ...)" for n carried values: inits[i], named by
 * region r's argument first + i (%? where r has none), nothing when n is 0 */
static void print_iter(Printer *p, int n, const ValueId *inits, const IrBlock *r, int first)
{
    if (!n) return;
    fputs(" iter(", p->out);
    for (int i = 0; i < n; i++) {
        if (i) fputs(", ", p->out);
        if (r && first + i < r->nargs) print_value(p, r->args[first + i]);
        else fputs("%?", p->out);
        fputs(" = ", p->out);
        print_value(p, inits[i]);
    }
    fputs(")", p->out);
}

/* A region op's " : types", location and opening brace */
static void print_types_open(Printer *p, const IrOp *op)
{
    if (op->nres) {
        fputs(" : ", p->out);
        print_types(p, op->nres, op->res);
    }
    print_loc(p, op->loc);
    fputs(" {\n", p->out);
}

static void print_for(Printer *p, const IrOp *op, int depth)
{
    const IrBlock *body = op->body;
    fputs("for ", p->out);
    if (body && body->nargs >= 1) {
        for (int i = 0; i < body->nargs; i++) number_value(p, body->args[i]);
        print_value(p, body->args[0]);
    } else {
        fputs("%?", p->out);
    }
    fputs(" = ", p->out);
    if (op->nargs >= 1) print_value(p, op->args[0]);
    fputs(" to ", p->out);
    if (op->nargs >= 2) print_value(p, op->args[1]);
    fprintf(p->out, " step %lld", (long long)op->ival);
    print_iter(p, op->nargs > 2 ? op->nargs - 2 : 0, op->args + 2, body, 1);
    print_types_open(p, op);
    if (body) print_block(p, body, depth + 1);
    indent(p, depth);
    fputs("}", p->out);
}

static void print_if(Printer *p, const IrOp *op, int depth)
{
    fputs("if ", p->out);
    print_values(p, op->nargs, op->args);
    print_types_open(p, op);
    if (op->body) print_block(p, op->body, depth + 1);
    indent(p, depth);
    fputs("}", p->out);
    if (op->els) {
        fputs(" else {\n", p->out);
        print_block(p, op->els, depth + 1);
        indent(p, depth);
        fputs("}", p->out);
    }
}

/* while iter(%a = %init, ...) : types { condition } do(%b, ...) { body } */
static void print_while(Printer *p, const IrOp *op, int depth)
{
    const IrBlock *cond = op->body, *body = op->els;
    fputs("while", p->out);
    if (cond)
        for (int i = 0; i < cond->nargs; i++) number_value(p, cond->args[i]);
    print_iter(p, op->nargs, op->args, cond, 0);
    print_types_open(p, op);
    if (cond) print_block(p, cond, depth + 1);
    indent(p, depth);
    fputs("} do", p->out);
    if (body && body->nargs) {
        for (int i = 0; i < body->nargs; i++) number_value(p, body->args[i]);
        fputs("(", p->out);
        print_values(p, body->nargs, body->args);
        fputs(")", p->out);
    }
    fputs(" {\n", p->out);
    if (body) print_block(p, body, depth + 1);
    indent(p, depth);
    fputs("}", p->out);
}

/* A string in double quotes: \\, \" and bytes outside printable ASCII escaped (\xHH). */
static void print_string(Printer *p, const char *s)
{
    fputc('"', p->out);
    for (const unsigned char *q = (const unsigned char *)(s ? s : ""); *q; q++) {
        if (*q == '"' || *q == '\\') fprintf(p->out, "\\%c", *q);
        else if (*q < 0x20 || *q >= 0x7f) fprintf(p->out, "\\x%02x", *q);
        else fputc(*q, p->out);
    }
    fputc('"', p->out);
}

/* What follows the op name, before " : type". */
static void print_operands(Printer *p, const IrOp *op)
{
    static const char axis_names[] = "xyz";
    switch (op->kind) {
    case OP_CONST:
        if (ir_is_float(op->nres ? p->f->values[op->res[0]].type.dt : DT_F32)) {
            fputc(' ', p->out);
            print_double(p->out, op->fval);
        } else {
            fprintf(p->out, " %lld", (long long)op->ival);
        }
        break;
    case OP_PARAM:
        fputc(' ', p->out);
        print_param_ref(p, op->param);
        break;
    case OP_DIM:
        fputc(' ', p->out);
        print_param_ref(p, op->param);
        fprintf(p->out, " %d", op->axis);
        break;
    case OP_BLOCK_ID: case OP_GRID_DIM:
        if (op->axis >= 0 && op->axis < 3) fprintf(p->out, " %c", axis_names[op->axis]);
        else fprintf(p->out, " %d", op->axis);
        break;
    case OP_IOTA:
        fprintf(p->out, " %d", op->axis);
        break;
    case OP_DEVICE_PRINT:
        fputc(' ', p->out);
        print_string(p, op->str);
        for (int i = 0; i < op->nargs; i++) {
            fputs(", ", p->out);
            print_value(p, op->args[i]);
        }
        break;
    case OP_DEVICE_ASSERT:
        fputc(' ', p->out);
        print_values(p, op->nargs, op->args);
        fputs(", ", p->out);
        print_string(p, op->str);
        fputs(", ", p->out);
        print_string(p, op->file);
        break;
    case OP_REDUCE: case OP_ARGMAX: case OP_ARGMIN: case OP_CUMSUM:
        fputc(' ', p->out);
        print_values(p, op->nargs, op->args);
        fprintf(p->out, ", %d", op->axis);
        break;
    case OP_LOAD: case OP_STORE: case OP_ATOMIC_ADD: case OP_COPY_ASYNC: case OP_GATHER: case OP_SCATTER: case OP_SCATTER_ADD: {
        bool reads = op->kind == OP_LOAD || op->kind == OP_GATHER;
        int nstart = ir_window_starts(op);
        fputc(' ', p->out);
        print_param_ref(p, op->param);
        fputc('[', p->out);
        print_values(p, nstart > 0 ? nstart : 0, op->args);
        fputc(']', p->out);
        if (!reads && op->nargs >= 1) {
            fputs(", ", p->out);
            print_value(p, op->args[op->nargs - 1]);
        }
        if (ir_store_mask(op)) {
            fputs(" mask ", p->out);
            print_value(p, ir_store_mask(op));
        }
        if (op->kind == OP_ATOMIC_ADD && (op->flags & ADD_BY_PRODUCER)) fputs(" by_producer", p->out);
        if (op->kind == OP_COPY_ASYNC) fprintf(p->out, " ring %d stages %lld", op->axis, (long long)op->ival);
        if (op->window_axes) {
            fputs(" axes", p->out);
            for (int a = 0; a < IR_MAX_RANK; a++)
                if (op->window_axes & (1 << a)) fprintf(p->out, " %d", a);
        }
        break;
    }
    case OP_WAIT_ASYNC: case OP_WAIT_DOTS:
        if (op->nargs) {
            fputc(' ', p->out);
            print_values(p, op->nargs, op->args);
        }
        fprintf(p->out, " pending %lld", (long long)op->ival);
        if (op->kind == OP_WAIT_ASYNC && (op->flags & WAIT_ONCE)) fputs(" once", p->out);
        break;
    default:
        if (op->nargs) {
            fputc(' ', p->out);
            print_values(p, op->nargs, op->args);
        }
        if (op->kind == OP_DOT && (op->flags & DOT_ISSUED)) fputs(" issued", p->out);
        break;
    }
}

static void print_op(Printer *p, const IrOp *op, int depth)
{
    indent(p, depth);
    for (int i = 0; i < op->nres; i++) number_value(p, op->res[i]);
    if (op->nres) {
        print_values(p, op->nres, op->res);
        fputs(" = ", p->out);
    }
    if (depth > PRINT_MAX_DEPTH) {
        fputs("... (nested too deep)\n", p->out);
        return;
    }
    if (op->kind == OP_FOR) print_for(p, op, depth);
    else if (op->kind == OP_IF) print_if(p, op, depth);
    else if (op->kind == OP_WHILE) print_while(p, op, depth);
    else {
        fputs(ir_op_name(op), p->out);
        print_operands(p, op);
        if (op->nres) {
            fputs(" : ", p->out);
            print_types(p, op->nres, op->res);
        }
        print_loc(p, op->loc);
    }
    fputc('\n', p->out);
}

static void print_block(Printer *p, const IrBlock *b, int depth)
{
    for (int i = 0; i < b->nops; i++) print_op(p, b->ops[i], depth);
}

static void print_header(Printer *p)
{
    const IrFunc *f = p->f;
    fprintf(p->out, "func %s kernel %s threads %d%s", f->name, f->kernel, f->threads,
            f->tensorcore ? " tensorcore" : "");
    if (f->stages) fprintf(p->out, " stages %d", f->stages);
    if (f->producer_threads) fprintf(p->out, " producer %d%s", f->producer_threads, f->turns ? " turns" : "");
    if (f->occupancy > 1) fprintf(p->out, " occupancy %d", f->occupancy);
    fputc('\n', p->out);
    if (f->nmeta) {
        fputs("    meta(", p->out);
        for (int i = 0; i < f->nmeta; i++)
            fprintf(p->out, "%s%s=%lld", i ? ", " : "", f->meta[i].name, (long long)f->meta[i].value);
        fputs(")\n", p->out);
    }
    if (f->naligned) {
        fputs("    aligned(", p->out);
        for (int i = 0; i < f->naligned; i++) {
            const IrAligned *a = &f->aligned[i];
            fprintf(p->out, "%s%s=", i ? ", " : "", a->dim);
            if (a->meta) fprintf(p->out, "%s:", a->meta);
            fprintf(p->out, "%lld", (long long)a->value);
        }
        fputs(")\n", p->out);
    }
    fputs("    params(", p->out);
    for (int i = 0; i < f->nparams; i++) {
        const IrParam *pa = &f->params[i];
        fprintf(p->out, "%s%s: %s", i ? ", " : "", pa->name, ir_dtype_name(pa->dt));
        if (pa->is_tensor) {
            fputc('[', p->out);
            for (int d = 0; d < pa->rank && d < IR_MAX_RANK; d++) {
                if (d) fputs(", ", p->out);
                if (pa->dim_name[d]) fputs(pa->dim_name[d], p->out);
                else fprintf(p->out, "%lld", (long long)pa->dim_value[d]);
            }
            fputc(']', p->out);
            if (pa->tune_reset == IR_TUNE_RESTORE) fputs(" restore", p->out);
            if (pa->tune_reset == IR_TUNE_ZERO) fputs(" zero", p->out);
        } else if (pa->tune_key) {
            fputs(" key", p->out);
        }
    }
    fputs(") {\n", p->out);
}

void ir_print_func(FILE *out, const IrFunc *f)
{
    Printer p = {out, f, xcalloc((size_t)f->nvalues, sizeof(int)), 0};
    print_header(&p);
    if (f->body) print_block(&p, f->body, 1);
    fputs("}\n", out);
    free(p.num);
}

void ir_print_module(FILE *out, const IrModule *m)
{
    for (int i = 0; i < m->nfuncs; i++) {
        if (i) fputc('\n', out);
        ir_print_func(out, m->funcs[i]);
    }
}
