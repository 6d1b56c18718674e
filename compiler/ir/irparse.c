/* irparse.c: reads the IR's text form (docs/ir.md) back into IrFuncs, for
 * golden tests and bug reports. Newlines are plain white space: every op's
 * syntax ends by itself. Values are created in the order the text defines
 * them, so printed numbers become ValueIds and print -> parse -> print is
 * the identity. The parser only resolves names and reads types; whether
 * the result is well formed is ir_verify's business. */
#include "ir.h"

#include <errno.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

enum {
    MAX_DEPTH = 200,            /* nested for/if regions */
    MAX_VALUE_NUMBER = 1 << 24,
    MAX_DIM = 1 << 20,
    MAX_NUMEL = 1 << 24,        /* elements in one tile */
    MAX_LIST = 4096,            /* operands, results, params of one op or header */
};

typedef enum { T_EOF, T_IDENT, T_NUM, T_VALUE, T_PUNCT, T_STR } TokKind;

typedef struct {
    TokKind kind;
    const char *s; int len;     /* the token's text */
    int line, col;
    int num;                    /* T_VALUE: the number after % */
    const char *name; int namelen; /* T_VALUE: the suffix after the dot */
} Tok;

typedef struct {
    const char *p, *line_start;
    int line;
    Tok tok;
    char *err; size_t errlen;
    jmp_buf fail;
    IrModule *m;
    IrFunc *f;                  /* the function being read, not yet in m */
    ValueId *map; int mapcap;   /* printed number -> ValueId */
    int depth;
    Arena *scratch;             /* temporary lists; freed once, even after a failure */
} Parser;

/* Like vec_push, but the array lives in the scratch arena, so a failure
 * (a longjmp) leaks nothing. */
#define apush(ps, v, x) do { \
        if ((v)->len == (v)->cap) { \
            int cap_ = (v)->cap ? 2 * (v)->cap : 8; \
            void *data_ = arena_alloc((ps)->scratch, sizeof *(v)->data * (size_t)cap_); \
            if ((v)->len) memcpy(data_, (v)->data, sizeof *(v)->data * (size_t)(v)->len); \
            (v)->data = data_; \
            (v)->cap = cap_; \
        } \
        (v)->data[(v)->len++] = (x); \
    } while (0)

static _Noreturn void fail_at(Parser *ps, int line, int col, const char *fmt, const char *arg)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg);
    snprintf(ps->err, ps->errlen, "%d:%d: %s", line, col, msg);
    longjmp(ps->fail, 1);
}

static _Noreturn void fail(Parser *ps, const char *fmt, const char *arg)
{
    fail_at(ps, ps->tok.line, ps->tok.col, fmt, arg);
}

static bool is_alpha(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }

static void skip_space(Parser *ps)
{
    for (;;) {
        char c = *ps->p;
        if (c == '\n') {
            ps->p++;
            ps->line++;
            ps->line_start = ps->p;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            ps->p++;
        } else if (c == '#') {          /* comment to the end of the line */
            while (*ps->p && *ps->p != '\n') ps->p++;
        } else {
            return;
        }
    }
}

