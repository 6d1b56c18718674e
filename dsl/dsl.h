/* dsl.h: the one header of the front end: source files and diagnostics,
 * tokens (dsl/lexer.re), the AST (dsl/parse.c), and semantic analysis,
 * which checks a module against docs/language.md and lowers each
 * (kernel, config) to tile IR (dsl/sema.c). */
#ifndef PHC_DSL_H
#define PHC_DSL_H

#include <stdio.h>
#include "ir/ir.h"

/* ---- source and diagnostics (dsl/diag.c) ---- */
typedef struct {
    const char *path;   /* as given by the user; used in messages */
    const char *text;   /* the bytes, followed by a NUL (the text may hold NULs too) */
    size_t len;
} SrcFile;

/* Reads path whole. 0 on success; otherwise 1 with a message in err. */
int src_load(SrcFile *f, const char *path, char *err, size_t errlen);
/* Reads the stream in to its end, named name in messages ("<stdin>"). */
int src_read(SrcFile *f, FILE *in, const char *name, char *err, size_t errlen);
void src_from_string(SrcFile *f, const char *path, const char *text);  /* copies text */
void src_free(SrcFile *f);

typedef struct {
    const SrcFile *file;
    FILE *out;          /* where messages go (stderr for phc) */
    int nerrors;
    int noption_errors; /* of those, errors of the options (--kernel, -D), not of the program */
    int max_errors;     /* stop printing after this many (0: 50) */
    bool color;         /* "error:" and the caret in colour, as for a terminal */
    void *seen;         /* messages already printed: a message is printed once */
    int shown_line;     /* the line last shown under a message (0: none) */
    size_t shown_start; /* and where it starts in file->text */
} Diag;

void diag_init(Diag *d, const SrcFile *f, FILE *out);
void diag_free(Diag *d);
/* Prints "path:line:col: error: message", the source line and a caret
 * under col; counts the error. The same (loc, message) twice prints once. */
