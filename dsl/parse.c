/* parse.c: recursive-descent parser for the Python subset of .ph files,
 * from the token array of lex() to the AST of dsl.h.
 *
 * Errors: the first syntax error of a statement is reported and the
 * statement is marked failed; everything after it on that logical line is
 * skipped (and the indented block, when the line was a compound header),
 * so one run reports the errors of many statements. While a statement is
 * failed no further message is printed for it and every parse function
 * returns at once without consuming, so no loop can spin. Recursion is
 * bounded: expressions and blocks nested deeper than MAX_DEPTH stop with
 * one "nesting too deep". */
#include "dsl.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 200, MAX_PARSE_ERRORS = 200 };

typedef struct {
    const SrcFile *f;
    Diag *d;
    Arena *a;
    Token *t;
    int n, pos;
    int depth;
    bool failed;      /* the current statement had an error */
    bool too_deep;
    int nerrors;
    int nstmts;       /* statements parsed so far in the file */
} Parser;

/* A kernel is unrolled code for one block: a file of more statements than
 * this is refused, so a huge file costs bounded time and memory. */
enum { MAX_STATEMENTS = 100000 };

typedef VEC(Expr *) ExprVec;
typedef VEC(Stmt *) StmtVec;

static Expr *parse_expr(Parser *P);
static Expr *parse_or(Parser *P);
static Expr *parse_factor(Parser *P);
static void parse_stmt(Parser *P, StmtVec *out);

/* ---- tokens ---- */

static Token *peek(Parser *P) { return &P->t[P->pos]; }
static Token *peek2(Parser *P) { return &P->t[P->pos + 1 < P->n ? P->pos + 1 : P->n - 1]; }
static bool at(Parser *P, TokKind k) { return P->t[P->pos].kind == k; }

static Token *advance(Parser *P)
{
    Token *t = &P->t[P->pos];
    if (t->kind != T_EOF) P->pos++;
    return t;
}

static bool accept(Parser *P, TokKind k)
{
    if (!at(P, k)) return false;
    advance(P);
    return true;
}

/* How a token is named in "found ...": a reserved word by its spelling. */
static const char *found_name(Parser *P, Token *t, char *buf, size_t n)
{
    if (t->kind == T_RESERVED || t->kind == T_OTHEREQ) {
        snprintf(buf, n, "'%.*s'", t->len > 20 ? 20 : t->len, t->start);
        return buf;
    }
    (void)P;
    return tok_kind_name(t->kind);
}

/* The first error of a statement is reported; the rest follow from it. */
static void error_at(Parser *P, Loc loc, const char *msg)
{
    if (P->failed || P->nstmts > MAX_STATEMENTS) return;   /* past the limit, the cut-off file says nothing more */
    P->failed = true;
    if (P->nerrors++ < MAX_PARSE_ERRORS) diag_error(P->d, loc, "%s", msg);
    else if (!P->d->nerrors) P->d->nerrors = 1;
}

/* "expected WHAT, found TOKEN" at the current token. */
static void expected(Parser *P, const char *what)
{
    char buf[64], msg[256];
    snprintf(msg, sizeof msg, "expected %s, found %s", what, found_name(P, peek(P), buf, sizeof buf));
    error_at(P, peek(P)->loc, msg);
}

static bool expect(Parser *P, TokKind k, const char *what)
{
    if (P->failed) return false;
    if (accept(P, k)) return true;
    expected(P, what);
    return false;
}

static bool enter(Parser *P)
{
    if (P->depth >= MAX_DEPTH) {
        if (!P->too_deep && !P->failed) {
            P->too_deep = true;
            error_at(P, peek(P)->loc, "nesting too deep");
        }
        P->failed = true;
        return false;
    }
    P->depth++;
    return true;
}

static void leave(Parser *P) { P->depth--; }

/* ---- nodes ---- */

static Expr *new_expr(Parser *P, ExprKind kind, Loc loc)
{
    Expr *e = arena_alloc(P->a, sizeof *e);
    e->kind = kind;
    e->loc = loc;
    return e;
}