static void next(Parser *ps)
{
    skip_space(ps);
    const char *s = ps->p;
    Tok t = {T_PUNCT, s, 1, ps->line, (int)(s - ps->line_start) + 1, 0, NULL, 0};
    ps->tok = t;
    if (!*s) {
        ps->tok.kind = T_EOF;
        ps->tok.len = 0;
        return;
    }
    const char *q = s;
    if (*q == '%') {
        q++;
        if (!is_digit(*q)) fail(ps, "expected a value number after '%%'%s", "");
        long n = 0;
        while (is_digit(*q)) {
            n = n * 10 + (*q++ - '0');
            if (n > MAX_VALUE_NUMBER) fail(ps, "value number too large%s", "");
        }
        ps->tok.kind = T_VALUE;
        ps->tok.num = (int)n;
        if (*q == '.' && is_alpha(q[1])) {
            const char *name = ++q;
            while (is_alnum(*q) || (*q == '.' && is_alnum(q[1]))) q++;
            ps->tok.name = name;
            ps->tok.namelen = (int)(q - name);
        }
    } else if (*q == '"') {   /* a string on one line: \\, \" and \xHH escapes */
        for (q++; *q && *q != '"' && *q != '\n'; q++)
            if (*q == '\\' && q[1] && q[1] != '\n') q++;
        if (*q != '"') fail(ps, "unterminated string%s", "");
        q++;
        ps->tok.kind = T_STR;
    } else if (is_alpha(*q)) {
        while (is_alnum(*q)) q++;
        ps->tok.kind = T_IDENT;
    } else if (is_digit(*q) || ((*q == '-' || *q == '+') && (is_digit(q[1]) || is_alpha(q[1]) || q[1] == '.'))
               || (*q == '.' && is_digit(q[1]))) {
        q++;
        while (is_alnum(*q) || *q == '.' || ((*q == '-' || *q == '+') && (q[-1] == 'e' || q[-1] == 'E')))
            q++;
        ps->tok.kind = T_NUM;
    } else {
        q++;
    }
    ps->tok.len = (int)(q - s);
    ps->p = q;
}

static bool is_punct(Parser *ps, char c) { return ps->tok.kind == T_PUNCT && *ps->tok.s == c; }

static bool is_word(Parser *ps, const char *w)
{
    return ps->tok.kind == T_IDENT && (int)strlen(w) == ps->tok.len && !memcmp(ps->tok.s, w, (size_t)ps->tok.len);
}

static void expect_punct(Parser *ps, char c)
{
    if (!is_punct(ps, c)) {
        char want[2] = {c, 0};
        fail(ps, "expected '%s'", want);
    }
    next(ps);
}

static void expect_word(Parser *ps, const char *w)
{
    if (!is_word(ps, w)) fail(ps, "expected '%s'", w);
    next(ps);
}

static bool accept_punct(Parser *ps, char c)
{
    if (!is_punct(ps, c)) return false;
    next(ps);
    return true;
}

static bool accept_word(Parser *ps, const char *w)
{
    if (!is_word(ps, w)) return false;
    next(ps);
    return true;
}

static const char *ident(Parser *ps, const char *what)
{
    if (ps->tok.kind != T_IDENT) fail(ps, "expected %s", what);
    const char *s = arena_strndup(ps->f->arena, ps->tok.s, (size_t)ps->tok.len);
    next(ps);
    return s;
}

static int64_t integer(Parser *ps, int64_t lo, int64_t hi, const char *what)
{
    if (ps->tok.kind != T_NUM) fail(ps, "expected %s", what);
    char buf[64];
    int n = ps->tok.len < 63 ? ps->tok.len : 63;
    memcpy(buf, ps->tok.s, (size_t)n);
    buf[n] = 0;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (*end || errno) fail(ps, "expected %s (an integer)", what);
    if (v < lo || v > hi) fail(ps, "%s out of range", what);
    next(ps);
    return v;
}

static double real(const Parser *ps, const Tok *t, bool *ok)
{
    char buf[64];
    int n = t->len < 63 ? t->len : 63;
    memcpy(buf, t->s, (size_t)n);
    buf[n] = 0;
    char *end;
    double d = strtod(buf, &end);
    (void)ps;
    *ok = !*end && n > 0;
    return d;
}

/* ---- values ---- */

static void bind(Parser *ps, const Tok *t, ValueId v)
{
    if (t->num >= ps->mapcap) {
        int cap = ps->mapcap ? ps->mapcap : 64;
        while (cap <= t->num) cap *= 2;
        ps->map = xrealloc(ps->map, sizeof *ps->map * (size_t)cap);
        memset(ps->map + ps->mapcap, 0, sizeof *ps->map * (size_t)(cap - ps->mapcap));
        ps->mapcap = cap;
    }
    if (ps->map[t->num]) {
        char num[16];
        snprintf(num, sizeof num, "%d", t->num);
        fail_at(ps, t->line, t->col, "value %%%s is defined twice", num);
    }
    ps->map[t->num] = v;
    if (t->name) ps->f->values[v].name = arena_strndup(ps->f->arena, t->name, (size_t)t->namelen);
}

