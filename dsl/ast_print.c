/* ast_print.c: the AST as text, for `phc --emit=ast` and parser tests.
 *
 * The form is an indented S-expression. Definitions, parameters,
 * decorators and statements each start a line, indented two spaces per
 * level, with their line:col after the head; an expression is printed on
 * its owner's line, without locations:
 *
 *   (module "path"
 *     (docstring "text")
 *     (from-import __future__ annotations 18:1)
 *     (import phobos.lang as ph 20:1)
 *     (def attn_fwd 27:5
 *       (decorator 22:2 (attr (name ph) kernel))
 *       (param Q 27:14 (index (attr (name ph) tensor) ...))
 *       (returns (name int))
 *       (decl 29:5 (name base) (attr (name ph) let) (binary * ...))
 *       (for 34:5 (name kt) (call (name range) ...)
 *         (assign 37:9 (name s) (binary * (name s) (name scale))))
 *       (if 38:9 (compare == (name causal) (int 1))
 *         (then ...)
 *         (else ...))))
 *
 * Expressions: (int N) (float X) (str "s") (bool True) (none) (name n)
 * (attr E name) (call F ARGS...) (kw name E) (index E ITEMS...) (slice LO HI)
 * with _ for a missing bound, (unary OP E) (binary OP A B) (compare OP A B)
 * (list ...) (tuple ...); literals that overflowed print "overflow" after
 * the value. Statements: (expr E) (assign T V) (augassign OP T V)
 * (decl T ANNOT [V]) (for T ITER BODY...) (if COND (then ...) [(else ...)])
 * (return [V]) (pass). Floats print with the fewest digits that read back
 * exactly, strings with C escapes, so the output is stable. */
#include "dsl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_PRINT_DEPTH = 400 };

static void print_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            if (*p < 32 || *p == 127) fprintf(out, "\\x%02x", *p);
            else fputc(*p, out);
        }
    }
    fputc('"', out);
}

