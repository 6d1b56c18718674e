/* test_lexer.c: the tokenizer: Python's indentation and line rules, every
 * token kind and literal form, and every lexical error at its exact
 * line:col. */
#include <criterion/criterion.h>
#include <math.h>
#include <time.h>
#include "testutil.h"

typedef struct {
    SrcFile f;
    Diag d;
    Arena *a;
    Token *t;
    int n;
    char *diags;
    size_t dlen;
} Lexed;

/* Lexes len bytes of text (NULs allowed); diagnostics land in L->diags. */
static void lex_bytes(Lexed *L, const char *text, size_t len)
{
    memset(L, 0, sizeof *L);
    char *copy = malloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = 0;
    L->f = (SrcFile){strdup("t.ph"), copy, len};
    FILE *out = open_memstream(&L->diags, &L->dlen);
    diag_init(&L->d, &L->f, out);
    L->a = arena_new();
    L->t = lex(&L->f, &L->d, L->a, &L->n);
    fclose(out);
}

static void lex_text(Lexed *L, const char *text) { lex_bytes(L, text, strlen(text)); }

static void lexed_free(Lexed *L)
{
    arena_free(L->a);
    diag_free(&L->d);
    src_free(&L->f);
    free(L->diags);
}

/* The token kinds as one line: "NAME '=' INT NEWLINE EOF". */
static char *kinds(const Lexed *L)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    for (int i = 0; i < L->n; i++) fprintf(out, "%s%s", i ? " " : "", tok_kind_name(L->t[i].kind));
    fclose(out);
    return buf;
}

static void assert_kinds(const char *text, const char *want)
{
    Lexed L;
    lex_text(&L, text);
    char *got = kinds(&L);
    cr_assert_str_eq(got, want, "lexing %s", text);
    cr_assert_eq(L.d.nerrors, 0, "unexpected errors: %s", L.diags);
    free(got);
    lexed_free(&L);
}

/* Exactly one error, whose first line is want. */
static void assert_error_bytes(const char *text, size_t len, const char *want)
{
    Lexed L;
    lex_bytes(&L, text, len);
    cr_assert_eq(L.d.nerrors, 1, "want one error, got: %s", L.diags);
    cr_assert_eq(strncmp(L.diags, want, strlen(want)), 0, "got: %s\nwant: %s", L.diags, want);
    cr_assert_eq(L.t[L.n - 1].kind, T_EOF);
    lexed_free(&L);
}

static void assert_error(const char *text, const char *want) { assert_error_bytes(text, strlen(text), want); }

/* ---- lines and indentation ---- */

Test(lexer, simple_line)
{
    assert_kinds("x = 1\n", "NAME '=' INT NEWLINE EOF");
    assert_kinds("x = 1", "NAME '=' INT NEWLINE EOF");
    assert_kinds("", "EOF");
    assert_kinds("\n\n   \n", "EOF");
}

Test(lexer, indent_and_dedent)
{
    assert_kinds("if a:\n    b\n    c\nd\n",
                 "'if' NAME ':' NEWLINE INDENT NAME NEWLINE NAME NEWLINE DEDENT NAME NEWLINE EOF");
    assert_kinds("if a:\n  if b:\n    c\nd\n",
                 "'if' NAME ':' NEWLINE INDENT 'if' NAME ':' NEWLINE INDENT NAME NEWLINE DEDENT DEDENT NAME NEWLINE EOF");
    /* The file ends inside two blocks, without a final newline. */
    assert_kinds("if a:\n  if b:\n    c",
                 "'if' NAME ':' NEWLINE INDENT 'if' NAME ':' NEWLINE INDENT NAME NEWLINE DEDENT DEDENT EOF");
}

Test(lexer, indent_locations)
{
    Lexed L;
    lex_text(&L, "if a:\n    b\nc\n");
    cr_assert_eq(L.t[4].kind, T_INDENT);
    cr_assert_eq(L.t[4].loc.line, 2);
    cr_assert_eq(L.t[4].loc.col, 5);
    cr_assert_eq(L.t[5].loc.col, 5);
    cr_assert_eq(L.t[7].kind, T_DEDENT);
    cr_assert_eq(L.t[7].loc.line, 3);
    cr_assert_eq(L.t[7].loc.col, 1);
    lexed_free(&L);
}

Test(lexer, dedent_to_unknown_level)
{
    assert_error("if a:\n    b\n  c\n", "t.ph:3:3: error: unindent does not match any outer indentation level");
}

