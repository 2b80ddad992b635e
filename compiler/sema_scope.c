/* sema_scope.c — symbols, and the names in scope while a kernel or fn is checked: a stack of
 * symbols, innermost last, with an index from each name to its innermost symbol (SymScope,
 * sema_int.h), so that a lookup costs O(1) however many names are declared. */
#include "sema_int.h"

#include <stdlib.h>
#include <string.h>

Sym *sym_new(SemaCtx *s, SymKind k, const char *name, Loc loc, Type *t)
{
    Sym *sym = ARENA_NEW(s->arena, Sym);
    sym->kind = k;
    sym->name = name;
    sym->loc = loc;
    sym->type = t ? t : ty_error();
    sym->cv.kind = CV_NONE;
    sym->id = s->comp->next_sym_id++;
    return sym;
}

struct ScopeSlot {
    const char *name;   /* NULL: empty slot */
    int pos;            /* position in SymScope.items of the innermost symbol, or -1 */
};

static uint64_t name_hash(const char *name) { return tl_hash_bytes(name, strlen(name), 0); }

/* The slot of a name: its own, or the empty one where it would go. */
static ScopeSlot *scope_slot(const SymScope *sc, const char *name)
{
    size_t mask = (size_t)sc->capslots - 1;
    for (size_t i = name_hash(name) & mask;; i = (i + 1) & mask)
        if (!sc->slots[i].name || strcmp(sc->slots[i].name, name) == 0)
            return &sc->slots[i];
}

void scope_push(SemaCtx *s) { ptrvec_push(&s->marks, (void *)(intptr_t)s->scope.len); }

void scope_pop(SemaCtx *s)
{
    if (s->marks.len == 0)
        return;
    SymScope *sc = &s->scope;
    int mark = (int)(intptr_t)s->marks.items[--s->marks.len];
    while (sc->len > mark) {
        sc->len--;
        scope_slot(sc, sc->items[sc->len]->name)->pos = sc->prev[sc->len];
    }
}

Sym *scope_lookup(SemaCtx *s, const char *name)
{
    if (!s->scope.capslots)
        return NULL;
    ScopeSlot *slot = scope_slot(&s->scope, name);
    return slot->name && slot->pos >= 0 ? s->scope.items[slot->pos] : NULL;
}

Sym *scope_lookup_innermost(SemaCtx *s, const char *name)
{
    int start = s->marks.len ? (int)(intptr_t)s->marks.items[s->marks.len - 1] : 0;
    if (!s->scope.capslots)
        return NULL;
    ScopeSlot *slot = scope_slot(&s->scope, name);
    return slot->name && slot->pos >= start ? s->scope.items[slot->pos] : NULL;
}

void scope_add(SemaCtx *s, Sym *sym)
{
    SymScope *sc = &s->scope;
    if (sc->len == sc->cap) {
        sc->cap = sc->cap ? sc->cap * 2 : 32;
        sc->items = tl_xrealloc(sc->items, sizeof(Sym *) * (size_t)sc->cap);
        sc->prev = tl_xrealloc(sc->prev, sizeof(int) * (size_t)sc->cap);
    }
    if ((sc->nslots + 1) * 2 > sc->capslots) {
        /* rehash into twice the room; slots keep their names even when unbound */
        ScopeSlot *old = sc->slots;
        int oldcap = sc->capslots;
        sc->capslots = oldcap ? oldcap * 2 : 64;
        sc->slots = tl_xcalloc((size_t)sc->capslots, sizeof(ScopeSlot));
        for (int i = 0; i < oldcap; i++)
            if (old[i].name)
                *scope_slot(sc, old[i].name) = old[i];
        free(old);
    }
    ScopeSlot *slot = scope_slot(sc, sym->name);
    if (!slot->name) {
        slot->name = sym->name;
        slot->pos = -1;
        sc->nslots++;
    }
    sc->items[sc->len] = sym;
    sc->prev[sc->len] = slot->pos;
    slot->pos = sc->len++;
}

void scope_free(SymScope *sc)
{
    free(sc->items);
    free(sc->prev);
    free(sc->slots);
    memset(sc, 0, sizeof *sc);
}
