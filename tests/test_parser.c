/* test_parser.c: the parser, through the AST printer: the shape of every
 * construct, operator precedence, every syntax error with its golden
 * message, recovery, deep nesting, and the attention tutorial. */
#include <criterion/criterion.h>
#include "testutil.h"

typedef struct {
    SrcFile f;
    Diag d;
    Arena *a;
    Module *m;
    char *ast, *diags;
} Parsed;

static void parse_text(Parsed *p, const char *text)
{
    memset(p, 0, sizeof *p);
    src_from_string(&p->f, "t.ph", text);
    size_t dlen = 0, alen = 0;
    FILE *out = open_memstream(&p->diags, &dlen);
    diag_init(&p->d, &p->f, out);
    p->a = arena_new();
    p->m = parse(&p->f, &p->d, p->a);
    fclose(out);
    FILE *ast = open_memstream(&p->ast, &alen);
    ast_print(ast, p->m);
    fclose(ast);
}

static void parsed_free(Parsed *p)
{
    arena_free(p->a);
    diag_free(&p->d);
    src_free(&p->f);
    free(p->ast);
    free(p->diags);
}

/* The printed AST of text, without errors, must be want (module line excluded). */
static void assert_ast(const char *text, const char *want)
{
    Parsed p;
    parse_text(&p, text);
    cr_assert_eq(p.d.nerrors, 0, "%s: %s", text, p.diags);
    const char *body = strchr(p.ast, '\n');
    cr_assert_str_eq(body ? body + 1 : "", want, "parsing:\n%s\ngot:\n%s", text, p.ast);
    parsed_free(&p);
}

/* The one expression statement of text, printed. */
static void assert_expr(const char *text, const char *want)
{
    Parsed p;
    parse_text(&p, text);
    cr_assert_eq(p.d.nerrors, 0, "%s: %s", text, p.diags);
    cr_assert_eq(p.m->nitems, 1, "%s", text);
    cr_assert_eq(p.m->items[0]->kind, TOP_STMT);
    cr_assert_eq(p.m->items[0]->stmt->kind, ST_EXPR);
    char *buf = NULL;
    size_t len = 0;
    const char *open = strstr(p.ast, "(expr ");
    cr_assert(open);
    const char *e = strchr(open + 6, ' ');   /* after the location */
    buf = strdup(e + 1);
    len = strlen(buf);
    cr_assert(len >= 3);
    buf[len - 3] = 0;   /* drop ")" of the statement, ")" of the module, "\n" */
    cr_assert_str_eq(buf, want, "parsing %s", text);
    free(buf);
    parsed_free(&p);
}

/* The diagnostics of text, message lines only, joined by '\n'. */
static char *error_lines(const char *text, int *nerrors)
{
    Parsed p;
    parse_text(&p, text);
    char *out = calloc(1, strlen(p.diags) + 1), *w = out;
    for (char *line = strtok(p.diags, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "t.ph:", 5)) continue;
        w += sprintf(w, "%s%s", w == out ? "" : "\n", line);
    }
    if (nerrors) *nerrors = p.d.nerrors;
    parsed_free(&p);
    return out;
}

static void assert_errors(const char *text, const char *want)
{
    int n;
    char *got = error_lines(text, &n);
    cr_assert_str_eq(got, want, "parsing:\n%s", text);
    cr_assert_gt(n, 0);
    free(got);
}

/* ---- the top level ---- */

Test(parser, docstring_and_imports)
{
    assert_ast("\"\"\"Doc\nstring.\"\"\"\nfrom __future__ import annotations\nimport phobos.lang as ph\nimport a.b.c, d\n"
               "from x.y import p as q, r\n",
               "  (docstring \"Doc\\nstring.\")\n"
               "  (from-import __future__ annotations 3:1)\n"
               "  (import phobos.lang as ph 4:1)\n"
               "  (import a.b.c 5:1)\n"
               "  (import d 5:1)\n"
               "  (from-import x.y p as q 6:1)\n"
               "  (from-import x.y r 6:1))\n");
    Parsed p;
    parse_text(&p, "'doc' 'string'\nx = 1\n");
    cr_assert_str_eq(p.m->docstring, "docstring");
    cr_assert_eq(p.m->nitems, 1);
    parsed_free(&p);
    parse_text(&p, "x = 1\n'not a docstring'\n");
    cr_assert_null(p.m->docstring);
    cr_assert_eq(p.m->nitems, 2);
    cr_assert_eq(p.m->items[1]->kind, TOP_STMT);
    parsed_free(&p);
}