Test(lexer, tabs)
{
    /* The same tabs on every line: consistent. */
    assert_kinds("if a:\n\tb\n\tif c:\n\t\td\n",
                 "'if' NAME ':' NEWLINE INDENT NAME NEWLINE 'if' NAME ':' NEWLINE INDENT NAME NEWLINE DEDENT DEDENT EOF");
    /* A tab and eight spaces are equal at tab size 8 but not at tab size 1. */
    assert_error("if a:\n\tb\n        c\n", "t.ph:3:9: error: inconsistent use of tabs and spaces in indentation");
    /* Deeper at tab size 8 ("  \t" is 8) but not deeper at tab size 1 (3 < 4). */
    assert_error("if a:\n    b\n    if c:\n  \td\n", "t.ph:4:4: error: inconsistent use of tabs and spaces in indentation");
    /* Spaces then a tab, the same on each line: fine. */
    assert_kinds("if a:\n  \tb\n  \tc\n", "'if' NAME ':' NEWLINE INDENT NAME NEWLINE NAME NEWLINE DEDENT EOF");
}

Test(lexer, crlf_and_cr)
{
    assert_kinds("if a:\r\n    b\r\nc\r\n",
                 "'if' NAME ':' NEWLINE INDENT NAME NEWLINE DEDENT NAME NEWLINE EOF");
    assert_kinds("if a:\r    b\rc\r", "'if' NAME ':' NEWLINE INDENT NAME NEWLINE DEDENT NAME NEWLINE EOF");
    Lexed L;
    lex_text(&L, "a\r\n  \r\nbb = 1\r\n");
    cr_assert_eq(L.t[2].loc.line, 3);
    cr_assert_eq(L.t[3].loc.col, 4);
    lexed_free(&L);
}

Test(lexer, brackets_join_lines)
{
    assert_kinds("x = f(1,\n      2\n\n  # c\n)\ny\n", "NAME '=' NAME '(' INT ',' INT ')' NEWLINE NAME NEWLINE EOF");
    assert_kinds("if a:\n    x = [1,\n2]\n    y\n",
                 "'if' NAME ':' NEWLINE INDENT NAME '=' '[' INT ',' INT ']' NEWLINE NAME NEWLINE DEDENT EOF");
    assert_kinds("d = {\n}\n", "NAME '=' '{' '}' NEWLINE EOF");
    Lexed L;
    lex_text(&L, "f(a,\n  b)\n");
    cr_assert_eq(L.t[4].loc.line, 2);
    cr_assert_eq(L.t[4].loc.col, 3);
    lexed_free(&L);
}

Test(lexer, backslash_continuation)
{
    assert_kinds("x = 1 + \\\n        2\ny\n", "NAME '=' INT '+' INT NEWLINE NAME NEWLINE EOF");
    assert_kinds("x = 1 + \\\r\n2\n", "NAME '=' INT '+' INT NEWLINE EOF");
    assert_error("x = 1 \\ 2\n", "t.ph:1:7: error: unexpected character after line continuation character");
}

Test(lexer, blank_and_comment_lines)
{
    assert_kinds("# head\n\nif a:  # trailing\n\n        # deeper comment\n  # shallower\n    b\n\n# end",
                 "'if' NAME ':' NEWLINE INDENT NAME NEWLINE DEDENT EOF");
    assert_kinds("   \t\n  # only\nx\n", "NAME NEWLINE EOF");
}

/* Deep brackets are only counted here: the parser refuses the nesting,
 * with one message (tests/test_hostile.c). */
Test(lexer, deep_brackets_are_counted_not_refused)
{
    char text[1024] = "x = ";
    memset(text + 4, '(', 300);
    Lexed L;
    lex_bytes(&L, text, strlen(text));
    cr_assert_eq(L.d.nerrors, 0);
    cr_assert_eq(L.t[2].kind, T_LPAREN);
    cr_assert_eq(L.t[301].kind, T_LPAREN);
    lexed_free(&L);
}

/* ---- tokens ---- */