void diag_error(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- tokens (dsl/lexer.re) ---- */
typedef enum {
    T_EOF, T_NEWLINE, T_INDENT, T_DEDENT,
    T_NAME, T_INT, T_FLOAT, T_STRING,
    /* keywords the language uses */
    T_DEF, T_FOR, T_IN, T_IF, T_ELIF, T_ELSE, T_RETURN, T_PASS,
    T_AND, T_OR, T_NOT, T_FROM, T_IMPORT, T_AS, T_TRUE, T_FALSE, T_NONE, T_WHILE,
    /* the rest of Python's keywords: the parser names them in an error */
    T_RESERVED,
    /* operators and punctuation */
    T_PLUS, T_MINUS, T_STAR, T_SLASH, T_DSLASH, T_PERCENT, T_DSTAR, T_AT,
    T_ASSIGN, T_PLUSEQ, T_MINUSEQ, T_STAREQ, T_SLASHEQ, T_OTHEREQ, /* //= %= ... */
    T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
    T_LPAREN, T_RPAREN, T_LBRACKET, T_RBRACKET, T_LBRACE, T_RBRACE,
    T_COMMA, T_COLON, T_DOT, T_SEMI, T_ARROW,
    T_TILDE, T_AMP, T_PIPE, T_CARET, T_SHL, T_SHR,
    T_COUNT
} TokKind;

/* 32 bytes: a 10 MB file holds millions of tokens, so the kind is a byte
 * and the literal values share one slot. */
typedef struct {
    uint8_t kind;       /* a TokKind */
    bool overflow;      /* T_INT past INT64_MAX, T_FLOAT past DBL_MAX */
    int len;
    Loc loc;
    const char *start;  /* into the source text */
    union {
        int64_t ival;   /* T_INT; saturated, with overflow set, past INT64_MAX */
        double fval;    /* T_FLOAT (inf when it overflows) */
        const char *str;/* T_STRING: the decoded value (arena) */
    };
} Token;

/* Tokenizes the whole file (Python's rules: INDENT/DEDENT, implicit joining
 * inside brackets, comments, blank lines). Errors go to d; the array always
 * ends with T_EOF. Tokens live in the arena. */
Token *lex(const SrcFile *f, Diag *d, Arena *a, int *ntokens);
const char *tok_kind_name(TokKind k);   /* "NAME", "INDENT", "'+='", "'def'" */

/* ---- AST (dsl/parse.c) ---- */
typedef enum {
    EX_INT, EX_FLOAT, EX_STRING, EX_BOOL, EX_NONE,
    EX_NAME,      /* name */
    EX_ATTR,      /* lhs.name */
    EX_CALL,      /* lhs(items...); keyword arguments are EX_KEYWORD items */
    EX_KEYWORD,   /* name=lhs, only as a call argument */
    EX_INDEX,     /* lhs[items...] */
    EX_SLICE,     /* lhs:rhs (either may be NULL), only as a subscript item */
    EX_UNARY,     /* op lhs: T_MINUS, T_PLUS, T_NOT, T_TILDE */
    EX_BINARY,    /* lhs op rhs: arithmetic, T_AND, T_OR */
    EX_COMPARE,   /* lhs op rhs: T_EQ ... T_GE (chains are a parse error) */
    EX_LIST,      /* [items...] */
    EX_TUPLE,     /* (a, b), a, b */
} ExprKind;

typedef struct Expr {
    ExprKind kind;
    Loc loc;            /* of the expression's first token, operators: of the operator */
    TokKind op;
    int64_t ival; double fval; bool overflow;  /* EX_INT, EX_FLOAT; EX_BOOL: ival */
    const char *name;   /* EX_NAME, EX_ATTR (the attribute), EX_KEYWORD, EX_STRING (value) */
    struct Expr *lhs, *rhs;
    int nitems; struct Expr **items;
} Expr;

typedef enum {
    ST_EXPR,      /* value */
    ST_ASSIGN,    /* target = value */
    ST_AUGASSIGN, /* target op= value; op is T_PLUSEQ ... T_SLASHEQ or T_OTHEREQ */
    ST_DECL,      /* target: annot = value (value may be NULL) */
    ST_FOR,       /* for target in value: body */
    ST_IF,        /* if value: body else orelse (elif: orelse holds one ST_IF) */
    ST_RETURN,    /* value may be NULL */
    ST_PASS,
    ST_WHILE,     /* while value: body */
} StmtKind;

typedef struct Stmt {
    StmtKind kind;
    Loc loc;
    TokKind op;
    Expr *target, *annot, *value;
    int nbody; struct Stmt **body;
    int norelse; struct Stmt **orelse;
} Stmt;

typedef struct { const char *name; Loc loc; Expr *annot; Expr *dflt; } Param;

typedef struct {
    const char *name;
    Loc loc;              /* of the name */
    int ndecorators; Expr **decorators;   /* each an expression after '@' */
    int nparams; Param *params;
    Expr *returns;        /* '-> expr', or NULL */
    int nbody; Stmt **body;
} FuncDef;

typedef enum {
    TOP_FROM_IMPORT,  /* from module import name [as alias] */
    TOP_IMPORT,       /* import module [as alias] */
    TOP_DEF,          /* a def, decorated or not */
    TOP_STMT,         /* any other statement (the module docstring is one) */
} TopKind;

typedef struct {
    TopKind kind;
    Loc loc;
    const char *module, *name, *alias;   /* imports; unused parts NULL */
    FuncDef *def;
    Stmt *stmt;
} Top;

typedef struct {
    const SrcFile *file;
    const char *docstring;   /* NULL when there is none */
    int nitems; Top **items;
} Module;

/* Parses the token array. Syntax errors go to d (recovering at the next
 * statement where it can); the module returned holds what parsed. */
Module *parse(const SrcFile *f, Diag *d, Arena *a);
void ast_print(FILE *out, const Module *m);   /* --emit=ast: an indented tree */

/* ---- semantic analysis and lowering (dsl/sema.c) ---- */
typedef struct {
    const char *kernel;      /* only this kernel (NULL: all) */
    int ndefines;            /* -D NAME=VALUE: only configs where NAME has VALUE */
    const char **define_names;
    const int64_t *define_values;
} SemaOptions;

/* Checks every rule of docs/language.md and lowers each (kernel, config) that the
 * options select to IR, in source order. Returns NULL when there were errors
 * (all reported to d). */
IrModule *sema(const Module *m, Diag *d, const SemaOptions *opt);

#endif