static Tok value_tok(Parser *ps)
{
    if (ps->tok.kind != T_VALUE) fail(ps, "expected a value (%%N)%s", "");
    Tok t = ps->tok;
    next(ps);
    return t;
}

static ValueId use(Parser *ps)
{
    Tok t = value_tok(ps);
    if (t.num >= ps->mapcap || !ps->map[t.num]) {
        char num[16];
        snprintf(num, sizeof num, "%d", t.num);
        fail_at(ps, t.line, t.col, "value %%%s is used before it is defined", num);
    }
    return ps->map[t.num];
}

typedef VEC(ValueId) ValueVec;
typedef VEC(IrType) TypeVec;
typedef VEC(Tok) TokVec;

static void check_list(Parser *ps, int len)
{
    if (len >= MAX_LIST) fail(ps, "list too long%s", "");
}

/* Zero or more comma-separated uses. */
static void uses(Parser *ps, ValueVec *out)
{
    if (ps->tok.kind != T_VALUE) return;
    do {
        check_list(ps, out->len);
        apush(ps, out, use(ps));
    } while (accept_punct(ps, ','));
}

/* ---- types ---- */

/* A dtype's word, or DT_VOID (nothing consumed). */
static DType accept_dtype(Parser *ps)
{
    DType dt = ps->tok.kind == T_IDENT ? ir_dtype_named(ps->tok.s, (size_t)ps->tok.len) : DT_VOID;
    if (dt != DT_VOID) next(ps);
    return dt;
}

static DType dtype(Parser *ps)
{
    DType dt = accept_dtype(ps);
    if (dt == DT_VOID) fail(ps, "expected a dtype (bool, i32, i64, i8, u8, f16, bf16, f32, f8e4m3, f8e5m2)%s", "");
    return dt;
}

static IrType type(Parser *ps)
{
    DType dt = dtype(ps);
    if (!accept_punct(ps, '[')) return ir_scalar(dt);
    int rows = (int)integer(ps, 1, MAX_DIM, "a tile dimension");
    if (accept_punct(ps, ']')) return ir_tile1(dt, rows);
    expect_punct(ps, ',');
    int cols = (int)integer(ps, 1, MAX_DIM, "a tile dimension");
    expect_punct(ps, ']');
    if ((int64_t)rows * cols > MAX_NUMEL) fail(ps, "tile too large%s", "");
    return ir_tile2(dt, rows, cols);
}

static void types(Parser *ps, TypeVec *out)
{
    do {
        check_list(ps, out->len);
        apush(ps, out, type(ps));
    } while (accept_punct(ps, ','));
}

static Loc opt_loc(Parser *ps)
{
    Loc loc = {0, 0};
    if (accept_punct(ps, '@')) {
        loc.line = (int)integer(ps, 0, INT32_MAX, "a line number");
        expect_punct(ps, ':');
        loc.col = (int)integer(ps, 0, INT32_MAX, "a column number");
    }
    return loc;
}

/* ---- ops ---- */

static int param_ref(Parser *ps)
{
    if (ps->tok.kind == T_NUM) return (int)integer(ps, 0, ps->f->nparams - 1, "a parameter index");
    if (ps->tok.kind != T_IDENT) fail(ps, "expected a parameter name%s", "");
    for (int i = 0; i < ps->f->nparams; i++) {
        const char *n = ps->f->params[i].name;
        if ((int)strlen(n) == ps->tok.len && !memcmp(n, ps->tok.s, (size_t)ps->tok.len)) {
            next(ps);
            return i;
        }
    }
    fail(ps, "unknown parameter%s", "");
}

typedef struct { IrOpKind kind; int sub, flags; } OpName;

