/* session_table.c - id generation and the id -> session entry hash table (session_table.h). */
#include "session_table.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "fwm_alloc.h"

bool fwm__session_id_generate(uint8_t id[FWM_SESSION_ID_BYTES]) {
    size_t got = 0;
    while (got < FWM_SESSION_ID_BYTES) {
        ssize_t n = getrandom(id + got, FWM_SESSION_ID_BYTES - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        got += (size_t)n;
    }
    return true;
}

void fwm__session_id_to_hex(const uint8_t id[FWM_SESSION_ID_BYTES], char hex[FWM_SESSION_HEX_SIZE]) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < FWM_SESSION_ID_BYTES; i++) {
        hex[2 * i] = digits[id[i] >> 4];
        hex[2 * i + 1] = digits[id[i] & 15];
    }
    hex[2 * FWM_SESSION_ID_BYTES] = '\0';
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool fwm__session_id_from_hex(const char *text, size_t length, uint8_t id[FWM_SESSION_ID_BYTES]) {
    if (length != 2 * FWM_SESSION_ID_BYTES) return false;
    for (size_t i = 0; i < FWM_SESSION_ID_BYTES; i++) {
        int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        id[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

fwm__session_entry *fwm__session_entry_new(void) {
    fwm__session_entry *entry = fwm__calloc(1, sizeof *entry);
    if (!entry) return NULL;
    if (!fwm__session_id_generate(entry->id)) {
        fwm__free(entry);
        return NULL;
    }
    fwm__session_id_to_hex(entry->id, entry->hex);
    atomic_init(&entry->listed_pos, UINT64_MAX);
    return entry;
}

void fwm__session_entry_note_pos(fwm__session_entry *entry) {
    uint64_t pos = entry->session ? fwm_session_position(entry->session) : UINT64_MAX;
    atomic_store_explicit(&entry->listed_pos, pos, memory_order_relaxed);
}

uint64_t fwm__session_entry_listed_pos(const fwm__session_entry *entry) {
    return atomic_load_explicit(&entry->listed_pos, memory_order_relaxed);
}

void fwm__session_start(const fwm_model *model, fwm__session_entry *entry, bool primed) {
    const float *logits = primed ? fwm_model_start_logits(model) : NULL;
    if (primed)
        fwm_session_prime(entry->session);
    else
        fwm_session_reset(entry->session);
    if (logits) {
        fwm_model_info info;
        fwm_model_get_info(model, &info);
        memcpy(entry->last_logits, logits, (size_t)info.vocab_size * sizeof(float));
    }
    entry->has_logits = logits != NULL;
}

void fwm__session_entry_free(fwm__session_entry *entry) {
    if (!entry) return;
    fwm_session_free(entry->session);
    fwm__free(entry->last_logits);
    fwm__free(entry);
}

/* The ids are uniformly random: their first 8 bytes are already a good hash. */
static size_t bucket_of(const fwm__session_table *table, const uint8_t id[FWM_SESSION_ID_BYTES]) {
    uint64_t h;
    memcpy(&h, id, sizeof h);
    return (size_t)h & (table->bucket_count - 1);
}

bool fwm__session_table_init(fwm__session_table *table) {
    table->bucket_count = 1024;
    table->count = 0;
    table->lru_head = table->lru_tail = NULL;
    table->buckets = fwm__calloc(table->bucket_count, sizeof *table->buckets);
    return table->buckets != NULL;
}

void fwm__session_table_release(fwm__session_table *table) {
    fwm__free(table->buckets);
    table->buckets = NULL;
    table->bucket_count = table->count = 0;
}

void fwm__session_table_lru_touch(fwm__session_table *t, fwm__session_entry *e) {
    if (t->lru_tail == e) return;
    fwm__session_table_lru_remove(t, e);
    e->lru_prev = t->lru_tail;
    e->lru_next = NULL;
    if (t->lru_tail) t->lru_tail->lru_next = e;
    else t->lru_head = e;
    t->lru_tail = e;
}

void fwm__session_table_lru_remove(fwm__session_table *t, fwm__session_entry *e) {
    if (!e->lru_prev && t->lru_head != e) return; /* not on the list */
    if (e->lru_prev) e->lru_prev->lru_next = e->lru_next;
    else t->lru_head = e->lru_next;
    if (e->lru_next) e->lru_next->lru_prev = e->lru_prev;
    else t->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static bool grow(fwm__session_table *table) {
    size_t count = table->bucket_count * 2;
    fwm__session_entry **buckets = fwm__calloc(count, sizeof *buckets);
    if (!buckets) return false;
    fwm__session_entry **old = table->buckets;
    size_t old_count = table->bucket_count;
    table->buckets = buckets;
    table->bucket_count = count;
    for (size_t b = 0; b < old_count; b++) {
        fwm__session_entry *e = old[b];
        while (e) {
            fwm__session_entry *next = e->bucket_next;
            size_t nb = bucket_of(table, e->id);
            e->bucket_next = buckets[nb];
            buckets[nb] = e;
            e = next;
        }
    }
    fwm__free(old);
    return true;
}

fwm__session_entry *fwm__session_table_find(const fwm__session_table *table,
                                            const uint8_t id[FWM_SESSION_ID_BYTES]) {
    for (fwm__session_entry *e = table->buckets[bucket_of(table, id)]; e; e = e->bucket_next)
        if (memcmp(e->id, id, FWM_SESSION_ID_BYTES) == 0) return e;
    return NULL;
}

bool fwm__session_table_insert(fwm__session_table *table, fwm__session_entry *entry) {
    if (fwm__session_table_find(table, entry->id)) return false;
    if (table->count + 1 > table->bucket_count && !grow(table)) return false;
    size_t b = bucket_of(table, entry->id);
    entry->bucket_next = table->buckets[b];
    table->buckets[b] = entry;
    entry->in_table = true;
    table->count++;
    return true;
}

void fwm__session_table_remove(fwm__session_table *table, fwm__session_entry *entry) {
    if (!entry->in_table) return;
    for (fwm__session_entry **link = &table->buckets[bucket_of(table, entry->id)]; *link;
         link = &(*link)->bucket_next) {
        if (*link == entry) {
            *link = entry->bucket_next;
            entry->bucket_next = NULL;
            entry->in_table = false;
            table->count--;
            return;
        }
    }
}

void fwm__session_table_each(fwm__session_table *table,
                             void (*visit)(fwm__session_entry *entry, void *user), void *user) {
    for (size_t b = 0; b < table->bucket_count; b++) {
        fwm__session_entry *e = table->buckets[b];
        while (e) {
            fwm__session_entry *next = e->bucket_next; /* visit may unlink e */
            visit(e, user);
            e = next;
        }
    }
}