Test(parser, decorated_def)
{
    assert_ast("@ph.kernel\n@ph.autotune(D=[64], BR=[32, 64])\ndef f(X: ph.tensor[ph.f16][R, D], n: ph.i32, k=2,) -> None:\n    pass\n",
               "  (def f 3:5\n"
               "    (decorator 1:2 (attr (name ph) kernel))\n"
               "    (decorator 2:2 (call (attr (name ph) autotune) (kw D (list (int 64))) (kw BR (list (int 32) (int 64)))))\n"
               "    (param X 3:7 (index (index (attr (name ph) tensor) (attr (name ph) f16)) (name R) (name D)))\n"
               "    (param n 3:35 (attr (name ph) i32))\n"
               "    (param k 3:46 _ (default (int 2)))\n"
               "    (returns (none))\n"
               "    (pass 4:5)))\n");
    /* the autotuner's decorators are calls with string arguments, as any decorator may be */
    assert_ast("@ph.kernel\n@ph.autotune_restore(\"DQ\")\n@ph.autotune_zero(\"DK\", \"DV\")\ndef f():\n    pass\n",
               "  (def f 4:5\n"
               "    (decorator 1:2 (attr (name ph) kernel))\n"
               "    (decorator 2:2 (call (attr (name ph) autotune_restore) (str \"DQ\")))\n"
               "    (decorator 3:2 (call (attr (name ph) autotune_zero) (str \"DK\") (str \"DV\")))\n"
               "    (pass 5:5)))\n");
    Parsed p;
    parse_text(&p, "def g(): return\n");
    cr_assert_eq(p.d.nerrors, 0);
    cr_assert_eq(p.m->items[0]->kind, TOP_DEF);
    FuncDef *fn = p.m->items[0]->def;
    cr_assert_str_eq(fn->name, "g");
    cr_assert_eq(fn->nparams, 0);
    cr_assert_eq(fn->ndecorators, 0);
    cr_assert_eq(fn->nbody, 1);
    cr_assert_eq(fn->body[0]->kind, ST_RETURN);
    cr_assert_null(fn->body[0]->value);
    parsed_free(&p);
}

/* ---- statements ---- */

Test(parser, assignments_and_declarations)
{
    assert_ast("def f():\n    x: ph.let = 1\n    y: ph.i32\n    x = 2\n    X[i, 0:+4] = v\n    a += 1; a -= 2; a *= 3; a /= 4; a //= 5\n    g(x)\n",
               "  (def f 1:5\n"
               "    (decl 2:5 (name x) (attr (name ph) let) (int 1))\n"
               "    (decl 3:5 (name y) (attr (name ph) i32))\n"
               "    (assign 4:5 (name x) (int 2))\n"
               "    (assign 5:5 (index (name X) (name i) (slice (int 0) (unary + (int 4)))) (name v))\n"
               "    (augassign += 6:5 (name a) (int 1))\n"
               "    (augassign -= 6:13 (name a) (int 2))\n"
               "    (augassign *= 6:21 (name a) (int 3))\n"
               "    (augassign /= 6:29 (name a) (int 4))\n"
               "    (augassign op= 6:37 (name a) (int 5))\n"
               "    (expr 7:5 (call (name g) (name x)))))\n");
}

Test(parser, for_and_return)
{
    assert_ast("for i in range(0, n, 2):\n    pass\n    return i, j\nfor j in r: return\n",
               "  (for 1:1 (name i) (call (name range) (int 0) (name n) (int 2))\n"
               "    (pass 2:5)\n"
               "    (return 3:5 (tuple (name i) (name j))))\n"
               "  (for 4:1 (name j) (name r)\n"
               "    (return 4:13)))\n");
}

Test(parser, while_loops)
{
    assert_ast("while n < P[i]:\n    n += 1\nwhile a: pass\n",
               "  (while 1:1 (compare < (name n) (index (name P) (name i)))\n"
               "    (augassign += 2:5 (name n) (int 1)))\n"
               "  (while 3:1 (name a)\n"
               "    (pass 3:10)))\n");
    assert_errors("while x\n    pass\n", "t.ph:1:8: error: expected ':' after the while condition, found NEWLINE");
    assert_errors("while x:\n    pass\nelse:\n    pass\n", "t.ph:3:1: error: 'else' without a matching 'if'");
}

