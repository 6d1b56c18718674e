/* lexer.re: the tokenizer of .ph files, Python's lexical structure (re2c 3.0).
 *
 * re2c recognizes one token at a time; the C around it does what a regular
 * language cannot: the stack of indentation levels that turns leading
 * whitespace into INDENT/DEDENT, the bracket depth that joins lines, string
 * bodies with their escapes, and literal values. The text may hold NULs
 * before its end, so the scanner uses re2c's sentinel with bounds checks:
 * the NUL that SrcFile guarantees at text[len] ends the input only when the
 * cursor has reached len. Every path through the loop consumes at least one
 * byte or ends the input, so any input is tokenized in linear time.
 *
 * The file is scanned twice: once to count the tokens, silently, and once
 * to write them into an array of exactly that size in the arena. A 10 MB
 * file holds millions of tokens; growing an array and copying it into the
 * arena would hold it twice, with half the growth unused. */
#include "dsl.h"

/* Tokens cost 32 bytes each; a file of more is refused before they are
 * built (10 MB of statements is about 5 million tokens). */
enum { MAX_TOKENS = 2000000 };

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_LEX_ERRORS = 200 };

/* What one call of scan() found, beyond the token kinds themselves. */
enum {
    R_SPACE = T_COUNT, R_COMMENT, R_NEWLINE, R_CONT, R_BADCONT,
    R_STR1, R_STR3, R_RSTR1, R_RSTR3,
    R_DEC, R_HEX, R_OCT, R_BIN, R_FLOAT,
    R_NUL, R_NONASCII, R_BADCHAR, R_END,
};

typedef struct {
    const SrcFile *f;
    Diag *d;
    Arena *a;
    const unsigned char *cur, *end, *line_start;
    int line;
    int depth;            /* open brackets */
    bool line_has_tokens; /* the logical line so far holds a token */
    int nerrors;
    bool counting;        /* the first pass: count tokens, report nothing */
    Loc limit_loc;        /* where the count passed MAX_TOKENS */
    Token scratch;        /* what push() fills while counting */
    Token *toks;          /* the second pass: exactly cap tokens, in the arena */
    int ntoks, cap;
    int *indents, *alt_indents;  /* indentation with tab size 8 and tab size 1 */
    int nindents, indent_cap;
    char *buf;            /* string bodies are decoded here, then copied */
    size_t buflen, bufcap;
} Lexer;

static Loc loc_at(Lexer *L, const unsigned char *p)
{
    return (Loc){L->line, (int)(p - L->line_start) + 1};
}

/* A file of ten million '$' must not produce ten million messages. */
static void lex_error_loc(Lexer *L, Loc loc, const char *msg, const char *arg)
{
    if (L->counting) return;
    if (L->nerrors++ >= MAX_LEX_ERRORS) {
        if (!L->d->nerrors) L->d->nerrors = 1;
        return;
    }
    diag_error(L->d, loc, "%s%s", msg, arg ? arg : "");
}

static void lex_error(Lexer *L, const unsigned char *p, const char *msg, const char *arg)
{
    lex_error_loc(L, loc_at(L, p), msg, arg);
}

static Token *push(Lexer *L, TokKind kind, const unsigned char *start, size_t len, Loc loc)
{
    Token *t;
    if (L->counting) {
        if (L->ntoks == INT32_MAX) {   /* only a file of gigabytes; the int count must not wrap */
            fprintf(stderr, "phc: %s: too many tokens\n", L->f->path);
            exit(3);
        }
        if (++L->ntoks == MAX_TOKENS + 1) L->limit_loc = loc;
        t = &L->scratch;
    } else {
        if (L->ntoks == L->cap) {      /* both passes see the same bytes */
            fprintf(stderr, "phc: internal error: the lexer's passes disagree\n");
            abort();
        }
        t = &L->toks[L->ntoks++];
    }
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->loc = loc;
    t->start = (const char *)start;
    t->len = len > INT32_MAX ? INT32_MAX : (int)len;
    return t;
}