/* What a failed parse returns: a harmless node, so callers need no NULL checks. */
static Expr *error_expr(Parser *P) { return new_expr(P, EX_NONE, peek(P)->loc); }

static Expr *new_binary(Parser *P, ExprKind kind, Token *op, Expr *lhs, Expr *rhs)
{
    Expr *e = new_expr(P, kind, op->loc);
    e->op = op->kind;
    e->lhs = lhs;
    e->rhs = rhs;
    return e;
}

static void set_items(Parser *P, Expr *e, ExprVec *v)
{
    e->nitems = v->len;
    if (v->len) {
        e->items = arena_alloc(P->a, sizeof *e->items * (size_t)v->len);
        memcpy(e->items, v->data, sizeof *e->items * (size_t)v->len);
    }
    free(v->data);
    *v = (ExprVec){0};
}

static Stmt **stmt_array(Parser *P, StmtVec *v, int *n)
{
    Stmt **out = NULL;
    *n = v->len;
    if (v->len) {
        out = arena_alloc(P->a, sizeof *out * (size_t)v->len);
        memcpy(out, v->data, sizeof *out * (size_t)v->len);
    }
    free(v->data);
    *v = (StmtVec){0};
    return out;
}

/* ---- expressions ---- */

/* Adjacent string literals are one string, as in Python. */
static Expr *parse_strings(Parser *P)
{
    Expr *e = new_expr(P, EX_STRING, peek(P)->loc);
    size_t len = 0;
    int first = P->pos;
    for (int i = first; i < P->n && P->t[i].kind == T_STRING; i++) len += strlen(P->t[i].str);
    char *s = arena_alloc(P->a, len + 1), *w = s;
    while (at(P, T_STRING)) {
        const char *part = advance(P)->str;
        size_t n = strlen(part);
        memcpy(w, part, n);
        w += n;
    }
    *w = 0;
    e->name = s;
    return e;
}

/* The items of ( ... ) or [ ... ] up to close; *comma says whether a comma appeared. */
static void parse_items(Parser *P, ExprVec *v, TokKind close, bool *comma)
{
    *comma = false;
    while (!P->failed && !at(P, close)) {
        vec_push(v, parse_expr(P));
        if (!accept(P, T_COMMA)) break;
        *comma = true;
    }
}

static Expr *parse_paren(Parser *P)
{
    Token *open = advance(P);
    if (accept(P, T_RPAREN)) return new_expr(P, EX_TUPLE, open->loc);
    ExprVec v = {0};
    bool comma;
    parse_items(P, &v, T_RPAREN, &comma);
    expect(P, T_RPAREN, "')'");
    if (!comma && v.len == 1) {
        Expr *e = v.data[0];
        free(v.data);
        return e;
    }
    Expr *e = new_expr(P, EX_TUPLE, open->loc);
    set_items(P, e, &v);
    return e;
}

static Expr *parse_atom(Parser *P)
{
    Token *t = peek(P);
    Expr *e;
    switch (t->kind) {
    case T_NAME:
        advance(P);
        e = new_expr(P, EX_NAME, t->loc);
        e->name = arena_strndup(P->a, t->start, (size_t)t->len);
        return e;
    case T_INT: case T_FLOAT:
        advance(P);
        e = new_expr(P, t->kind == T_INT ? EX_INT : EX_FLOAT, t->loc);
        if (t->kind == T_INT) e->ival = t->ival;   /* the token holds one of the two */
        else e->fval = t->fval;
        e->overflow = t->overflow;
        return e;
    case T_STRING:
        return parse_strings(P);
    case T_TRUE: case T_FALSE:
        advance(P);
        e = new_expr(P, EX_BOOL, t->loc);
        e->ival = t->kind == T_TRUE;
        return e;
    case T_NONE:
        advance(P);
        return new_expr(P, EX_NONE, t->loc);
    case T_LPAREN:
        return parse_paren(P);
    case T_LBRACKET: {
        advance(P);
        ExprVec v = {0};
        bool comma;
        parse_items(P, &v, T_RBRACKET, &comma);
        expect(P, T_RBRACKET, "']'");
        e = new_expr(P, EX_LIST, t->loc);
        set_items(P, e, &v);
        return e;
    }
    default:
        expected(P, "an expression");
        return error_expr(P);
    }
}

