/* session_record.c - encoding and checked decoding of meta, log and snapshot records
 * (session_record.h). Every record: magic (4 bytes), version (4), body, XXH64 of all before (8).
 */
#include "session_record.h"

#include <string.h>

#include "xxhash64.h"

#define META_MAGIC 0x4154454du     /* "META" */
#define LOG_MAGIC 0x474f4c57u      /* "WLOG" */
#define SNAPSHOT_MAGIC 0x50414e53u /* "SNAP" */
#define RECORD_VERSION 1u
#define SEED 0x66776d2d73746f72ull /* "fwm-stor" */
#define HEADER 8u
#define TRAILER 8u

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void seal(uint8_t *out, size_t total) {
    put64(out + total - TRAILER, fwm__xxh64(out, total - TRAILER, SEED));
}

/* Magic, version and checksum of a whole record. */
static bool intact(const uint8_t *p, size_t length, uint32_t magic) {
    return length >= HEADER + TRAILER && get32(p) == magic && get32(p + 4) == RECORD_VERSION &&
           get64(p + length - TRAILER) == fwm__xxh64(p, length - TRAILER, SEED);
}

/* ---- meta ---- */

void fwm__meta_encode(const fwm__session_meta *m, uint8_t out[FWM_META_RECORD_BYTES]) {
    memset(out, 0, FWM_META_RECORD_BYTES);
    put32(out, META_MAGIC);
    put32(out + 4, RECORD_VERSION);
    uint8_t *p = out + HEADER;
    put64(p, m->fingerprint), p += 8;
    put32(p, m->topk), p += 4;
    put64(p, m->pos), p += 8;
    put64(p, m->created_ms), p += 8;
    put64(p, m->last_used_ms), p += 8;
    put64(p, m->log_base), p += 8;
    *p++ = m->has_snapshot ? 1 : 0;
    size_t name = strnlen(m->model_name, FWM_RECORD_MODEL_NAME_MAX);
    *p++ = (uint8_t)name;
    memcpy(p, m->model_name, name);
    seal(out, FWM_META_RECORD_BYTES);
}

bool fwm__meta_decode(const void *bytes, size_t length, fwm__session_meta *m) {
    const uint8_t *p = bytes;
    if (length != FWM_META_RECORD_BYTES || !intact(p, length, META_MAGIC)) return false;
    memset(m, 0, sizeof *m);
    p += HEADER;
    m->fingerprint = get64(p), p += 8;
    m->topk = get32(p), p += 4;
    m->pos = get64(p), p += 8;
    m->created_ms = get64(p), p += 8;
    m->last_used_ms = get64(p), p += 8;
    m->log_base = get64(p), p += 8;
    if (*p > 1) return false;
    m->has_snapshot = *p++ == 1;
    size_t name = *p++;
    if (name > FWM_RECORD_MODEL_NAME_MAX) return false;
    memcpy(m->model_name, p, name);
    m->model_name[name] = '\0';
    return true;
}

/* ---- log ---- */

size_t fwm__log_record_bytes(size_t count) {
    return HEADER + 4 + 4 + 4 * count + TRAILER;
}

void fwm__log_record_encode(fwm__log_op op, const uint32_t *tokens, size_t count, uint8_t *out) {
    put32(out, LOG_MAGIC);
    put32(out + 4, RECORD_VERSION);
    put32(out + HEADER, (uint32_t)op);
    put32(out + HEADER + 4, (uint32_t)count);
    for (size_t i = 0; i < count; i++) put32(out + HEADER + 8 + 4 * i, tokens[i]);
    seal(out, fwm__log_record_bytes(count));
}

bool fwm__log_record_decode(const void *bytes, size_t length, fwm__log_op *op, const uint8_t **tokens,
                            size_t *count) {
    const uint8_t *p = bytes;
    if (length < fwm__log_record_bytes(0) || !intact(p, length, LOG_MAGIC)) return false;
    uint32_t kind = get32(p + HEADER), n = get32(p + HEADER + 4);
    if ((kind != FWM_LOG_STEP && kind != FWM_LOG_RESET && kind != FWM_LOG_RESET_PRIMED) ||
        length != fwm__log_record_bytes(n))
        return false;
    if (kind != FWM_LOG_STEP && n != 0) return false;
    *op = (fwm__log_op)kind;
    *tokens = p + HEADER + 8;
    *count = n;
    return true;
}

uint32_t fwm__log_token(const uint8_t *tokens, size_t index) {
    return get32(tokens + 4 * index);
}

/* ---- snapshot ---- */

#define SNAPSHOT_FIELDS 12u /* blob bytes (4), vocab (4), has_logits (4) */

size_t fwm__snapshot_record_bytes(size_t blob_bytes, uint32_t vocab, bool has_logits) {
    return HEADER + SNAPSHOT_FIELDS + (has_logits ? 4u * vocab : 0u) + blob_bytes + TRAILER;
}

void fwm__snapshot_record_begin(uint8_t *out, size_t blob_bytes, uint32_t vocab, bool has_logits,
                                const float *logits, uint8_t **blob_at) {
    put32(out, SNAPSHOT_MAGIC);
    put32(out + 4, RECORD_VERSION);
    put32(out + HEADER, (uint32_t)blob_bytes);
    put32(out + HEADER + 4, vocab);
    put32(out + HEADER + 8, has_logits ? 1u : 0u);
    uint8_t *p = out + HEADER + SNAPSHOT_FIELDS;
    if (has_logits) {
        for (uint32_t i = 0; i < vocab; i++) {
            uint32_t bits;
            memcpy(&bits, &logits[i], 4);
            put32(p + 4 * i, bits);
        }
        p += 4u * vocab;
    }
    *blob_at = p;
}

void fwm__snapshot_record_seal(uint8_t *out, size_t total) {
    seal(out, total);
}

bool fwm__snapshot_record_decode(const void *bytes, size_t length, fwm__snapshot_view *v) {
    const uint8_t *p = bytes;
    if (length < HEADER + SNAPSHOT_FIELDS + TRAILER || !intact(p, length, SNAPSHOT_MAGIC)) return false;
    uint32_t blob = get32(p + HEADER), vocab = get32(p + HEADER + 4), has = get32(p + HEADER + 8);
    if (has > 1 || length != fwm__snapshot_record_bytes(blob, vocab, has == 1)) return false;
    v->blob_bytes = blob;
    v->vocab = vocab;
    v->has_logits = has == 1;
    v->logits = p + HEADER + SNAPSHOT_FIELDS;
    v->blob = v->logits + (v->has_logits ? 4u * vocab : 0u);
    return true;
}
