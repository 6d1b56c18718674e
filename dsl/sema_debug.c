/* sema_debug.c: the debugging statements ph.device_print("prefix", x, ...)
 * (scalars, printed once per block) and ph.device_assert(cond, "message")
 * (a bool scalar or tile, every element of which must hold), each lowered
 * to its IR op with its source location and, for the assert, the file. */
#include "sema.h"

#include <string.h>

/* The string literal e, or NULL with an error naming what it should be. */
static const char *literal_string(Sema *s, const Expr *e, const char *what)
{
    if (e && e->kind == EX_STRING && e->name) return e->name;
    sema_err(s, e ? e->loc : (Loc){0, 0}, "expected a string literal for %s", what);
    return NULL;
}

static bool no_keywords(Sema *s, const Expr *e, const char *name)
{
    for (int i = 0; i < e->nitems; i++)
        if (e->items[i]->kind == EX_KEYWORD) {
            sema_err(s, e->items[i]->loc, "%s.%s takes no keyword arguments", s->alias, name);
            return false;
        }
    return true;
}

void sema_device_print(Sema *s, const Expr *e)
{
    if (!no_keywords(s, e, "device_print")) return;
    if (e->nitems < 1 || e->nitems > 1 + MAX_PRINT_VALUES) {
        sema_err(s, e->loc, "%s.device_print takes a prefix string and up to %d values, got %d arguments", s->alias,
                 MAX_PRINT_VALUES, e->nitems);
        return;
    }
    const char *prefix = literal_string(s, e->items[0], "the prefix of device_print");
    ValueId args[MAX_PRINT_VALUES];
    bool ok = prefix != NULL;
    for (int i = 1; i < e->nitems; i++) {
        Val v = sema_expr(s, e->items[i]);
        if (val_bad(v)) { ok = false; continue; }
        if (v.rank != 0 || (v.dt != DT_I32 && v.dt != DT_I64 && v.dt != DT_F32 && v.dt != DT_BOOL)) {
            char t[64];
            val_str(s, v, t, sizeof t);
            sema_err(s, e->items[i]->loc, "%s.device_print prints i32, f32 and bool scalars, got %s (print elements, "
                     "X[i, j], or a scalar made from the tile)", s->alias, t);
            ok = false;
            continue;
        }
        int none[2] = {1, 1};
        if (v.weak) v = sema_coerce_to(s, v, v.wfloat ? DT_F32 : DT_I32, 0, none, e->items[i]->loc, "device_print");
        ok = ok && !val_bad(v);
        args[i - 1] = v.v;
    }
    if (!ok || !s->emit) return;
    IrOp *op = ir_emit(s->f, s->blk, OP_DEVICE_PRINT, e->nitems - 1, args, 0, NULL);
    op->loc = e->loc;
    op->str = arena_strdup(s->f->arena, prefix);
}

void sema_device_assert(Sema *s, const Expr *e)
{
    if (!no_keywords(s, e, "device_assert")) return;
    if (e->nitems < 1 || e->nitems > 2) {
        sema_err(s, e->loc, "%s.device_assert takes a condition and a message string, got %d arguments", s->alias,
                 e->nitems);
        return;
    }
    const char *msg = e->nitems == 2 ? literal_string(s, e->items[1], "the message of device_assert") : "assertion failed";
    Val c = sema_expr(s, e->items[0]);
    if (val_bad(c) || !msg) return;
    if (c.dt != DT_BOOL) {
        char t[64];
        val_str(s, c, t, sizeof t);
        sema_err(s, e->items[0]->loc, "expected a bool condition (a scalar or a tile) for %s.device_assert, got %s",
                 s->alias, t);
        return;
    }
    if (!s->emit) return;
    IrOp *op = ir_emit(s->f, s->blk, OP_DEVICE_ASSERT, 1, &c.v, 0, NULL);
    op->loc = e->loc;
    op->str = arena_strdup(s->f->arena, msg);
    op->file = arena_strdup(s->f->arena, s->d->file ? s->d->file->path : "<input>");
}