static Expr *parse_call(Parser *P, Expr *fn, Loc loc)
{
    advance(P);
    Expr *e = new_expr(P, EX_CALL, loc);
    e->lhs = fn;
    ExprVec v = {0};
    bool keywords = false;
    while (!P->failed && !at(P, T_RPAREN)) {
        if (at(P, T_NAME) && peek2(P)->kind == T_ASSIGN) {
            Token *name = advance(P);
            advance(P);
            Expr *kw = new_expr(P, EX_KEYWORD, name->loc);
            kw->name = arena_strndup(P->a, name->start, (size_t)name->len);
            kw->lhs = parse_expr(P);
            vec_push(&v, kw);
            keywords = true;
        } else {
            Loc arg = peek(P)->loc;
            vec_push(&v, parse_expr(P));
            if (keywords) error_at(P, arg, "positional argument follows keyword argument");
        }
        if (!accept(P, T_COMMA)) break;
    }
    expect(P, T_RPAREN, "')' to close the call");
    set_items(P, e, &v);
    return e;
}

/* One subscript item: an expression, or a slice [lo]:[hi]. */
static Expr *parse_subscript_item(Parser *P)
{
    Loc loc = peek(P)->loc;
    Expr *lo = at(P, T_COLON) ? NULL : parse_expr(P);
    if (P->failed || !at(P, T_COLON)) return lo;
    advance(P);
    Expr *e = new_expr(P, EX_SLICE, loc);
    e->lhs = lo;
    if (!at(P, T_COMMA) && !at(P, T_RBRACKET) && !at(P, T_COLON)) e->rhs = parse_expr(P);
    if (at(P, T_COLON)) error_at(P, peek(P)->loc, "slice steps are not supported");
    return e;
}

static Expr *parse_subscript(Parser *P, Expr *base, Loc loc)
{
    advance(P);
    Expr *e = new_expr(P, EX_INDEX, loc);
    e->lhs = base;
    ExprVec v = {0};
    while (!P->failed) {
        vec_push(&v, parse_subscript_item(P));
        if (!accept(P, T_COMMA) || at(P, T_RBRACKET)) break;
    }
    expect(P, T_RBRACKET, "']' to close the subscript");
    set_items(P, e, &v);
    return e;
}

/* atom ( .NAME | (args) | [items] )*; every node takes the atom's location. */
static Expr *parse_primary(Parser *P)
{
    Loc loc = peek(P)->loc;
    Expr *e = parse_atom(P);
    while (!P->failed) {
        if (at(P, T_DOT)) {
            advance(P);
            Token *name = peek(P);
            if (!expect(P, T_NAME, "an attribute name after '.'")) break;
            Expr *attr = new_expr(P, EX_ATTR, loc);
            attr->lhs = e;
            attr->name = arena_strndup(P->a, name->start, (size_t)name->len);
            e = attr;
        } else if (at(P, T_LPAREN)) {
            e = parse_call(P, e, loc);
        } else if (at(P, T_LBRACKET)) {
            e = parse_subscript(P, e, loc);
        } else {
            break;
        }
    }
    return e;
}

/* power: primary ['**' factor]; right-associative, and tighter than a
 * unary operator on its left (-2**2 is -(2**2)). */
static Expr *parse_power(Parser *P)
{
    Expr *e = parse_primary(P);
    if (P->failed || !at(P, T_DSTAR)) return e;
    if (!enter(P)) return error_expr(P);
    Token *op = advance(P);
    e = new_binary(P, EX_BINARY, op, e, parse_factor(P));
    leave(P);
    return e;
}