Test(parser, if_elif_else)
{
    assert_ast("if a:\n    x = 1\nelif b:\n    x = 2\nelif c: x = 3\nelse:\n    x = 4\n",
               "  (if 1:1 (name a)\n"
               "    (then\n"
               "      (assign 2:5 (name x) (int 1)))\n"
               "    (else\n"
               "      (if 3:1 (name b)\n"
               "        (then\n"
               "          (assign 4:5 (name x) (int 2)))\n"
               "        (else\n"
               "          (if 5:1 (name c)\n"
               "            (then\n"
               "              (assign 5:9 (name x) (int 3)))\n"
               "            (else\n"
               "              (assign 7:5 (name x) (int 4)))))))))\n");
    Parsed p;
    parse_text(&p, "if a:\n    pass\nelif b:\n    pass\n");
    Stmt *s = p.m->items[0]->stmt;
    cr_assert_eq(s->kind, ST_IF);
    cr_assert_eq(s->norelse, 1);
    cr_assert_eq(s->orelse[0]->kind, ST_IF);
    cr_assert_eq(s->orelse[0]->norelse, 0);
    parsed_free(&p);
}

/* ---- expressions ---- */

Test(parser, atoms)
{
    assert_expr("x\n", "(name x)");
    assert_expr("12\n", "(int 12)");
    assert_expr("1.5e3\n", "(float 1.5e+03)");
    assert_expr("0.5\n", "(float 0.5)");
    assert_expr("2.\n", "(float 2.0)");
    assert_expr("1.0e-30\n", "(float 1e-30)");
    assert_ast("x = 'a' \"b\\n\"\n", "  (assign 1:1 (name x) (str \"ab\\n\")))\n");
    assert_expr("True\n", "(bool True)");
    assert_expr("False\n", "(bool False)");
    assert_expr("None\n", "(none)");
    assert_expr("()\n", "(tuple)");
    assert_expr("(a, b)\n", "(tuple (name a) (name b))");
    assert_expr("(a,)\n", "(tuple (name a))");
    assert_expr("((a))\n", "(name a)");
    assert_expr("[]\n", "(list)");
    assert_expr("[a, 1,]\n", "(list (name a) (int 1))");
    assert_expr("a, b\n", "(tuple (name a) (name b))");
    assert_expr("99999999999999999999\n", "(int 9223372036854775807 overflow)");
    assert_expr("1e999\n", "(float inf overflow)");
}

Test(parser, postfix)
{
    assert_expr("ph.ctx.block.x\n", "(attr (attr (attr (name ph) ctx) block) x)");
    assert_expr("f(a, b=1, c=d + 1)\n", "(call (name f) (name a) (kw b (int 1)) (kw c (binary + (name d) (int 1))))");
    assert_expr("f()()\n", "(call (call (name f)))");
    assert_expr("X[r:+n, :]\n", "(index (name X) (slice (name r) (unary + (name n))) (slice _ _))");
    assert_expr("X[:3, 1:]\n", "(index (name X) (slice _ (int 3)) (slice (int 1) _))");
    assert_expr("X[i][j]\n", "(index (index (name X) (name i)) (name j))");
    assert_expr("X[i,]\n", "(index (name X) (name i))");
    assert_expr("a.b(c)[d].e\n", "(attr (index (call (attr (name a) b) (name c)) (name d)) e)");
}

