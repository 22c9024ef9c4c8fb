/* session_list.c - the sessions method: every session, page by page, in id order, from the resident
 * table or the store (handlers.h). */
#include "handlers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fwm_alloc.h"
#include "sessions/durable_session.h"
#include "store/session_record.h"
#include "tiering/lookup.h"

typedef struct listing {
    fwm__request *r;
    msgpack_packer *pk;
    size_t limit, count;
    uint8_t last[FWM_SESSION_ID_BYTES];
    bool more;
} listing;

static void pack_listed(listing *l, const uint8_t *id, const char *model, uint64_t pos, uint64_t last_used_ms,
                        bool resident) {
    char hex[FWM_SESSION_HEX_SIZE];
    fwm__session_id_to_hex(id, hex);
    msgpack_pack_map(l->pk, 5);
    key_str(l->pk, "session", hex);
    key_str(l->pk, "model", model);
    key(l->pk, "pos");
    if (pos == UINT64_MAX) msgpack_pack_nil(l->pk); /* no state yet (never, once a session answered) */
    else msgpack_pack_uint64(l->pk, pos);
    key_u64(l->pk, "last_used_ms", last_used_ms);
    key_bool(l->pk, "resident", resident);
    memcpy(l->last, id, FWM_SESSION_ID_BYTES);
    l->count++;
}

/* Stored sessions: the meta record, with the resident entry's table presence. */
static bool list_stored(void *user, const uint8_t id[FWM_STORE_ID_BYTES], const void *bytes, size_t length) {
    listing *l = user;
    if (l->count == l->limit) {
        l->more = true;
        return false;
    }
    fwm__session_meta meta;
    if (!fwm__meta_decode(bytes, length, &meta)) {
        memset(&meta, 0, sizeof meta);
        snprintf(meta.model_name, sizeof meta.model_name, "(damaged meta record)");
    }
    /* A resident session: where it is now and when it was last used, not as of its last record. */
    fwm__session_entry *e = fwm__session_table_find(&l->r->s->sessions, id);
    uint64_t pos = e ? fwm__session_entry_listed_pos(e) : UINT64_MAX;
    uint64_t last_used_ms = meta.last_used_ms;
    if (e) {
        uint64_t now = now_ms(), idle = now > e->last_used_ms ? now - e->last_used_ms : 0;
        last_used_ms = fwm__wall_ms() - idle;
    }
    pack_listed(l, id, meta.model_name, pos != UINT64_MAX ? pos : meta.pos, last_used_ms, e != NULL);
    return true;
}

static int compare_ids(const void *a, const void *b) {
    return memcmp((*(fwm__session_entry *const *)a)->id, (*(fwm__session_entry *const *)b)->id, FWM_SESSION_ID_BYTES);
}

typedef struct gather {
    fwm__session_entry **entries;
    size_t count;
    const uint8_t *after;
} gather;

static void gather_one(fwm__session_entry *e, void *user) {
    gather *g = user;
    if (!g->after || memcmp(e->id, g->after, FWM_SESSION_ID_BYTES) > 0) g->entries[g->count++] = e;
}

bool fwm__method_sessions(fwm__request *r) {
    uint64_t limit = 100;
    const char *after_text;
    size_t after_length;
    uint8_t after[FWM_SESSION_ID_BYTES];
    int has_after = fwm__rpc_arg_string(&r->call, "after", false, &after_text, &after_length, &r->failure);
    if (has_after < 0 || fwm__rpc_arg_uint(&r->call, "limit", false, 1000, &limit, &r->failure) < 0) return false;
    if (has_after && !fwm__session_id_from_hex(after_text, after_length, after))
        return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "argument 'after' must be a session id (32 hex digits)");
    if (limit == 0) return fwm__rpc_fail(&r->failure, FWM_RPC_BAD_PARAMS, "argument 'limit' must be 1..1000");
    fwm__server *s = r->s;
    const fwm__lookup *answer = NULL;
    if (fwm__lookup_remote(s) && !(answer = fwm__lookup_ready(r->c, FWM_LOOKUP_LIST, NULL))) {
        if (!fwm__lookup_park_list(r->c, has_after ? after : NULL, (size_t)limit))
            return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory listing sessions");
        return false; /* parked: the page is read off the loop */
    }
    gather g = {NULL, 0, has_after ? after : NULL};
    if (!s->store) { /* memory only: the resident table, sorted */
        g.entries = fwm__malloc((s->sessions.count ? s->sessions.count : 1) * sizeof *g.entries);
        if (!g.entries) return fwm__rpc_fail(&r->failure, FWM_RPC_INTERNAL, "out of memory listing sessions");
        fwm__session_table_each(&s->sessions, gather_one, &g);
        qsort(g.entries, g.count, sizeof *g.entries, compare_ids);
    }
    msgpack_packer pk;
    if (!fwm__request_begin_response(r, &pk)) {
        fwm__free(g.entries);
        return true;
    }
    msgpack_sbuffer items;
    msgpack_sbuffer_init(&items);
    msgpack_packer ipk;
    msgpack_packer_init(&ipk, &items, msgpack_sbuffer_write);
    listing l = {r, &ipk, (size_t)limit, 0, {0}, false};
    fwm__store_error error = {0};
    bool ok = true;
    if (answer && answer->timed_out) {
        ok = false;
        snprintf(error.message, sizeof error.message, "the store did not answer within %u ms", FWM_LOOKUP_TIMEOUT_MS);
    } else if (answer) {
        for (size_t i = 0; i < answer->listed_count; i++)
            if (!list_stored(&l, answer->listed[i].id, answer->listed[i].meta, answer->listed[i].meta_length)) break;
        ok = answer->list_status == FWM_STORE_OK;
        if (!ok) snprintf(error.message, sizeof error.message, "%s", answer->error);
    } else if (s->store) {
        ok = s->store->backend->list(s->store, has_after ? after : NULL, list_stored, &l, &error) == FWM_STORE_OK;
    } else {
        uint64_t wall = fwm__wall_ms(), now = now_ms();
        for (size_t i = 0; i < g.count && l.count < l.limit; i++) {
            fwm__session_entry *e = g.entries[i];
            uint64_t idle = now > e->last_used_ms ? now - e->last_used_ms : 0;
            pack_listed(&l, e->id, s->models[e->model_index].name, fwm__session_entry_listed_pos(e), wall - idle,
                        true);
        }
        l.more = l.count < g.count;
    }
    fwm__free(g.entries);
    msgpack_pack_map(&pk, 3);
    key(&pk, "sessions");
    msgpack_pack_array(&pk, l.count);
    msgpack_pack_bin_body(&pk, items.data, items.size); /* the items, already packed */
    key(&pk, "next");
    if (l.more) {
        char hex[FWM_SESSION_HEX_SIZE];
        fwm__session_id_to_hex(l.last, hex);
        fwm__rpc_pack_cstr(&pk, hex);
    } else {
        msgpack_pack_nil(&pk);
    }
    key(&pk, "error");
    if (ok) msgpack_pack_nil(&pk);
    else fwm__rpc_pack_cstr(&pk, error.message);
    msgpack_sbuffer_destroy(&items);
    return true;
}