static Expr *parse_factor(Parser *P)
{
    TokKind k = peek(P)->kind;
    if (k != T_MINUS && k != T_PLUS && k != T_TILDE) return parse_power(P);
    if (!enter(P)) return error_expr(P);
    Token *op = advance(P);
    Expr *e = new_expr(P, EX_UNARY, op->loc);
    e->op = op->kind;
    e->lhs = parse_factor(P);
    leave(P);
    return e;
}

/* The left-associative binary levels, loosest first after comparisons. */
static const TokKind level_ops[][6] = {
    {T_PIPE}, {T_CARET}, {T_AMP}, {T_SHL, T_SHR}, {T_PLUS, T_MINUS},
    {T_STAR, T_SLASH, T_DSLASH, T_PERCENT, T_AT},
};
enum { NLEVELS = sizeof level_ops / sizeof level_ops[0] };

static bool level_has(int level, TokKind k)
{
    for (int i = 0; i < 6 && level_ops[level][i]; i++)
        if (level_ops[level][i] == k) return true;
    return false;
}

static Expr *parse_level(Parser *P, int level)
{
    if (level == NLEVELS) return parse_factor(P);
    Expr *e = parse_level(P, level + 1);
    while (!P->failed && level_has(level, peek(P)->kind)) {
        Token *op = advance(P);
        e = new_binary(P, EX_BINARY, op, e, parse_level(P, level + 1));
    }
    return e;
}

static bool is_compare(TokKind k) { return k >= T_EQ && k <= T_GE; }

static Expr *parse_comparison(Parser *P)
{
    Expr *e = parse_level(P, 0);
    if (P->failed || !is_compare(peek(P)->kind)) return e;
    Token *op = advance(P);
    e = new_binary(P, EX_COMPARE, op, e, parse_level(P, 0));
    if (!P->failed && is_compare(peek(P)->kind))
        error_at(P, peek(P)->loc, "chained comparisons are not supported");
    return e;
}

static Expr *parse_not(Parser *P)
{
    if (!at(P, T_NOT)) return parse_comparison(P);
    if (!enter(P)) return error_expr(P);
    Token *op = advance(P);
    Expr *e = new_expr(P, EX_UNARY, op->loc);
    e->op = T_NOT;
    e->lhs = parse_not(P);
    leave(P);
    return e;
}

static Expr *parse_and(Parser *P)
{
    Expr *e = parse_not(P);
    while (!P->failed && at(P, T_AND)) {
        Token *op = advance(P);
        e = new_binary(P, EX_BINARY, op, e, parse_not(P));
    }
    return e;
}

static Expr *parse_or(Parser *P)
{
    Expr *e = parse_and(P);
    while (!P->failed && at(P, T_OR)) {
        Token *op = advance(P);
        e = new_binary(P, EX_BINARY, op, e, parse_and(P));
    }
    return e;
}

static Expr *parse_expr(Parser *P)
{
    if (P->failed) return error_expr(P);
    if (!enter(P)) return error_expr(P);
    Expr *e = parse_or(P);
    leave(P);
    return e;
}

static bool ends_exprlist(TokKind k)
{
    return k == T_NEWLINE || k == T_SEMI || k == T_EOF || k == T_ASSIGN || k == T_COLON ||
           (k >= T_PLUSEQ && k <= T_OTHEREQ) || k == T_RPAREN || k == T_RBRACKET;
}

/* expr (',' expr)* [','], a tuple when there is a comma: `return a, b`. */
static Expr *parse_exprlist(Parser *P)
{
    Loc loc = peek(P)->loc;
    Expr *e = parse_expr(P);
    if (P->failed || !at(P, T_COMMA)) return e;
    ExprVec v = {0};
    vec_push(&v, e);
    while (accept(P, T_COMMA) && !ends_exprlist(peek(P)->kind) && !P->failed) vec_push(&v, parse_expr(P));
    Expr *t = new_expr(P, EX_TUPLE, loc);
    set_items(P, t, &v);
    return t;
}

/* ---- statements ---- */