Test(parser, precedence)
{
    assert_expr("a + b * c\n", "(binary + (name a) (binary * (name b) (name c)))");
    assert_expr("a - b - c\n", "(binary - (binary - (name a) (name b)) (name c))");
    assert_expr("a * b // c % d / e @ f\n",
                "(binary @ (binary / (binary % (binary // (binary * (name a) (name b)) (name c)) (name d)) (name e)) (name f))");
    assert_expr("-2 ** 2\n", "(unary - (binary ** (int 2) (int 2)))");
    assert_expr("a ** b ** c\n", "(binary ** (name a) (binary ** (name b) (name c)))");
    assert_expr("a ** -b\n", "(binary ** (name a) (unary - (name b)))");
    assert_expr("-a * +b\n", "(binary * (unary - (name a)) (unary + (name b)))");
    assert_expr("~a & b\n", "(binary & (unary ~ (name a)) (name b))");
    assert_expr("a | b ^ c & d << e + f\n",
                "(binary | (name a) (binary ^ (name b) (binary & (name c) (binary << (name d) (binary + (name e) (name f))))))");
    assert_expr("a >> b\n", "(binary >> (name a) (name b))");
    assert_expr("a < b + 1\n", "(compare < (name a) (binary + (name b) (int 1)))");
    assert_expr("a == b and c != d or e\n",
                "(binary or (binary and (compare == (name a) (name b)) (compare != (name c) (name d))) (name e))");
    assert_expr("not a == b\n", "(unary not (compare == (name a) (name b)))");
    assert_expr("not a and not b\n", "(binary and (unary not (name a)) (unary not (name b)))");
    assert_expr("a <= b\n", "(compare <= (name a) (name b))");
    assert_expr("a > b\n", "(compare > (name a) (name b))");
    assert_expr("a >= b\n", "(compare >= (name a) (name b))");
    assert_expr("(a + b) * c\n", "(binary * (binary + (name a) (name b)) (name c))");
}

Test(parser, locations)
{
    Parsed p;
    parse_text(&p, "x = f(a) + b.c\n");
    Stmt *s = p.m->items[0]->stmt;
    cr_assert_eq(s->loc.col, 1);
    Expr *e = s->value;
    cr_assert_eq(e->kind, EX_BINARY);
    cr_assert_eq(e->loc.col, 10);        /* a binary expression: its operator */
    cr_assert_eq(e->lhs->kind, EX_CALL);
    cr_assert_eq(e->lhs->loc.col, 5);    /* others: their first token */
    cr_assert_eq(e->rhs->kind, EX_ATTR);
    cr_assert_eq(e->rhs->loc.col, 12);
    cr_assert_str_eq(e->rhs->name, "c");
    parsed_free(&p);
}

/* ---- errors ---- */

Test(parser, syntax_errors)
{
    assert_errors("for i in range(3)\n    pass\n", "t.ph:1:18: error: expected ':' after the for header, found NEWLINE");
    assert_errors("for 1 in x:\n    pass\n", "t.ph:1:5: error: expected a loop variable name after 'for', found INT");
    assert_errors("for i range(3):\n    pass\n", "t.ph:1:7: error: expected 'in' after the loop variable, found NAME");
    assert_errors("x = f(a, )\ny = )\n", "t.ph:2:5: error: expected an expression, found ')'");
    assert_errors("x = (a + b\n", "t.ph:2:1: error: expected ')', found NEWLINE");
    assert_errors("x = f(a b)\n", "t.ph:1:9: error: expected ')' to close the call, found NAME");
    assert_errors("x = X[a b]\n", "t.ph:1:9: error: expected ']' to close the subscript, found NAME");
    assert_errors("x = X[]\n", "t.ph:1:7: error: expected an expression, found ']'");
    assert_errors("x = a.1\n", "t.ph:1:6: error: expected the end of the line, found FLOAT");
    assert_errors("x = a. b c\n", "t.ph:1:10: error: expected the end of the line, found NAME");
    assert_errors("if a\n    pass\n", "t.ph:1:5: error: expected ':' after the if condition, found NEWLINE");
    assert_errors("if a:\npass\n", "t.ph:2:1: error: expected an indented block after the if condition, found 'pass'");
    assert_errors("if a:\n    pass\nelse\n    pass\n", "t.ph:3:5: error: expected ':' after 'else', found NEWLINE");
    assert_errors("a < b < c\n", "t.ph:1:7: error: chained comparisons are not supported");
    assert_errors("x = X[1:2:3]\n", "t.ph:1:10: error: slice steps are not supported");
    assert_errors("f() = 1\n", "t.ph:1:1: error: cannot assign to a function call");
    assert_errors("a.b = 1\n", "t.ph:1:1: error: cannot assign to an attribute");
    assert_errors("1 = a\n", "t.ph:1:1: error: cannot assign to a literal");
    assert_errors("a, b = c\n", "t.ph:1:1: error: cannot assign to a tuple");
    assert_errors("a + b += 1\n", "t.ph:1:3: error: cannot assign to an expression");
    assert_errors("a = b = 1\n", "t.ph:1:7: error: chained assignment is not supported");
    assert_errors("X[0]: ph.let = 1\n", "t.ph:1:1: error: only a name can be declared with an annotation");
    assert_errors("f(a=1, b)\n", "t.ph:1:8: error: positional argument follows keyword argument");
    assert_errors("while x:\n    break\n", "t.ph:2:5: error: 'break' is not supported in Phobos");
    assert_errors("def f():\n    class A: pass\n", "t.ph:2:5: error: 'class' is not supported in Phobos");
    assert_errors("x = lambda: 1\n", "t.ph:1:5: error: expected an expression, found 'lambda'");
    assert_errors("else:\n    pass\n", "t.ph:1:1: error: 'else' without a matching 'if'");
    assert_errors("x = 1\n    y = 2\n", "t.ph:2:5: error: unexpected indent");
    assert_errors("def f():\n    import x\n", "t.ph:2:5: error: imports are only allowed at the top level of a file");
    assert_errors("def f():\n    def g(): pass\n", "t.ph:2:5: error: a 'def' is only allowed at the top level of a file");
    assert_errors("@ph.kernel\nx = 1\n", "t.ph:2:1: error: expected 'def' after the decorators, found NAME");
    assert_errors("@ph.kernel x\ndef f(): pass\n", "t.ph:1:12: error: expected the end of the line after a decorator, found NAME");
    assert_errors("def (): pass\n", "t.ph:1:5: error: expected a function name after 'def', found '('");
    assert_errors("def f(*a): pass\n", "t.ph:1:7: error: expected a parameter name, found '*'");
    assert_errors("def f(a) pass\n", "t.ph:1:10: error: expected ':' after the def header, found 'pass'");
    assert_errors("from . import x\n", "t.ph:1:6: error: expected a module name, found '.'");
    assert_errors("import a.\n", "t.ph:1:10: error: expected a name after '.', found NEWLINE");
    assert_errors("from a imp x\n", "t.ph:1:8: error: expected 'import' after the module name, found NAME");
    assert_errors("x = 1 y\n", "t.ph:1:7: error: expected the end of the line, found NAME");
}