static bool find_op(const Tok *t, OpName *out)
{
    char name[32];
    if (t->kind != T_IDENT || t->len >= (int)sizeof name) return false;
    memcpy(name, t->s, (size_t)t->len);
    name[t->len] = 0;
    for (int i = 0; i < UN_COUNT; i++)
        if (!strcmp(name, ir_unop_names[i])) { *out = (OpName){OP_UNARY, i, 0}; return true; }
    for (int i = 0; i < BIN_COUNT; i++)
        if (!strcmp(name, ir_binop_names[i])) { *out = (OpName){OP_BINARY, i, 0}; return true; }
    for (int i = 0; i < CMP_COUNT; i++)
        if (!strcmp(name, ir_cmp_names[i])) { *out = (OpName){OP_CMP, i, 0}; return true; }
    for (int i = 0; i < RED_COUNT; i++)
        if (!strcmp(name, ir_reduce_names[i])) { *out = (OpName){OP_REDUCE, i, 0}; return true; }
    if (!strcmp(name, "dot_t")) { *out = (OpName){OP_DOT, 0, DOT_TRANS_B}; return true; }
    for (int k = 0; k < OP_COUNT; k++)
        if (ir_ops[k].name && !strcmp(name, ir_ops[k].name)) { *out = (OpName){(IrOpKind)k, 0, 0}; return true; }
    return false;
}

static void block(Parser *ps, IrBlock *b);

static void bind_results(Parser *ps, IrOp *op, const TokVec *res)
{
    for (int i = 0; i < res->len; i++) bind(ps, &res->data[i], op->res[i]);
}

static void region(Parser *ps, IrBlock *b)
{
    if (++ps->depth > MAX_DEPTH) fail(ps, "regions nested too deeply%s", "");
    expect_punct(ps, '{');
    block(ps, b);
    expect_punct(ps, '}');
    ps->depth--;
}

/* [iter(%a = %init, ...)]: each carried value's name into carried, its init into args */
static void iter_list(Parser *ps, TokVec *carried, ValueVec *args)
{
    if (!accept_word(ps, "iter")) return;
    expect_punct(ps, '(');
    do {
        check_list(ps, carried->len);
        apush(ps, carried, value_tok(ps));
        expect_punct(ps, '=');
        apush(ps, args, use(ps));
    } while (accept_punct(ps, ','));
    expect_punct(ps, ')');
}

static void for_op(Parser *ps, IrBlock *b, const TokVec *res, Loc at)
{
    IrFunc *f = ps->f;
    Tok iv = value_tok(ps);
    expect_punct(ps, '=');
    ValueVec args = {0};
    TokVec carried = {0};
    TypeVec tys = {0};
    apush(ps, &args, use(ps));
    expect_word(ps, "to");
    apush(ps, &args, use(ps));
    expect_word(ps, "step");
    int64_t step = integer(ps, INT64_MIN, INT64_MAX, "a step");
    iter_list(ps, &carried, &args);
    if (accept_punct(ps, ':')) types(ps, &tys);
    Loc loc = opt_loc(ps);
    if (tys.len != res->len || tys.len != carried.len)
        fail_at(ps, at.line, at.col, "a for needs as many results, iter values and types%s", "");
    IrOp *op = ir_emit(f, b, OP_FOR, args.len, args.data, tys.len, tys.data);
    op->ival = step;
    op->loc = loc;
    bind_results(ps, op, res);
    op->body = ir_block_new(f);
    bind(ps, &iv, ir_block_arg(f, op->body, ir_scalar(DT_I32), NULL));
    for (int i = 0; i < carried.len; i++) bind(ps, &carried.data[i], ir_block_arg(f, op->body, tys.data[i], NULL));
    region(ps, op->body);
}

static void if_op(Parser *ps, IrBlock *b, const TokVec *res, Loc at)
{
    IrFunc *f = ps->f;
    ValueId cond = use(ps);
    TypeVec tys = {0};
    if (accept_punct(ps, ':')) types(ps, &tys);
    Loc loc = opt_loc(ps);
    if (tys.len != res->len) fail_at(ps, at.line, at.col, "an if needs one type per result%s", "");
    IrOp *op = ir_emit(f, b, OP_IF, 1, &cond, tys.len, tys.data);
    op->loc = loc;
    bind_results(ps, op, res);
    op->body = ir_block_new(f);
    region(ps, op->body);
    if (accept_word(ps, "else")) {
        op->els = ir_block_new(f);
        region(ps, op->els);
    }
}