static Stmt *new_stmt(Parser *P, StmtKind kind, Loc loc)
{
    if (++P->nstmts == MAX_STATEMENTS + 1) {
        diag_error(P->d, loc, "more than %d statements in this file; phc compiles at most %d", MAX_STATEMENTS, MAX_STATEMENTS);
        P->nerrors++;
        P->pos = P->n - 1;   /* the rest of the file is not parsed: EOF */
    }
    Stmt *s = arena_alloc(P->a, sizeof *s);
    s->kind = kind;
    s->loc = loc;
    return s;
}

/* Skips the indented block at the current INDENT without recursion. */
static void skip_block(Parser *P)
{
    int level = 0;
    do {
        if (at(P, T_INDENT)) level++;
        else if (at(P, T_DEDENT)) level--;
        else if (at(P, T_EOF)) return;
        advance(P);
    } while (level > 0);
}

/* After an error: skip the rest of the logical line and, when the line
 * opened a block, the block. Stops before a DEDENT so blocks stay paired. */
static void recover(Parser *P)
{
    while (!at(P, T_NEWLINE) && !at(P, T_EOF) && !at(P, T_INDENT) && !at(P, T_DEDENT)) advance(P);
    accept(P, T_NEWLINE);
    if (at(P, T_INDENT)) skip_block(P);
    P->failed = false;
}

static const char *target_problem(const Expr *e)
{
    switch (e->kind) {
    case EX_NAME: case EX_INDEX: return NULL;
    case EX_INT: case EX_FLOAT: case EX_STRING: case EX_BOOL: case EX_NONE: return "cannot assign to a literal";
    case EX_ATTR: return "cannot assign to an attribute";
    case EX_CALL: return "cannot assign to a function call";
    case EX_TUPLE: return "cannot assign to a tuple";
    case EX_LIST: return "cannot assign to a list";
    case EX_COMPARE: return "cannot assign to a comparison";
    default: return "cannot assign to an expression";
    }
}

static void check_target(Parser *P, Expr *e)
{
    const char *problem = target_problem(e);
    if (problem) error_at(P, e->loc, problem);
}

/* Assignments, declarations and expression statements. */
static Stmt *parse_expr_stmt(Parser *P)
{
    Loc loc = peek(P)->loc;
    Expr *e = parse_exprlist(P);
    if (P->failed) return NULL;
    TokKind k = peek(P)->kind;
    Stmt *s;
    if (k == T_COLON) {
        advance(P);
        if (e->kind != EX_NAME) error_at(P, e->loc, "only a name can be declared with an annotation");
        s = new_stmt(P, ST_DECL, loc);
        s->target = e;
        s->annot = parse_expr(P);
        if (accept(P, T_ASSIGN)) s->value = parse_exprlist(P);
    } else if (k == T_ASSIGN) {
        advance(P);
        check_target(P, e);
        s = new_stmt(P, ST_ASSIGN, loc);
        s->target = e;
        s->value = parse_exprlist(P);
        if (!P->failed && at(P, T_ASSIGN)) error_at(P, peek(P)->loc, "chained assignment is not supported");
    } else if (k >= T_PLUSEQ && k <= T_OTHEREQ) {
        advance(P);
        check_target(P, e);
        s = new_stmt(P, ST_AUGASSIGN, loc);
        s->op = k;
        s->target = e;
        s->value = parse_exprlist(P);
    } else {
        s = new_stmt(P, ST_EXPR, loc);
        s->value = e;
    }
    return P->failed ? NULL : s;
}