Test(parser, recovery_reports_each_error)
{
    int n;
    char *got = error_lines("def f():\n    x = )\n    y = 1\n    for i in:\n        z = 1\n\n    w = ]\nv = 1 2\n", &n);
    cr_assert_str_eq(got,
                     "t.ph:2:9: error: expected an expression, found ')'\n"
                     "t.ph:4:13: error: expected an expression, found ':'\n"
                     "t.ph:7:9: error: expected an expression, found ']'\n"
                     "t.ph:8:7: error: expected the end of the line, found INT");
    cr_assert_eq(n, 4);
    free(got);
    /* The statements around the errors are kept. */
    Parsed p;
    parse_text(&p, "def f():\n    x = )\n    y = 1\n    if :\n        z = 1\n    w = 2\n");
    cr_assert_eq(p.d.nerrors, 2);
    cr_assert_eq(p.m->nitems, 1);
    FuncDef *fn = p.m->items[0]->def;
    cr_assert_eq(fn->nbody, 2);
    cr_assert_eq(fn->body[0]->kind, ST_ASSIGN);
    cr_assert_str_eq(fn->body[0]->target->name, "y");
    cr_assert_str_eq(fn->body[1]->target->name, "w");
    parsed_free(&p);
}

Test(parser, errors_from_the_lexer_are_kept)
{
    int n;
    char *got = error_lines("x = $\ny = 'a\n", &n);
    cr_assert(strstr(got, "t.ph:1:5: error: unexpected character '$'"), "%s", got);
    cr_assert(strstr(got, "t.ph:2:5: error: unterminated string literal"), "%s", got);
    free(got);
}

/* ---- depth ---- */

static char *repeat(const char *head, const char *unit, int n, const char *mid, const char *close, const char *tail)
{
    size_t len = strlen(head) + (strlen(unit) + strlen(close)) * (size_t)n + strlen(mid) + strlen(tail) + 1;
    char *s = xmalloc(len), *w = s;
    w += sprintf(w, "%s", head);
    for (int i = 0; i < n; i++) w += sprintf(w, "%s", unit);
    w += sprintf(w, "%s", mid);
    for (int i = 0; i < n; i++) w += sprintf(w, "%s", close);
    sprintf(w, "%s", tail);
    return s;
}