/* ---- re2c: one token from *pcur ---- */

#define RET(k) do { *pcur = cur; return (k); } while (0)

static int scan(const unsigned char **pcur, const unsigned char *lim)
{
    const unsigned char *cur = *pcur, *mar = cur;
    (void)mar;
    /*!re2c
        re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur;
        re2c:define:YYMARKER = mar;
        re2c:define:YYLIMIT = lim;
        re2c:yyfill:enable = 0;
        re2c:eof = 0;

        digits   = [0-9] ("_"? [0-9])*;
        hexint   = "0" [xX] ("_"? [0-9a-fA-F])+;
        octint   = "0" [oO] ("_"? [0-7])+;
        binint   = "0" [bB] ("_"? [01])+;
        exponent = [eE] [+-]? digits;
        pointflt = digits? "." digits | digits ".";
        floatlit = pointflt exponent? | digits exponent;
        newline  = "\r\n" | "\n" | "\r";

        $                     { RET(R_END); }
        [ \t\f]+              { RET(R_SPACE); }
        "#" [^\n\r]*          { RET(R_COMMENT); }
        newline               { RET(R_NEWLINE); }
        "\\" newline          { RET(R_CONT); }
        "\\"                  { RET(R_BADCONT); }
        "\x00"                { RET(R_NUL); }

        "'''" | '"""'         { RET(R_STR3); }
        ['"]                  { RET(R_STR1); }
        [rR] ("'''" | '"""')  { RET(R_RSTR3); }
        [rR] ['"]             { RET(R_RSTR1); }

        digits                { RET(R_DEC); }
        hexint                { RET(R_HEX); }
        octint                { RET(R_OCT); }
        binint                { RET(R_BIN); }
        floatlit              { RET(R_FLOAT); }

        "def"      { RET(T_DEF); }      "for"    { RET(T_FOR); }
        "in"       { RET(T_IN); }       "if"     { RET(T_IF); }
        "elif"     { RET(T_ELIF); }     "else"   { RET(T_ELSE); }
        "return"   { RET(T_RETURN); }   "pass"   { RET(T_PASS); }
        "and"      { RET(T_AND); }      "or"     { RET(T_OR); }
        "not"      { RET(T_NOT); }      "from"   { RET(T_FROM); }
        "import"   { RET(T_IMPORT); }   "as"     { RET(T_AS); }
        "True"     { RET(T_TRUE); }     "False"  { RET(T_FALSE); }
        "None"     { RET(T_NONE); }     "while"  { RET(T_WHILE); }
        "class" | "lambda" | "with" | "try" | "except" | "finally"
            | "raise" | "yield" | "global" | "nonlocal" | "del" | "assert"
            | "break" | "continue" | "is" | "async" | "await"
                   { RET(T_RESERVED); }
        [A-Za-z_][A-Za-z0-9_]*  { RET(T_NAME); }

        "+"   { RET(T_PLUS); }    "-"   { RET(T_MINUS); }   "*"   { RET(T_STAR); }
        "/"   { RET(T_SLASH); }   "//"  { RET(T_DSLASH); }  "%"   { RET(T_PERCENT); }
        "**"  { RET(T_DSTAR); }   "@"   { RET(T_AT); }      "="   { RET(T_ASSIGN); }
        "+="  { RET(T_PLUSEQ); }  "-="  { RET(T_MINUSEQ); } "*="  { RET(T_STAREQ); }
        "/="  { RET(T_SLASHEQ); }
        "//=" | "%=" | "**=" | "@=" | "&=" | "|=" | "^=" | "<<=" | ">>="
              { RET(T_OTHEREQ); }
        "=="  { RET(T_EQ); }      "!="  { RET(T_NE); }      "<"   { RET(T_LT); }
        "<="  { RET(T_LE); }      ">"   { RET(T_GT); }      ">="  { RET(T_GE); }
        "("   { RET(T_LPAREN); }  ")"   { RET(T_RPAREN); }  "["   { RET(T_LBRACKET); }
        "]"   { RET(T_RBRACKET); } "{"  { RET(T_LBRACE); }  "}"   { RET(T_RBRACE); }
        ","   { RET(T_COMMA); }   ":"   { RET(T_COLON); }   "."   { RET(T_DOT); }
        ";"   { RET(T_SEMI); }    "->"  { RET(T_ARROW); }   "~"   { RET(T_TILDE); }
        "&"   { RET(T_AMP); }     "|"   { RET(T_PIPE); }    "^"   { RET(T_CARET); }
        "<<"  { RET(T_SHL); }     ">>"  { RET(T_SHR); }

        [\x80-\xff]           { RET(R_NONASCII); }
        *                     { RET(R_BADCHAR); }
    */
}