static Stmt *parse_small_stmt(Parser *P)
{
    Token *t = peek(P);
    char msg[128];
    switch (t->kind) {
    case T_PASS:
        advance(P);
        return new_stmt(P, ST_PASS, t->loc);
    case T_RETURN: {
        advance(P);
        Stmt *s = new_stmt(P, ST_RETURN, t->loc);
        if (!at(P, T_NEWLINE) && !at(P, T_SEMI) && !at(P, T_EOF)) s->value = parse_exprlist(P);
        return s;
    }
    case T_RESERVED:
        snprintf(msg, sizeof msg, "'%.*s' is not supported in Phobos", t->len > 20 ? 20 : t->len, t->start);
        error_at(P, t->loc, msg);
        return NULL;
    case T_IMPORT: case T_FROM:
        error_at(P, t->loc, "imports are only allowed at the top level of a file");
        return NULL;
    case T_DEF: case T_AT:
        error_at(P, t->loc, "a 'def' is only allowed at the top level of a file");
        return NULL;
    case T_ELIF: case T_ELSE:
        snprintf(msg, sizeof msg, "'%s' without a matching 'if'", t->kind == T_ELIF ? "elif" : "else");
        error_at(P, t->loc, msg);
        return NULL;
    case T_INDENT:
        error_at(P, t->loc, "unexpected indent");
        return NULL;
    default:
        return parse_expr_stmt(P);
    }
}

/* small_stmt (';' small_stmt)* [';'] NEWLINE */
static void parse_simple_stmts(Parser *P, StmtVec *out)
{
    do {
        if (at(P, T_NEWLINE)) break;
        Stmt *s = parse_small_stmt(P);
        if (s && !P->failed) vec_push(out, s);
    } while (!P->failed && accept(P, T_SEMI));
    if (!P->failed && !at(P, T_EOF)) expect(P, T_NEWLINE, "the end of the line");
}

/* suite: simple statements on the header's line, or NEWLINE INDENT stmt+ DEDENT. */
static Stmt **parse_suite(Parser *P, const char *after, int *n)
{
    StmtVec v = {0};
    *n = 0;
    char what[96];
    snprintf(what, sizeof what, "':' after %s", after);
    if (!expect(P, T_COLON, what)) return NULL;
    if (!at(P, T_NEWLINE)) {
        parse_simple_stmts(P, &v);
        return stmt_array(P, &v, n);
    }
    advance(P);
    snprintf(what, sizeof what, "an indented block after %s", after);
    if (!expect(P, T_INDENT, what)) return NULL;
    if (!enter(P)) {
        /* Too deep: the block is skipped whole; the error is the header's. */
        P->pos--;
        return NULL;
    }
    while (!at(P, T_DEDENT) && !at(P, T_EOF)) {
        int before = P->pos;
        parse_stmt(P, &v);
        if (P->pos == before) advance(P);
    }
    accept(P, T_DEDENT);
    leave(P);
    return stmt_array(P, &v, n);
}

static Stmt *parse_for(Parser *P)
{
    Stmt *s = new_stmt(P, ST_FOR, advance(P)->loc);
    Token *name = peek(P);
    if (!expect(P, T_NAME, "a loop variable name after 'for'")) return NULL;
    s->target = new_expr(P, EX_NAME, name->loc);
    s->target->name = arena_strndup(P->a, name->start, (size_t)name->len);
    if (!expect(P, T_IN, "'in' after the loop variable")) return NULL;
    s->value = parse_exprlist(P);
    if (P->failed) return NULL;
    s->body = parse_suite(P, "the for header", &s->nbody);
    return P->failed ? NULL : s;
}

/* if/elif chains loop instead of recursing: each elif is an ST_IF alone
 * in the orelse of the one before. */
static Stmt *parse_if(Parser *P)
{
    Stmt *first = NULL, *prev = NULL;
    const char *header = "the if condition";
    do {
        Stmt *s = new_stmt(P, ST_IF, advance(P)->loc);
        s->value = parse_expr(P);
        if (P->failed) return NULL;
        s->body = parse_suite(P, header, &s->nbody);
        if (P->failed) return NULL;
        if (prev) {
            prev->norelse = 1;
            prev->orelse = arena_alloc(P->a, sizeof *prev->orelse);
            prev->orelse[0] = s;
        } else {
            first = s;
        }
        prev = s;
        header = "the elif condition";
    } while (at(P, T_ELIF));
    if (accept(P, T_ELSE)) {
        prev->orelse = parse_suite(P, "'else'", &prev->norelse);
        if (P->failed) return NULL;
    }
    return first;
}

/* One statement (several when ';' separates them) appended to out; after
 * an error, recovers at the next statement. */