static void assert_too_deep(char *text)
{
    int n;
    char *got = error_lines(text, &n);
    cr_assert(strstr(got, "nesting too deep"), "got: %s", got);
    cr_assert_lt(n, 5, "%s", got);
    free(got);
    free(text);
}

Test(parser, deep_nesting_is_an_error)
{
    assert_too_deep(repeat("x = ", "(", 1000, "1", ")", "\n"));
    assert_too_deep(repeat("x = ", "[", 1000, "1", "]", "\n"));
    assert_too_deep(repeat("x = ", "f(", 1000, "1", ")", "\n"));
    assert_too_deep(repeat("x = ", "-", 100000, "1", "", "\n"));
    assert_too_deep(repeat("x = ", "not ", 100000, "a", "", "\n"));
    assert_too_deep(repeat("x = 2", "**2", 100000, "", "", "\n"));
    /* 1000 nested ifs, each line one space deeper. */
    size_t cap = 1000 * 1010 + 2000;
    char *text = malloc(cap), *w = text;
    for (int i = 0; i < 1000; i++) w += sprintf(w, "%*sif a:\n", i, "");
    sprintf(w, "%*spass\ny = 1\n", 1000, "");
    Parsed p;
    parse_text(&p, text);
    cr_assert(strstr(p.diags, "nesting too deep"), "%s", p.diags);
    cr_assert_eq(p.d.nerrors, 1);
    cr_assert_eq(p.m->nitems, 2);   /* the outer if and y = 1 */
    parsed_free(&p);
    free(text);
}

Test(parser, moderate_nesting_is_fine)
{
    char *text = repeat("x = ", "(", 150, "1", ")", "\n");
    Parsed p;
    parse_text(&p, text);
    cr_assert_eq(p.d.nerrors, 0, "%s", p.diags);
    parsed_free(&p);
    free(text);
}

/* ---- the attention tutorial ---- */

static const char *kernels[] = {"attn_fwd", "attn_bwd_delta", "attn_bwd_dkdv", "attn_bwd_dq"};

Test(parser, attention_tutorial)
{
    char *text = tu_read_file("examples/attention/attention.ph");
    cr_assert(text, "examples/attention/attention.ph not found (run from the repository root)");
    Parsed p;
    parse_text(&p, text);
    cr_assert_eq(p.d.nerrors, 0, "%s", p.diags);
    cr_assert(p.m->docstring && !strncmp(p.m->docstring, "Triton's tutorial 06", 20));
    cr_assert_eq(p.m->nitems, 6);
    cr_assert_eq(p.m->items[0]->kind, TOP_FROM_IMPORT);
    cr_assert_str_eq(p.m->items[0]->module, "__future__");
    cr_assert_str_eq(p.m->items[0]->name, "annotations");
    cr_assert_eq(p.m->items[1]->kind, TOP_IMPORT);
    cr_assert_str_eq(p.m->items[1]->module, "phobos.lang");
    cr_assert_str_eq(p.m->items[1]->alias, "ph");
    for (int i = 0; i < 4; i++) {
        Top *t = p.m->items[2 + i];
        cr_assert_eq(t->kind, TOP_DEF);
        cr_assert_str_eq(t->def->name, kernels[i]);
        cr_assert_geq(t->def->ndecorators, 2);
        Expr *first = t->def->decorators[0];
        cr_assert_eq(first->kind, EX_ATTR);
        cr_assert_str_eq(first->name, "kernel");
        cr_assert_gt(t->def->nbody, 2);
    }
    FuncDef *fwd = p.m->items[2]->def;
    cr_assert_eq(fwd->ndecorators, 5);
    cr_assert_eq(fwd->nparams, 8);
    cr_assert_str_eq(fwd->params[7].name, "causal");
    /* The printed tree holds the online softmax call and the causal mask. */
    cr_assert(strstr(p.ast, "(expr 49:9 (call (attr (name ph) online_softmax) (name acc) (name m) (name l) (name s) (name v)))"),
              "%s", p.ast);
    cr_assert(strstr(p.ast, "(augassign += 89:9 (name dv) (call (attr (name ph) dot) (name pt) (name do)))"));
    parsed_free(&p);
    free(text);
}