/* while iter(%a = %init, ...) : types { condition } do(%b, ...) { body } */
static void while_op(Parser *ps, IrBlock *b, const TokVec *res, Loc at)
{
    IrFunc *f = ps->f;
    ValueVec args = {0};
    TokVec carried = {0}, after = {0};
    TypeVec tys = {0};
    iter_list(ps, &carried, &args);
    if (accept_punct(ps, ':')) types(ps, &tys);
    Loc loc = opt_loc(ps);
    if (tys.len != res->len || tys.len != carried.len)
        fail_at(ps, at.line, at.col, "a while needs as many results, iter values and types%s", "");
    IrOp *op = ir_emit(f, b, OP_WHILE, args.len, args.data, tys.len, tys.data);
    op->loc = loc;
    bind_results(ps, op, res);
    op->body = ir_block_new(f);
    for (int i = 0; i < carried.len; i++) bind(ps, &carried.data[i], ir_block_arg(f, op->body, tys.data[i], NULL));
    region(ps, op->body);
    expect_word(ps, "do");
    if (accept_punct(ps, '(')) {
        do {
            check_list(ps, after.len);
            apush(ps, &after, value_tok(ps));
        } while (accept_punct(ps, ','));
        expect_punct(ps, ')');
    }
    if (after.len != tys.len) fail_at(ps, at.line, at.col, "a while's body needs one argument per carried value%s", "");
    op->els = ir_block_new(f);
    for (int i = 0; i < after.len; i++) bind(ps, &after.data[i], ir_block_arg(f, op->els, tys.data[i], NULL));
    region(ps, op->els);
}

static int hex_digit(char c) { return is_digit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; }

/* A string token, its escapes decoded, in the function's arena. */
static const char *string(Parser *ps)
{
    if (ps->tok.kind != T_STR) fail(ps, "expected a string%s", "");
    char *out = arena_alloc(ps->f->arena, (size_t)ps->tok.len), *o = out;
    for (const char *q = ps->tok.s + 1; q < ps->tok.s + ps->tok.len - 1; q++) {
        if (*q != '\\') { *o++ = *q; continue; }
        q++;
        if (*q == 'x') {
            int hi = hex_digit(q[1]), lo = hi < 0 ? -1 : hex_digit(q[2]);
            if (lo < 0 || (hi == 0 && lo == 0)) fail(ps, "bad \\x escape in a string%s", "");
            *o++ = (char)(hi * 16 + lo);
            q += 2;
        } else if (*q == '\\' || *q == '"') {
            *o++ = *q;
        } else {
            fail(ps, "unknown escape in a string%s", "");
        }
    }
    *o = 0;
    next(ps);
    return out;
}