Test(lexer, keywords)
{
    assert_kinds("def for in if elif else return pass and or not from import as True False None while",
                 "'def' 'for' 'in' 'if' 'elif' 'else' 'return' 'pass' 'and' 'or' 'not' 'from' 'import' 'as' "
                 "'True' 'False' 'None' 'while' NEWLINE EOF");
    const char *reserved[] = {"class", "lambda", "with", "try", "except", "finally", "raise", "yield",
                              "global", "nonlocal", "del", "assert", "break", "continue", "is", "async", "await"};
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++) {
        Lexed L;
        lex_text(&L, reserved[i]);
        cr_assert_eq(L.t[0].kind, T_RESERVED, "%s", reserved[i]);
        cr_assert_eq(L.t[0].len, (int)strlen(reserved[i]));
        lexed_free(&L);
    }
    /* Names that merely start like keywords. */
    assert_kinds("define fork iff _if if_ Nonetheless match", "NAME NAME NAME NAME NAME NAME NAME NEWLINE EOF");
}

Test(lexer, operators)
{
    assert_kinds("+ - * / // % ** @ = += -= *= /= == != < <= > >=",
                 "'+' '-' '*' '/' '//' '%' '**' '@' '=' '+=' '-=' '*=' '/=' '==' '!=' '<' '<=' '>' '>=' NEWLINE EOF");
    assert_kinds("( ) [ ] { } , : . ; -> ~ & | ^ << >>",
                 "'(' ')' '[' ']' '{' '}' ',' ':' '.' ';' '->' '~' '&' '|' '^' '<<' '>>' NEWLINE EOF");
    Lexed L;
    lex_text(&L, "//= %= **= @= &= |= ^= <<= >>=");
    for (int i = 0; i < 9; i++) cr_assert_eq(L.t[i].kind, T_OTHEREQ, "token %d", i);
    cr_assert_eq(L.t[8].len, 3);
    lexed_free(&L);
    /* Longest match, no spaces needed. */
    assert_kinds("a**-b//c<<=d->e", "NAME '**' '-' NAME '//' NAME augmented assignment NAME '->' NAME NEWLINE EOF");
}

Test(lexer, token_text_and_columns)
{
    Lexed L;
    lex_text(&L, "  \n\tab_1 = x.y  # c\n");
    cr_assert_eq(L.t[0].kind, T_INDENT);
    cr_assert_eq(L.t[1].kind, T_NAME);
    cr_assert_eq(L.t[1].len, 4);
    cr_assert_eq(strncmp(L.t[1].start, "ab_1", 4), 0);
    cr_assert_eq(L.t[1].loc.line, 2);
    cr_assert_eq(L.t[1].loc.col, 2);   /* a tab is one byte */
    cr_assert_eq(L.t[5].loc.col, 11);  /* y */
    cr_assert_eq(L.t[6].kind, T_NEWLINE);
    cr_assert_eq(L.t[6].loc.col, 17);
    lexed_free(&L);
}

static void assert_int(const char *text, int64_t want, bool overflow)
{
    Lexed L;
    lex_text(&L, text);
    cr_assert_eq(L.d.nerrors, 0, "%s: %s", text, L.diags);
    cr_assert_eq(L.t[0].kind, T_INT, "%s", text);
    cr_assert_eq(L.t[0].ival, want, "%s: got %lld", text, (long long)L.t[0].ival);
    cr_assert_eq(L.t[0].overflow, overflow, "%s", text);
    cr_assert_eq(L.t[0].len, (int)strlen(text));
    cr_assert_eq(L.t[1].kind, T_NEWLINE);
    lexed_free(&L);
}

Test(lexer, integers)
{
    assert_int("0", 0, false);
    assert_int("000", 0, false);
    assert_int("123", 123, false);
    assert_int("1_000_000", 1000000, false);
    assert_int("0x1F", 31, false);
    assert_int("0X_ff", 255, false);
    assert_int("0o17", 15, false);
    assert_int("0b101", 5, false);
    assert_int("9223372036854775807", INT64_MAX, false);
    assert_int("9223372036854775808", INT64_MAX, true);
    assert_int("99999999999999999999999999", INT64_MAX, true);
    assert_int("0xffffffffffffffffff", INT64_MAX, true);
}

static void assert_float(const char *text, double want, bool overflow)
{
    Lexed L;
    lex_text(&L, text);
    cr_assert_eq(L.d.nerrors, 0, "%s: %s", text, L.diags);
    cr_assert_eq(L.t[0].kind, T_FLOAT, "%s", text);
    cr_assert_eq(L.t[0].fval, want, "%s: got %g", text, L.t[0].fval);
    cr_assert_eq(L.t[0].overflow, overflow, "%s", text);
    cr_assert_eq(L.t[1].kind, T_NEWLINE);
    lexed_free(&L);
}