static void print_float(FILE *out, double v)
{
    char buf[40];
    if (isinf(v)) {
        fputs(v > 0 ? "inf" : "-inf", out);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    /* Keep a float recognisable as one: 1 prints as 1.0. */
    if (!strpbrk(buf, ".eninf")) strcat(buf, ".0");
    fputs(buf, out);
}

/* An operator as written: tok_kind_name gives it in quotes. */
static void print_op(FILE *out, TokKind op)
{
    if (op == T_OTHEREQ) {
        fputs("op=", out);
        return;
    }
    const char *name = tok_kind_name(op);
    size_t n = strlen(name);
    if (n >= 2 && name[0] == '\'') fprintf(out, "%.*s", (int)(n - 2), name + 1);
    else fputs(name, out);
}

static void print_expr(FILE *out, const Expr *e, int depth);

static void print_items(FILE *out, const Expr *e, int depth)
{
    for (int i = 0; i < e->nitems; i++) {
        fputc(' ', out);
        print_expr(out, e->items[i], depth + 1);
    }
}

static void print_opt(FILE *out, const Expr *e, int depth)
{
    if (e) print_expr(out, e, depth + 1);
    else fputc('_', out);
}

static void print_expr(FILE *out, const Expr *e, int depth)
{
    if (!e) {
        fputc('_', out);
        return;
    }
    if (depth > MAX_PRINT_DEPTH) {
        fputs("...", out);
        return;
    }
    switch (e->kind) {
    case EX_INT:
        fprintf(out, "(int %lld%s)", (long long)e->ival, e->overflow ? " overflow" : "");
        return;
    case EX_FLOAT:
        fputs("(float ", out);
        print_float(out, e->fval);
        fputs(e->overflow ? " overflow)" : ")", out);
        return;
    case EX_STRING:
        fputs("(str ", out);
        print_string(out, e->name ? e->name : "");
        fputc(')', out);
        return;
    case EX_BOOL: fputs(e->ival ? "(bool True)" : "(bool False)", out); return;
    case EX_NONE: fputs("(none)", out); return;
    case EX_NAME: fprintf(out, "(name %s)", e->name); return;
    case EX_ATTR:
        fputs("(attr ", out);
        print_expr(out, e->lhs, depth + 1);
        fprintf(out, " %s)", e->name);
        return;
    case EX_CALL:
        fputs("(call ", out);
        print_expr(out, e->lhs, depth + 1);
        print_items(out, e, depth);
        fputc(')', out);
        return;
    case EX_KEYWORD:
        fprintf(out, "(kw %s ", e->name);
        print_expr(out, e->lhs, depth + 1);
        fputc(')', out);
        return;
    case EX_INDEX:
        fputs("(index ", out);
        print_expr(out, e->lhs, depth + 1);
        print_items(out, e, depth);
        fputc(')', out);
        return;
    case EX_SLICE:
        fputs("(slice ", out);
        print_opt(out, e->lhs, depth);
        fputc(' ', out);
        print_opt(out, e->rhs, depth);
        fputc(')', out);
        return;
    case EX_UNARY:
        fputs("(unary ", out);
        print_op(out, e->op);
        fputc(' ', out);
        print_expr(out, e->lhs, depth + 1);
        fputc(')', out);
        return;
    case EX_BINARY: case EX_COMPARE:
        fputs(e->kind == EX_BINARY ? "(binary " : "(compare ", out);
        print_op(out, e->op);
        fputc(' ', out);
        print_expr(out, e->lhs, depth + 1);
        fputc(' ', out);
        print_expr(out, e->rhs, depth + 1);
        fputc(')', out);
        return;
    case EX_LIST: case EX_TUPLE:
        fputs(e->kind == EX_LIST ? "(list" : "(tuple", out);
        print_items(out, e, depth);
        fputc(')', out);
        return;
    }
    fputs("(?)", out);
}

/* Starts a node on a new line; the caller closes it with ')'. */
static void open_line(FILE *out, int indent, const char *head)
{
    fprintf(out, "\n%*s(%s", 2 * indent, "", head);
}

static void print_loc(FILE *out, Loc loc) { fprintf(out, " %d:%d", loc.line, loc.col); }

static void print_stmts(FILE *out, Stmt **body, int n, int indent);

static void print_stmt(FILE *out, const Stmt *s, int indent)
{
    static const char *heads[] = {
        [ST_EXPR] = "expr", [ST_ASSIGN] = "assign", [ST_AUGASSIGN] = "augassign",
        [ST_DECL] = "decl", [ST_FOR] = "for", [ST_IF] = "if", [ST_RETURN] = "return",
        [ST_PASS] = "pass", [ST_WHILE] = "while",
    };
    open_line(out, indent, heads[s->kind]);
    if (s->kind == ST_AUGASSIGN) {
        fputc(' ', out);
        print_op(out, s->op);
    }
    print_loc(out, s->loc);
    const Expr *parts[] = {s->target, s->annot, s->value};
    for (int i = 0; i < 3; i++) {
        if (!parts[i]) continue;
        fputc(' ', out);
        print_expr(out, parts[i], 0);
    }
    if (s->kind == ST_IF) {
        open_line(out, indent + 1, "then");
        print_stmts(out, s->body, s->nbody, indent + 2);
        fputc(')', out);
        if (s->norelse) {
            open_line(out, indent + 1, "else");
            print_stmts(out, s->orelse, s->norelse, indent + 2);
            fputc(')', out);
        }
    } else {
        print_stmts(out, s->body, s->nbody, indent + 1);
    }
    fputc(')', out);
}

static void print_stmts(FILE *out, Stmt **body, int n, int indent)
{
    for (int i = 0; i < n; i++) print_stmt(out, body[i], indent);
}

static void print_def(FILE *out, const FuncDef *fn, int indent)
{
    open_line(out, indent, "def ");
    fputs(fn->name, out);
    print_loc(out, fn->loc);
    for (int i = 0; i < fn->ndecorators; i++) {
        open_line(out, indent + 1, "decorator");
        print_loc(out, fn->decorators[i]->loc);
        fputc(' ', out);
        print_expr(out, fn->decorators[i], 0);
        fputc(')', out);
    }
    for (int i = 0; i < fn->nparams; i++) {
        const Param *p = &fn->params[i];
        open_line(out, indent + 1, "param ");
        fputs(p->name, out);
        print_loc(out, p->loc);
        fputc(' ', out);
        print_opt(out, p->annot, 0);
        if (p->dflt) {
            fputs(" (default ", out);
            print_expr(out, p->dflt, 0);
            fputc(')', out);
        }
        fputc(')', out);
    }
    if (fn->returns) {
        open_line(out, indent + 1, "returns ");
        print_expr(out, fn->returns, 0);
        fputc(')', out);
    }
    print_stmts(out, fn->body, fn->nbody, indent + 1);
    fputc(')', out);
}

static void print_top(FILE *out, const Top *t)
{
    switch (t->kind) {
    case TOP_FROM_IMPORT:
        fprintf(out, "\n  (from-import %s %s", t->module, t->name);
        if (t->alias) fprintf(out, " as %s", t->alias);
        print_loc(out, t->loc);
        fputc(')', out);
        break;
    case TOP_IMPORT:
        fprintf(out, "\n  (import %s", t->module);
        if (t->alias) fprintf(out, " as %s", t->alias);
        print_loc(out, t->loc);
        fputc(')', out);
        break;
    case TOP_DEF:
        print_def(out, t->def, 1);
        break;
    case TOP_STMT:
        print_stmt(out, t->stmt, 1);
        break;
    }
}

void ast_print(FILE *out, const Module *m)
{
    fputs("(module ", out);
    print_string(out, m->file && m->file->path ? m->file->path : "");
    if (m->docstring) {
        fputs("\n  (docstring ", out);
        print_string(out, m->docstring);
        fputc(')', out);
    }
    for (int i = 0; i < m->nitems; i++) print_top(out, m->items[i]);
    fputs(")\n", out);
}