static void parse_stmt(Parser *P, StmtVec *out)
{
    Stmt *s = NULL;
    if (at(P, T_FOR)) {
        s = parse_for(P);
        if (s) vec_push(out, s);
    } else if (at(P, T_IF)) {
        s = parse_if(P);
        if (s) vec_push(out, s);
    } else if (at(P, T_WHILE)) {   /* while value: body (no else) */
        s = new_stmt(P, ST_WHILE, advance(P)->loc);
        s->value = parse_expr(P);
        if (!P->failed) s->body = parse_suite(P, "the while condition", &s->nbody);
        if (!P->failed) vec_push(out, s);
    } else {
        parse_simple_stmts(P, out);
    }
    if (P->failed) recover(P);
}

/* ---- the top level ---- */

static Top *new_top(Parser *P, TopKind kind, Loc loc)
{
    Top *t = arena_alloc(P->a, sizeof *t);
    t->kind = kind;
    t->loc = loc;
    return t;
}

/* NAME ('.' NAME)*, as one string. */
static const char *parse_dotted_name(Parser *P)
{
    if (!at(P, T_NAME)) {
        expected(P, "a module name");
        return NULL;
    }
    const char *start = peek(P)->start, *end = start;
    for (;;) {
        Token *t = advance(P);
        end = t->start + t->len;
        if (!at(P, T_DOT) || peek2(P)->kind != T_NAME) break;
        advance(P);
    }
    if (at(P, T_DOT)) {
        advance(P);
        expected(P, "a name after '.'");
        return NULL;
    }
    return arena_strndup(P->a, start, (size_t)(end - start));
}

static const char *parse_alias(Parser *P)
{
    if (!accept(P, T_AS)) return NULL;
    Token *t = peek(P);
    if (!expect(P, T_NAME, "a name after 'as'")) return NULL;
    return arena_strndup(P->a, t->start, (size_t)t->len);
}

typedef VEC(Top *) TopVec;

/* import a.b [as c] (, ...)* and from a.b import c [as d] (, ...)*: one
 * Top per imported name. */
static void parse_import(Parser *P, TopVec *out)
{
    Token *kw = advance(P);
    if (kw->kind == T_IMPORT) {
        do {
            Top *t = new_top(P, TOP_IMPORT, kw->loc);
            t->module = parse_dotted_name(P);
            t->alias = parse_alias(P);
            if (!P->failed) vec_push(out, t);
        } while (!P->failed && accept(P, T_COMMA));
    } else {
        const char *module = parse_dotted_name(P);
        expect(P, T_IMPORT, "'import' after the module name");
        bool paren = !P->failed && accept(P, T_LPAREN);
        while (!P->failed) {
            Top *t = new_top(P, TOP_FROM_IMPORT, kw->loc);
            t->module = module;
            Token *name = peek(P);
            if (!expect(P, T_NAME, "a name to import")) break;
            t->name = arena_strndup(P->a, name->start, (size_t)name->len);
            t->alias = parse_alias(P);
            if (!P->failed) vec_push(out, t);
            if (!accept(P, T_COMMA) || (paren && at(P, T_RPAREN))) break;
        }
        if (paren) expect(P, T_RPAREN, "')' to close the import list");
    }
    if (!P->failed && !at(P, T_EOF)) expect(P, T_NEWLINE, "the end of the line");
}

static bool parse_params(Parser *P, FuncDef *fn)
{
    VEC(Param) v = {0};
    while (!P->failed && !at(P, T_RPAREN)) {
        Token *name = peek(P);
        if (!expect(P, T_NAME, "a parameter name")) break;
        Param p = {arena_strndup(P->a, name->start, (size_t)name->len), name->loc, NULL, NULL};
        if (accept(P, T_COLON)) p.annot = parse_expr(P);
        if (!P->failed && accept(P, T_ASSIGN)) p.dflt = parse_expr(P);
        vec_push(&v, p);
        if (!accept(P, T_COMMA)) break;
    }
    fn->nparams = v.len;
    if (v.len) {
        fn->params = arena_alloc(P->a, sizeof *fn->params * (size_t)v.len);
        memcpy(fn->params, v.data, sizeof *fn->params * (size_t)v.len);
    }
    free(v.data);
    return expect(P, T_RPAREN, "')' to close the parameters");
}