Test(lexer, floats)
{
    assert_float("1.0", 1.0, false);
    assert_float("1.", 1.0, false);
    assert_float(".5", 0.5, false);
    assert_float("1e5", 1e5, false);
    assert_float("1.0e-30", 1.0e-30, false);
    assert_float("2E+3", 2000.0, false);
    assert_float("1_000.25", 1000.25, false);
    assert_float("1.5e1_0", 1.5e10, false);
    assert_float("0.0", 0.0, false);
    assert_float("1e400", HUGE_VAL, true);
    assert_kinds("1.e5 .5e-1 x.y", "FLOAT FLOAT NAME '.' NAME NEWLINE EOF");
}

static void assert_string(const char *text, const char *want)
{
    Lexed L;
    lex_text(&L, text);
    cr_assert_eq(L.d.nerrors, 0, "%s: %s", text, L.diags);
    cr_assert_eq(L.t[0].kind, T_STRING, "%s", text);
    cr_assert_str_eq(L.t[0].str, want, "%s", text);
    cr_assert_eq(L.t[0].len, (int)strlen(text));
    cr_assert_eq(L.t[1].kind, T_NEWLINE);
    lexed_free(&L);
}

Test(lexer, strings)
{
    assert_string("'abc'", "abc");
    assert_string("\"abc\"", "abc");
    assert_string("''", "");
    assert_string("'it\"s'", "it\"s");
    assert_string("'a\\nb\\tc\\\\d\\'e\\\"f'", "a\nb\tc\\d'e\"f");
    assert_string("'\\x41\\101\\u00e9\\U0001F600'", "AA\xc3\xa9\xf0\x9f\x98\x80");
    assert_string("'\\r\\a\\b\\f\\v'", "\r\a\b\f\v");
    assert_string("'\\q'", "\\q");        /* unknown escapes stay as written */
    assert_string("'caf\xc3\xa9'", "caf\xc3\xa9");
    assert_string("r'a\\nb'", "a\\nb");
    assert_string("R\"\\\"\"", "\\\"");
    assert_string("'''one\ntwo'''", "one\ntwo");
    assert_string("\"\"\"a \"quoted\" 'word'\"\"\"", "a \"quoted\" 'word'");
    assert_string("'''a\r\nb'''", "a\nb");
    assert_string("'''x\\\ny'''", "xy");   /* backslash-newline joins */
    assert_string("''''''", "");
}

Test(lexer, string_lines_and_columns)
{
    Lexed L;
    lex_text(&L, "\"\"\"doc\nstring\n\"\"\" x\n'\xc3\xa9' y\n");
    cr_assert_eq(L.t[0].kind, T_STRING);
    cr_assert_eq(L.t[1].kind, T_NAME);
    cr_assert_eq(L.t[1].loc.line, 3);
    cr_assert_eq(L.t[1].loc.col, 5);
    cr_assert_eq(L.t[4].kind, T_NAME);
    cr_assert_eq(L.t[4].loc.line, 4);
    cr_assert_eq(L.t[4].loc.col, 6);   /* columns count bytes */
    lexed_free(&L);
}

/* ---- errors ---- */

Test(lexer, nul_bytes)
{
    assert_error_bytes("x = 1\ny\0z\n", 10, "t.ph:2:2: error: NUL byte in source");
    assert_error_bytes("x = 1  # a\0b\n", 13, "t.ph:1:11: error: NUL byte in source");
    assert_error_bytes("x = 'a\0b'\n", 10, "t.ph:1:7: error: NUL byte in source");
    assert_error_bytes("\0", 1, "t.ph:1:1: error: NUL byte in source");
    /* A NUL is not the end of the text: what follows is still lexed. */
    Lexed L;
    lex_bytes(&L, "a\0b\0\0c = 1\n", 11);
    char *got = kinds(&L);
    cr_assert_str_eq(got, "NAME NAME NAME '=' INT NEWLINE EOF");
    cr_assert_eq(L.d.nerrors, 3);
    free(got);
    lexed_free(&L);
}

Test(lexer, invalid_utf8)
{
    assert_error("x = '\xff'\n", "t.ph:1:6: error: invalid UTF-8");
    assert_error("# ok \xc3\xa9 bad \xc3\n", "t.ph:1:13: error: invalid UTF-8");
    assert_error("x\n\xed\xa0\x80\n", "t.ph:2:1: error: invalid UTF-8");   /* a surrogate */
    assert_error("x = \xc0\xaf\n", "t.ph:1:5: error: invalid UTF-8");      /* overlong */
}