static void plain_op(Parser *ps, IrBlock *b, const TokVec *res, OpName on, Loc at)
{
    static const char axes[] = "xyz";
    IrFunc *f = ps->f;
    ValueVec args = {0};
    TypeVec tys = {0};
    Tok number = {0};
    int axis = 0, param = 0, window_axes = 0;
    int64_t ival = 0;
    const char *str = NULL, *file = NULL;
    switch (on.kind) {
    case OP_DEVICE_PRINT:   /* "prefix", values */
        str = string(ps);
        while (accept_punct(ps, ',')) {
            check_list(ps, args.len);
            apush(ps, &args, use(ps));
        }
        break;
    case OP_DEVICE_ASSERT:  /* cond, "message", "file" */
        apush(ps, &args, use(ps));
        expect_punct(ps, ',');
        str = string(ps);
        expect_punct(ps, ',');
        file = string(ps);
        break;
    case OP_CONST:
        number = ps->tok;
        if (number.kind != T_NUM && !(number.kind == T_IDENT && (is_word(ps, "inf") || is_word(ps, "nan"))))
            fail(ps, "expected a number%s", "");
        next(ps);
        break;
    case OP_PARAM:
        param = param_ref(ps);
        break;
    case OP_DIM:
        param = param_ref(ps);
        axis = (int)integer(ps, 0, 1, "an axis (0 or 1)");
        break;
    case OP_BLOCK_ID: case OP_GRID_DIM: {
        const char *a = ps->tok.kind == T_IDENT && ps->tok.len == 1 ? strchr(axes, *ps->tok.s) : NULL;
        if (!a) fail(ps, "expected an axis x, y or z%s", "");
        axis = (int)(a - axes);
        next(ps);
        break;
    }
    case OP_IOTA:
        axis = (int)integer(ps, 0, 1, "an axis (0 or 1)");
        break;
    case OP_REDUCE: case OP_ARGMAX: case OP_ARGMIN: case OP_CUMSUM:
        apush(ps, &args, use(ps));
        expect_punct(ps, ',');
        axis = (int)integer(ps, 0, 1, "an axis (0 or 1)");
        break;
    case OP_LOAD: case OP_STORE: case OP_ATOMIC_ADD: case OP_COPY_ASYNC: case OP_GATHER: case OP_SCATTER: case OP_SCATTER_ADD:
        param = param_ref(ps);
        expect_punct(ps, '[');
        uses(ps, &args);
        expect_punct(ps, ']');
        if (on.kind != OP_LOAD && on.kind != OP_GATHER) {
            expect_punct(ps, ',');
            apush(ps, &args, use(ps));
        }
        if (on.kind == OP_STORE && is_word(ps, "mask")) {
            /* the mask goes before the value, which stays the last operand */
            next(ps);
            ValueId value = args.data[args.len - 1];
            args.data[args.len - 1] = use(ps);
            apush(ps, &args, value);
            on.flags |= STORE_MASKED;
        }
        if (on.kind == OP_ATOMIC_ADD && accept_word(ps, "by_producer")) on.flags |= ADD_BY_PRODUCER;
        if (on.kind == OP_COPY_ASYNC) {
            expect_word(ps, "ring");
            axis = (int)integer(ps, 0, INT32_MAX, "a ring number");
            expect_word(ps, "stages");
            ival = integer(ps, 1, 64, "a stage count from 1 to 64");
        }
        if (accept_word(ps, "axes"))   /* a rank-3/4 window's tile axes (the verifier wants one or two) */
            for (int n = 0; n < IR_MAX_RANK && ps->tok.kind == T_NUM; n++) window_axes |= 1 << (int)integer(ps, 0, IR_MAX_RANK - 1, "a tensor axis (0 to 3)");
        break;
    case OP_COMMIT_ASYNC:
        break;   /* no operands: a value on the next line is the next op's */
    case OP_WAIT_ASYNC: case OP_WAIT_DOTS:
        uses(ps, &args);
        expect_word(ps, "pending");
        ival = integer(ps, 0, 64, "a count of pending groups from 0 to 64");
        if (on.kind == OP_WAIT_ASYNC && accept_word(ps, "once")) on.flags |= WAIT_ONCE;
        break;
    default:
        uses(ps, &args);
        if (on.kind == OP_DOT && accept_word(ps, "issued")) on.flags |= DOT_ISSUED;
        break;
    }
    if (res->len) {
        expect_punct(ps, ':');
        types(ps, &tys);
    }
    Loc loc = opt_loc(ps);
    if (tys.len != res->len) {
        
        fail_at(ps, at.line, at.col, "expected one type per result%s", "");
    }
    IrOp *op = ir_emit(f, b, on.kind, args.len, args.data, tys.len, tys.data);
    
    op->sub = on.sub;
    op->flags = on.flags;
    op->axis = axis;
    op->param = param;
    op->window_axes = window_axes;
    op->loc = loc;
    op->str = str;
    op->file = file;
    if (on.kind == OP_COPY_ASYNC || on.kind == OP_WAIT_ASYNC || on.kind == OP_WAIT_DOTS) op->ival = ival;
    if (on.kind == OP_CONST) {
        DType dt = tys.len ? tys.data[0].dt : DT_I32;
        if (ir_is_float(dt)) {
            bool ok;
            op->fval = real(ps, &number, &ok);
            if (!ok) { fail_at(ps, number.line, number.col, "bad float constant%s", ""); }
        } else {
            char buf[64];
            int n = number.len < 63 ? number.len : 63;
            memcpy(buf, number.s, (size_t)n);
            buf[n] = 0;
            char *end;
            errno = 0;
            long long v = strtoll(buf, &end, 10);
            if (*end || errno || number.kind != T_NUM) {
                
                fail_at(ps, number.line, number.col, "bad integer constant%s", "");
            }
            op->ival = v;
        }
    }
    
    bind_results(ps, op, res);
}