/* ('@' expr NEWLINE)* 'def' NAME '(' params ')' ['->' expr] ':' suite */
static FuncDef *parse_def(Parser *P)
{
    FuncDef *fn = arena_alloc(P->a, sizeof *fn);
    ExprVec decorators = {0};
    while (!P->failed && accept(P, T_AT)) {
        vec_push(&decorators, parse_expr(P));
        expect(P, T_NEWLINE, "the end of the line after a decorator");
    }
    fn->ndecorators = decorators.len;
    if (decorators.len) {
        fn->decorators = arena_alloc(P->a, sizeof *fn->decorators * (size_t)decorators.len);
        memcpy(fn->decorators, decorators.data, sizeof *fn->decorators * (size_t)decorators.len);
    }
    free(decorators.data);
    if (!expect(P, T_DEF, "'def' after the decorators")) return NULL;
    Token *name = peek(P);
    if (!expect(P, T_NAME, "a function name after 'def'")) return NULL;
    fn->name = arena_strndup(P->a, name->start, (size_t)name->len);
    fn->loc = name->loc;
    if (!expect(P, T_LPAREN, "'(' after the function name")) return NULL;
    if (!parse_params(P, fn)) return NULL;
    if (accept(P, T_ARROW)) fn->returns = parse_expr(P);
    if (P->failed) return NULL;
    fn->body = parse_suite(P, "the def header", &fn->nbody);
    return P->failed ? NULL : fn;
}

static void parse_top(Parser *P, TopVec *out)
{
    Token *t = peek(P);
    switch (t->kind) {
    case T_FROM: case T_IMPORT:
        parse_import(P, out);
        break;
    case T_AT: case T_DEF: {
        FuncDef *fn = parse_def(P);
        if (fn) {
            Top *top = new_top(P, TOP_DEF, t->loc);
            top->def = fn;
            vec_push(out, top);
        }
        break;
    }
    case T_NEWLINE: case T_DEDENT:
        advance(P);   /* stray: nothing to parse */
        return;
    case T_INDENT:
        error_at(P, t->loc, "unexpected indent");
        break;
    default: {
        StmtVec v = {0};
        parse_stmt(P, &v);
        for (int i = 0; i < v.len; i++) {
            Top *top = new_top(P, TOP_STMT, v.data[i]->loc);
            top->stmt = v.data[i];
            vec_push(out, top);
        }
        free(v.data);
    }
    }
    if (P->failed) recover(P);
}

/* The first statement, when it is a string alone, is the docstring. */
static const char *take_docstring(TopVec *items)
{
    if (!items->len || items->data[0]->kind != TOP_STMT) return NULL;
    Stmt *s = items->data[0]->stmt;
    if (s->kind != ST_EXPR || s->value->kind != EX_STRING) return NULL;
    memmove(items->data, items->data + 1, sizeof *items->data * (size_t)(items->len - 1));
    items->len--;
    return s->value->name;
}

Module *parse(const SrcFile *f, Diag *d, Arena *a)
{
    Parser P = {.f = f, .d = d, .a = a};
    P.t = lex(f, d, a, &P.n);
    Module *m = arena_alloc(a, sizeof *m);
    m->file = f;
    TopVec items = {0};
    bool first = true;
    while (!at(&P, T_EOF)) {
        int before = P.pos;
        parse_top(&P, &items);
        if (first) m->docstring = take_docstring(&items);
        first = false;
        if (P.pos == before) advance(&P);
    }
    m->nitems = items.len;
    if (items.len) {
        m->items = arena_alloc(a, sizeof *m->items * (size_t)items.len);
        memcpy(m->items, items.data, sizeof *m->items * (size_t)items.len);
    }
    free(items.data);
    return m;
}