Test(lexer, unexpected_characters)
{
    assert_error("x = $\n", "t.ph:1:5: error: unexpected character '$'");
    assert_error("x = a ? b\n", "t.ph:1:7: error: unexpected character '?'");
    assert_error("x = `a\n", "t.ph:1:5: error: unexpected character '`'");
    assert_error("x = !a\n", "t.ph:1:5: error: unexpected character '!'");
    assert_error("x = caf\xc3\xa9\n", "t.ph:1:8: error: unexpected character U+00E9");
    assert_error("x\x01\n", "t.ph:1:2: error: unexpected character U+0001");
}

Test(lexer, unterminated_strings)
{
    assert_error("x = 'abc\ny = 1\n", "t.ph:1:5: error: unterminated string literal");
    assert_error("x = \"abc\\\"", "t.ph:1:5: error: unterminated string literal");
    assert_error("x = 1\ny = '''abc\n\n", "t.ph:2:5: error: unterminated triple-quoted string literal");
    /* The line after an unterminated string is lexed normally. */
    Lexed L;
    lex_text(&L, "x = 'abc\ny = 1\n");
    char *got = kinds(&L);
    cr_assert_str_eq(got, "NAME '=' STRING NEWLINE NAME '=' INT NEWLINE EOF");
    free(got);
    lexed_free(&L);
}

Test(lexer, bad_numbers)
{
    assert_error("x = 12abc\n", "t.ph:1:5: error: invalid number literal");
    assert_error("x = 0x\n", "t.ph:1:5: error: invalid number literal");
    assert_error("x = 1e\n", "t.ph:1:5: error: invalid number literal");
    assert_error("x = 1__0\n", "t.ph:1:5: error: invalid number literal");
    assert_error("x = 0b102\n", "t.ph:1:5: error: invalid number literal");
    assert_error("x = 012\n", "t.ph:1:5: error: leading zeros in decimal integer literals are not permitted");
}

Test(lexer, several_errors_reported)
{
    Lexed L;
    lex_text(&L, "a = $\nb = 'x\nc = 1?\n");
    cr_assert_eq(L.d.nerrors, 3, "%s", L.diags);
    cr_assert(strstr(L.diags, "t.ph:1:5: error: unexpected character '$'"));
    cr_assert(strstr(L.diags, "t.ph:2:5: error: unterminated string literal"));
    cr_assert(strstr(L.diags, "t.ph:3:6: error: unexpected character '?'"));
    char *got = kinds(&L);
    cr_assert_str_eq(got, "NAME '=' NEWLINE NAME '=' STRING NEWLINE NAME '=' INT NEWLINE EOF");
    free(got);
    lexed_free(&L);
}

Test(lexer, bom_is_skipped)
{
    assert_kinds("\xef\xbb\xbfx = 1\n", "NAME '=' INT NEWLINE EOF");
}

Test(lexer, ten_megabytes_in_linear_time)
{
    /* 8 tokens a line of 100 bytes, 840,000 in all: under the lexer's limit of 2 million */
    const char *line = "    acc = a * 0.5 + b  # a comment that makes the line longer, as comments in real code do\n";
    size_t n = strlen(line), total = 10u << 20;
    char *text = malloc(total + n + 64);
    size_t len = 0;
    len += (size_t)sprintf(text, "def f():\n");
    while (len < total) {
        memcpy(text + len, line, n);
        len += n;
    }
    clock_t t0 = clock();
    Lexed L;
    lex_bytes(&L, text, len);
    double seconds = (double)(clock() - t0) / CLOCKS_PER_SEC;
    cr_assert_eq(L.d.nerrors, 0);
    cr_assert_gt(L.n, 800000);
    cr_assert_lt(seconds, 2.0, "lexing 10 MB took %.2f s", seconds);
    lexed_free(&L);
    free(text);
}

Test(lexer, kind_names)
{
    cr_assert_str_eq(tok_kind_name(T_NAME), "NAME");
    cr_assert_str_eq(tok_kind_name(T_INDENT), "INDENT");
    cr_assert_str_eq(tok_kind_name(T_PLUSEQ), "'+='");
    cr_assert_str_eq(tok_kind_name(T_DEF), "'def'");
    for (int k = 0; k < T_COUNT; k++) cr_assert_neq(strcmp(tok_kind_name((TokKind)k), "?"), 0, "kind %d", k);
}