static void op_line(Parser *ps, IrBlock *b)
{
    TokVec res = {0};
    Loc at = {ps->tok.line, ps->tok.col};
    if (ps->tok.kind == T_VALUE) {
        do {
            if (res.len >= MAX_LIST) fail(ps, "too many results%s", "");
            Tok t = ps->tok;
            if (t.kind != T_VALUE) fail(ps, "expected a result value%s", "");
            next(ps);
            apush(ps, &res, t);
        } while (accept_punct(ps, ','));
        if (!is_punct(ps, '=')) fail(ps, "expected '=' after the results%s", "");
        next(ps);
    }
    OpName on;
    if (!find_op(&ps->tok, &on)) fail(ps, "expected an op name%s", "");
    next(ps);
    if (on.kind == OP_FOR) for_op(ps, b, &res, at);
    else if (on.kind == OP_IF) if_op(ps, b, &res, at);
    else if (on.kind == OP_WHILE) while_op(ps, b, &res, at);
    else plain_op(ps, b, &res, on, at);
    
}

static void block(Parser *ps, IrBlock *b)
{
    while (!is_punct(ps, '}') && ps->tok.kind != T_EOF) op_line(ps, b);
}

/* ---- the header ---- */

static void header_lists(Parser *ps)
{
    IrFunc *f = ps->f;
    if (accept_word(ps, "meta")) {
        expect_punct(ps, '(');
        VEC(IrMeta) meta = {0};
        do {
            if (meta.len >= MAX_LIST) fail(ps, "too many meta-parameters%s", "");
            IrMeta mt = {0};
            mt.name = ident(ps, "a meta-parameter name");
            expect_punct(ps, '=');
            mt.value = integer(ps, INT64_MIN, INT64_MAX, "a meta-parameter value");
            apush(ps, &meta, mt);
        } while (accept_punct(ps, ','));
        f->nmeta = meta.len;
        f->meta = arena_alloc(f->arena, sizeof *f->meta * (size_t)meta.len);
        memcpy(f->meta, meta.data, sizeof *f->meta * (size_t)meta.len);
        
        expect_punct(ps, ')');
    }
    if (accept_word(ps, "aligned")) {
        expect_punct(ps, '(');
        VEC(IrAligned) al = {0};
        do {
            if (al.len >= MAX_LIST) fail(ps, "too many aligned promises%s", "");
            IrAligned a = {0};
            a.dim = ident(ps, "a dimension name");
            expect_punct(ps, '=');
            if (ps->tok.kind == T_IDENT) {
                a.meta = ident(ps, "a meta-parameter name");
                expect_punct(ps, ':');
            }
            a.value = integer(ps, INT64_MIN, INT64_MAX, "an alignment");
            apush(ps, &al, a);
        } while (accept_punct(ps, ','));
        f->naligned = al.len;
        f->aligned = arena_alloc(f->arena, sizeof *f->aligned * (size_t)al.len);
        memcpy(f->aligned, al.data, sizeof *f->aligned * (size_t)al.len);
        
        expect_punct(ps, ')');
    }
    expect_word(ps, "params");
    expect_punct(ps, '(');
    VEC(IrParam) params = {0};
    while (!is_punct(ps, ')')) {
        if (params.len && !accept_punct(ps, ',')) fail(ps, "expected ',' or ')'%s", "");
        if (params.len >= MAX_LIST) fail(ps, "too many parameters%s", "");
        IrParam pa = {0};
        if (ps->tok.kind != T_IDENT) fail(ps, "expected a parameter name%s", "");
        pa.name = ident(ps, "a parameter name");
        if (!is_punct(ps, ':')) fail(ps, "expected ':'%s", "");
        next(ps);
        pa.dt = accept_dtype(ps);
        if (pa.dt == DT_VOID) fail(ps, "expected a dtype%s", "");
        if (accept_punct(ps, '[')) {
            pa.is_tensor = true;
            do {
                if (pa.rank == IR_MAX_RANK) fail(ps, "a tensor has at most 4 dimensions%s", "");
                if (ps->tok.kind == T_IDENT) {
                    pa.dim_name[pa.rank] = arena_strndup(f->arena, ps->tok.s, (size_t)ps->tok.len);
                    next(ps);
                } else if (ps->tok.kind == T_NUM) {
                    char buf[32];
                    int n = ps->tok.len < 31 ? ps->tok.len : 31;
                    memcpy(buf, ps->tok.s, (size_t)n);
                    buf[n] = 0;
                    char *end;
                    errno = 0;
                    pa.dim_value[pa.rank] = strtoll(buf, &end, 10);
                    if (*end || errno) fail(ps, "expected a dimension%s", "");
                    next(ps);
                } else {
                    
                    fail(ps, "expected a dimension name or size%s", "");
                }
                pa.rank++;
            } while (accept_punct(ps, ','));
            if (!is_punct(ps, ']')) fail(ps, "expected ']'%s", "");
            next(ps);
            if (accept_word(ps, "restore")) pa.tune_reset = IR_TUNE_RESTORE;
            else if (accept_word(ps, "zero")) pa.tune_reset = IR_TUNE_ZERO;
        } else if (accept_word(ps, "key")) {
            if (!ir_is_int(pa.dt)) fail(ps, "only an integer scalar is a key%s", "");
            pa.tune_key = true;
        }
        apush(ps, &params, pa);
    }
    next(ps);
    f->nparams = params.len;
    f->params = arena_alloc(f->arena, sizeof *f->params * (size_t)params.len);
    if (params.len) memcpy(f->params, params.data, sizeof *f->params * (size_t)params.len);
    
}