#undef RET

/* ---- UTF-8 ---- */

/* Decodes the sequence at p (before end); returns its length, 0 when the
 * bytes are not valid UTF-8 (overlong forms and surrogates included). */
static int utf8_decode(const unsigned char *p, const unsigned char *end, unsigned *cp)
{
    unsigned c = p[0];
    int n;
    unsigned min;
    if (c < 0x80) { *cp = c; return 1; }
    if (c >= 0xc2 && c <= 0xdf) { n = 2; min = 0x80; c &= 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { n = 3; min = 0x800; c &= 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 4; min = 0x10000; c &= 0x07; }
    else return 0;
    if (end - p < n) return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    *cp = c;
    return n;
}

/* How many bytes a broken sequence at p spans: its lead byte and the
 * continuation bytes after it, so one mistake gives one message. */
static int utf8_bad_len(const unsigned char *p, const unsigned char *end)
{
    int n = 1;
    while (n < 4 && p + n < end && (p[n] & 0xc0) == 0x80) n++;
    return n;
}

static int utf8_encode(unsigned cp, char *out)
{
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Comments may hold any character, but not NULs or broken UTF-8. */
static void check_comment(Lexer *L, const unsigned char *p, const unsigned char *end)
{
    while (p < end) {
        unsigned cp;
        int n;
        if (*p == 0) { lex_error(L, p, "NUL byte in source", NULL); p++; }
        else if (*p < 0x80) p++;
        else if ((n = utf8_decode(p, end, &cp))) p += n;
        else { lex_error(L, p, "invalid UTF-8", NULL); p += utf8_bad_len(p, end); }
    }
}

/* ---- strings ---- */

static void buf_add(Lexer *L, const char *s, size_t n)
{
    if (L->buflen + n + 1 > L->bufcap) {
        while (L->buflen + n + 1 > L->bufcap) L->bufcap = L->bufcap ? 2 * L->bufcap : 256;
        L->buf = xrealloc(L->buf, L->bufcap);
    }
    memcpy(L->buf + L->buflen, s, n);
    L->buflen += n;
}

static int hex_value(unsigned c)
{
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

static void newline_in_string(Lexer *L, const unsigned char **pp)
{
    const unsigned char *p = *pp;
    if (*p == '\r' && p + 1 < L->end && p[1] == '\n') p++;
    p++;
    L->line++;
    L->line_start = p;
    *pp = p;
}

/* Decodes the escape whose backslash is at p; returns the byte after it. */
static const unsigned char *string_escape(Lexer *L, const unsigned char *p)
{
    const unsigned char *bs = p, *end = L->end;
    unsigned c = p[1];
    char out[4];
    p += 2;
    switch (c) {
    case '\n': case '\r':   /* a backslash joins the lines */
        p = bs + 1;
        newline_in_string(L, &p);
        return p;
    case 'n': buf_add(L, "\n", 1); return p;
    case 't': buf_add(L, "\t", 1); return p;
    case 'r': buf_add(L, "\r", 1); return p;
    case 'a': buf_add(L, "\a", 1); return p;
    case 'b': buf_add(L, "\b", 1); return p;
    case 'f': buf_add(L, "\f", 1); return p;
    case 'v': buf_add(L, "\v", 1); return p;
    case '\\': case '\'': case '"': buf_add(L, (char *)&bs[1], 1); return p;
    case 'x': case 'u': case 'U': {
        int ndigits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        unsigned cp = 0;
        for (int i = 0; i < ndigits; i++, p++) {
            int v = p < end ? hex_value(*p) : -1;
            if (v < 0) {
                lex_error(L, bs, "truncated escape sequence in string", NULL);
                return p;
            }
            cp = cp << 4 | (unsigned)v;
        }
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            lex_error(L, bs, "escape sequence is not a valid character", NULL);
            return p;
        }
        buf_add(L, out, (size_t)utf8_encode(cp, out));
        return p;
    }
    case 'N':
        lex_error(L, bs, "\\N{...} escapes are not supported", NULL);
        return p;
    default:
        if (c >= '0' && c <= '7') {
            unsigned cp = c - '0';
            for (int i = 0; i < 2 && p < end && *p >= '0' && *p <= '7'; i++) cp = cp * 8 + (unsigned)(*p++ - '0');
            buf_add(L, out, (size_t)utf8_encode(cp, out));
            return p;
        }
        /* Python keeps an unknown escape as written. */
        buf_add(L, "\\", 1);
        return bs + 1;
    }
}

/* Reads a string body after its opening quote(s) at p; pushes the T_STRING
 * token that starts at start (prefix included). */
static void lex_string(Lexer *L, const unsigned char *start, const unsigned char *p, bool triple, bool raw)
{
    Loc loc = loc_at(L, start);
    unsigned char q = p[-1];
    const unsigned char *end = L->end;
    L->buflen = 0;
    for (;;) {
        if (p >= end || (!triple && (*p == '\n' || *p == '\r'))) {
            lex_error_loc(L, loc, triple ? "unterminated triple-quoted string literal" : "unterminated string literal", NULL);
            break;
        }
        unsigned c = *p;
        if (c == q && (!triple || (end - p >= 3 && p[1] == q && p[2] == q))) {
            p += triple ? 3 : 1;
            break;
        }
        if (c == '\\' && p + 1 < end) {
            if (raw) {
                /* A raw string keeps the backslash, which still protects a quote. */
                buf_add(L, (const char *)p, 1);
                p++;
                if (*p == q || *p == '\\') buf_add(L, (const char *)p, 1), p++;
            } else {
                p = string_escape(L, p);
            }
        } else if (c == '\n' || c == '\r') {
            buf_add(L, "\n", 1);   /* CRLF in a docstring is one newline */
            newline_in_string(L, &p);
        } else if (c == 0) {
            lex_error(L, p, "NUL byte in source", NULL);
            p++;
        } else if (c < 0x80) {
            buf_add(L, (const char *)p, 1);
            p++;
        } else {
            unsigned cp;
            int n = utf8_decode(p, end, &cp);
            if (n) buf_add(L, (const char *)p, (size_t)n), p += n;
            else lex_error(L, p, "invalid UTF-8", NULL), p += utf8_bad_len(p, end);
        }
    }
    Token *t = push(L, T_STRING, start, (size_t)(p - start), loc);
    if (!L->counting) t->str = arena_strndup(L->a, L->buf ? L->buf : "", L->buflen);
    L->cur = p;
}

/* ---- numbers ---- */

static void int_value(Token *t, const unsigned char *p, const unsigned char *end, int base)
{
    int64_t v = 0;
    for (; p < end; p++) {
        if (*p == '_') continue;
        int d = hex_value(*p);
        if (v > (INT64_MAX - d) / base) {
            t->overflow = true;
            v = INT64_MAX;
            break;
        }
        v = v * base + d;
    }
    t->ival = v;
}

static void float_value(Token *t, const unsigned char *p, const unsigned char *end)
{
    char small[64];
    size_t n = (size_t)(end - p);
    char *s = n < sizeof small ? small : xmalloc(n + 1);
    size_t k = 0;
    for (; p < end; p++)
        if (*p != '_') s[k++] = (char)*p;
    s[k] = 0;
    errno = 0;
    t->fval = strtod(s, NULL);
    if (isinf(t->fval)) t->overflow = true;
    if (s != small) free(s);
}

static bool is_ident_byte(unsigned c)
{
    return c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

static bool has_nonzero_digit(const unsigned char *p, const unsigned char *end)
{
    for (; p < end; p++)
        if (*p >= '1' && *p <= '9') return true;
    return false;
}

static void lex_number(Lexer *L, int r, const unsigned char *start)
{
    const unsigned char *end = L->cur;
    bool bad = false;
    if (L->cur < L->end && is_ident_byte(*L->cur)) {
        /* "12abc", "0x", "1e": one error for the whole word. */
        while (L->cur < L->end && is_ident_byte(*L->cur)) L->cur++;
        lex_error(L, start, "invalid number literal", NULL);
        end = L->cur;
        bad = true;
        r = R_DEC;
    }
    Token *t = push(L, r == R_FLOAT ? T_FLOAT : T_INT, start, (size_t)(end - start), loc_at(L, start));
    switch (r) {
    case R_FLOAT: float_value(t, start, end); break;
    case R_HEX: int_value(t, start + 2, end, 16); break;
    case R_OCT: int_value(t, start + 2, end, 8); break;
    case R_BIN: int_value(t, start + 2, end, 2); break;
    default:
        if (!bad && *start == '0' && has_nonzero_digit(start, end))
            lex_error(L, start, "leading zeros in decimal integer literals are not permitted", NULL);
        if (!bad) int_value(t, start, end, 10);
    }
}

/* ---- indentation ---- */

static void push_indent(Lexer *L, int col, int alt)
{
    if (L->nindents == L->indent_cap) {
        L->indent_cap = L->indent_cap ? 2 * L->indent_cap : 32;
        L->indents = xrealloc(L->indents, sizeof *L->indents * (size_t)L->indent_cap);
        L->alt_indents = xrealloc(L->alt_indents, sizeof *L->alt_indents * (size_t)L->indent_cap);
    }
    L->indents[L->nindents] = col;
    L->alt_indents[L->nindents++] = alt;
}

/* At the start of a physical line outside brackets: measures the
 * indentation twice (tab size 8 and tab size 1, as Python does, so that a
 * file whose meaning depends on the tab size is refused) and emits INDENT
 * or DEDENTs. Blank and comment-only lines do not count. */
static void begin_line(Lexer *L)
{
    const unsigned char *p = L->cur;
    int col = 0, alt = 0;
    for (; p < L->end; p++) {
        if (*p == ' ') col++, alt++;
        else if (*p == '\t') col = (col / 8 + 1) * 8, alt++;
        else if (*p == '\f') col = alt = 0;
        else break;
    }
    L->cur = p;
    if (p >= L->end || *p == '#' || *p == '\n' || *p == '\r') return;
    if (*p == '\\' && p + 1 < L->end && (p[1] == '\n' || p[1] == '\r')) return;
    Loc loc = loc_at(L, p);
    int top = L->indents[L->nindents - 1], alt_top = L->alt_indents[L->nindents - 1];
    const char *inconsistent = "inconsistent use of tabs and spaces in indentation";
    if (col == top) {
        if (alt != alt_top) lex_error(L, p, inconsistent, NULL);
    } else if (col > top) {
        if (alt <= alt_top) lex_error(L, p, inconsistent, NULL);
        push_indent(L, col, alt);
        push(L, T_INDENT, p, 0, loc);
    } else {
        while (L->nindents > 1 && col < L->indents[L->nindents - 1]) {
            L->nindents--;
            push(L, T_DEDENT, p, 0, loc);
        }
        if (col != L->indents[L->nindents - 1])
            lex_error(L, p, "unindent does not match any outer indentation level", NULL);
        else if (alt != L->alt_indents[L->nindents - 1])
            lex_error(L, p, inconsistent, NULL);
    }
}

/* ---- the loop ---- */

static void lex_bracket(Lexer *L, TokKind k, const unsigned char *start)
{
    /* only a count: the parser refuses nesting too deep for it, once */
    (void)start;
    if (k == T_LPAREN || k == T_LBRACKET || k == T_LBRACE) {
        if (L->depth < INT32_MAX) L->depth++;
    } else if (L->depth > 0) {
        L->depth--;
    }
}

/* Whether an error here would be printed: past the first MAX_LEX_ERRORS
 * (and while counting) only the count matters, so a file of ten million
 * bad bytes costs no message formatting. */
static bool reporting(Lexer *L)
{
    if (L->counting) return false;
    if (L->nerrors >= MAX_LEX_ERRORS) {
        L->nerrors++;
        if (!L->d->nerrors) L->d->nerrors = 1;
        return false;
    }
    return true;
}

static void bad_character(Lexer *L, int r, const unsigned char *start)
{
    char name[32];
    if (r == R_NONASCII) {
        unsigned cp;
        int n = utf8_decode(start, L->end, &cp);
        if (!n) {
            L->cur = start + utf8_bad_len(start, L->end);
            if (reporting(L)) lex_error(L, start, "invalid UTF-8", NULL);
            return;
        }
        L->cur = start + n;
        if (!reporting(L)) return;
        snprintf(name, sizeof name, "U+%04X", cp);
        lex_error(L, start, "unexpected character ", name);
        return;
    }
    if (!reporting(L)) return;
    if (r == R_NUL) {
        lex_error(L, start, "NUL byte in source", NULL);
    } else if (r == R_BADCONT) {
        lex_error(L, start, "unexpected character after line continuation character", NULL);
    } else if (*start >= 32 && *start < 127) {
        snprintf(name, sizeof name, "'%c'", *start);
        lex_error(L, start, "unexpected character ", name);
    } else {
        snprintf(name, sizeof name, "U+%04X", *start);
        lex_error(L, start, "unexpected character ", name);
    }
}

static void lex_loop(Lexer *L)
{
    begin_line(L);
    for (;;) {
        const unsigned char *start = L->cur;
        int r = scan(&L->cur, L->end);
        switch (r) {
        case R_END:
            return;
        case R_SPACE:
            break;
        case R_COMMENT:
            check_comment(L, start, L->cur);
            break;
        case R_NEWLINE:
            if (L->depth == 0 && L->line_has_tokens) {
                push(L, T_NEWLINE, start, (size_t)(L->cur - start), loc_at(L, start));
                L->line_has_tokens = false;
            }
            L->line++;
            L->line_start = L->cur;
            if (L->depth == 0) begin_line(L);
            break;
        case R_CONT:
            L->line++;
            L->line_start = L->cur;
            break;
        case R_STR1: case R_STR3: case R_RSTR1: case R_RSTR3:
            L->line_has_tokens = true;
            lex_string(L, start, L->cur, r == R_STR3 || r == R_RSTR3, r == R_RSTR1 || r == R_RSTR3);
            break;
        case R_DEC: case R_HEX: case R_OCT: case R_BIN: case R_FLOAT:
            L->line_has_tokens = true;
            lex_number(L, r, start);
            break;
        case R_NUL: case R_NONASCII: case R_BADCHAR: case R_BADCONT:
            bad_character(L, r, start);
            break;
        default:
            L->line_has_tokens = true;
            if (r >= T_LPAREN && r <= T_RBRACE) lex_bracket(L, (TokKind)r, start);
            push(L, (TokKind)r, start, (size_t)(L->cur - start), loc_at(L, start));
        }
    }
}

static void lex_pass(Lexer *L)
{
    const SrcFile *f = L->f;
    L->line = 1;
    L->cur = (const unsigned char *)f->text;
    L->end = L->cur + f->len;
    if (f->len >= 3 && !memcmp(L->cur, "\xef\xbb\xbf", 3)) L->cur += 3;  /* a BOM */
    L->line_start = L->cur;
    push_indent(L, 0, 0);
    lex_loop(L);
    Loc eof = loc_at(L, L->end);
    if (L->line_has_tokens) push(L, T_NEWLINE, L->end, 0, eof);
    for (; L->nindents > 1; L->nindents--) push(L, T_DEDENT, L->end, 0, eof);
    push(L, T_EOF, L->end, 0, eof);
    free(L->indents);
    free(L->alt_indents);
    free(L->buf);
}

Token *lex(const SrcFile *f, Diag *d, Arena *a, int *ntokens)
{
    Lexer count = {.f = f, .d = d, .a = a, .counting = true};
    lex_pass(&count);
    if (count.ntoks > MAX_TOKENS) {
        /* bounded memory: the tokens are never built; the parser sees an empty file */
        diag_error(d, count.limit_loc, "more than %d tokens in this file; phc reads at most %d", MAX_TOKENS, MAX_TOKENS);
        Token *eof = arena_alloc(a, sizeof *eof);
        eof->kind = T_EOF;
        eof->loc = count.limit_loc;
        *ntokens = 1;
        return eof;
    }
    Lexer L = {.f = f, .d = d, .a = a, .cap = count.ntoks};
    L.toks = arena_alloc(a, sizeof *L.toks * (size_t)L.cap);
    lex_pass(&L);
    *ntokens = L.ntoks;
    return L.toks;
}

const char *tok_kind_name(TokKind k)
{
    static const char *names[T_COUNT] = {
        [T_EOF] = "EOF", [T_NEWLINE] = "NEWLINE", [T_INDENT] = "INDENT", [T_DEDENT] = "DEDENT",
        [T_NAME] = "NAME", [T_INT] = "INT", [T_FLOAT] = "FLOAT", [T_STRING] = "STRING",
        [T_DEF] = "'def'", [T_FOR] = "'for'", [T_IN] = "'in'", [T_IF] = "'if'",
        [T_ELIF] = "'elif'", [T_ELSE] = "'else'", [T_RETURN] = "'return'", [T_PASS] = "'pass'",
        [T_AND] = "'and'", [T_OR] = "'or'", [T_NOT] = "'not'", [T_FROM] = "'from'",
        [T_IMPORT] = "'import'", [T_AS] = "'as'", [T_TRUE] = "'True'", [T_FALSE] = "'False'",
        [T_NONE] = "'None'", [T_WHILE] = "'while'", [T_RESERVED] = "keyword",
        [T_PLUS] = "'+'", [T_MINUS] = "'-'", [T_STAR] = "'*'", [T_SLASH] = "'/'",
        [T_DSLASH] = "'//'", [T_PERCENT] = "'%'", [T_DSTAR] = "'**'", [T_AT] = "'@'",
        [T_ASSIGN] = "'='", [T_PLUSEQ] = "'+='", [T_MINUSEQ] = "'-='", [T_STAREQ] = "'*='",
        [T_SLASHEQ] = "'/='", [T_OTHEREQ] = "augmented assignment",
        [T_EQ] = "'=='", [T_NE] = "'!='", [T_LT] = "'<'", [T_LE] = "'<='", [T_GT] = "'>'", [T_GE] = "'>='",
        [T_LPAREN] = "'('", [T_RPAREN] = "')'", [T_LBRACKET] = "'['", [T_RBRACKET] = "']'",
        [T_LBRACE] = "'{'", [T_RBRACE] = "'}'", [T_COMMA] = "','", [T_COLON] = "':'",
        [T_DOT] = "'.'", [T_SEMI] = "';'", [T_ARROW] = "'->'",
        [T_TILDE] = "'~'", [T_AMP] = "'&'", [T_PIPE] = "'|'", [T_CARET] = "'^'",
        [T_SHL] = "'<<'", [T_SHR] = "'>>'",
    };
    return k >= 0 && k < T_COUNT && names[k] ? names[k] : "?";
}