static void func(Parser *ps)
{
    Loc at = {ps->tok.line, ps->tok.col};
    expect_word(ps, "func");
    if (ps->tok.kind != T_IDENT) fail(ps, "expected the function's entry name%s", "");
    Tok name = ps->tok;
    next(ps);
    expect_word(ps, "kernel");
    if (ps->tok.kind != T_IDENT) fail(ps, "expected the kernel's name%s", "");
    char kernel[256];
    snprintf(kernel, sizeof kernel, "%.*s", ps->tok.len, ps->tok.s);
    next(ps);
    ps->f = ir_func_new(kernel);
    ps->f->loc = at;
    ps->f->name = arena_strndup(ps->f->arena, name.s, (size_t)name.len);
    expect_word(ps, "threads");
    ps->f->threads = (int)integer(ps, INT32_MIN, INT32_MAX, "a thread count");
    ps->f->tensorcore = accept_word(ps, "tensorcore");
    if (accept_word(ps, "stages")) ps->f->stages = (int)integer(ps, 1, 64, "a stage count from 1 to 64");
    if (accept_word(ps, "producer")) {
        ps->f->producer_threads = (int)integer(ps, IR_PRODUCER_THREADS, IR_PRODUCER_THREADS, "a producer's threads (128)");
        ps->f->turns = accept_word(ps, "turns");
    }
    if (accept_word(ps, "occupancy")) ps->f->occupancy = (int)integer(ps, 1, 8, "a block count from 1 to 8");
    header_lists(ps);
    ps->mapcap = 0;
    free(ps->map);
    ps->map = NULL;
    region(ps, ps->f->body);
    ir_module_add(ps->m, ps->f);
    ps->f = NULL;
}

IrModule *ir_parse(const char *text, char *err, size_t errlen)
{
    /* on the heap: what the callees change must survive the longjmp */
    Parser *ps = xcalloc(1, sizeof *ps);
    ps->p = ps->line_start = text;
    ps->line = 1;
    ps->err = err;
    ps->errlen = errlen;
    ps->m = ir_module_new();
    ps->scratch = arena_new();
    IrModule *m = NULL;
    if (!setjmp(ps->fail)) {
        next(ps);
        while (ps->tok.kind != T_EOF) func(ps);
        m = ps->m;
        ps->m = NULL;
    }
    ir_func_free(ps->f);
    ir_module_free(ps->m);
    free(ps->map);
    arena_free(ps->scratch);
    free(ps);
    return m;
}
