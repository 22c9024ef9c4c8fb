/* test_store.c - the session store's records and its LMDB backend, without a server.
 *
 * Records: every field survives a round trip; flipping any single bit of an encoded record, or
 * cutting it at any length, is detected (the checksum, the shape checks). Store: meta, snapshot and
 * log writes are visible after commit and not after abort; log trimming and truncation delete
 * exactly the asked range; listing pages in id order; a reopened store has everything committed; a
 * second open of the same folder is refused as busy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "store/session_record.h"
#include "store/store.h"

static void test_meta_record(void) {
    fwm__session_meta meta = {0}, back;
    meta.fingerprint = 0x0123456789abcdefull;
    snprintf(meta.model_name, sizeof meta.model_name, "fwm-catbabi-10k-lm");
    meta.topk = 7;
    meta.pos = 123456789012ull;
    meta.created_ms = 1795376923448ull;
    meta.last_used_ms = 1795376999999ull;
    meta.log_base = 42;
    meta.has_snapshot = true;
    uint8_t bytes[FWM_META_RECORD_BYTES];
    fwm__meta_encode(&meta, bytes);
    CHECK(fwm__meta_decode(bytes, sizeof bytes, &back));
    CHECK(back.fingerprint == meta.fingerprint && back.topk == 7 && back.pos == meta.pos);
    CHECK(back.created_ms == meta.created_ms && back.last_used_ms == meta.last_used_ms);
    CHECK(back.log_base == 42 && back.has_snapshot && strcmp(back.model_name, meta.model_name) == 0);
    for (size_t i = 0; i < sizeof bytes; i++)
        for (int bit = 0; bit < 8; bit++) {
            bytes[i] ^= (uint8_t)(1u << bit);
            CHECK(!fwm__meta_decode(bytes, sizeof bytes, &back));
            bytes[i] ^= (uint8_t)(1u << bit);
        }
    for (size_t n = 0; n < sizeof bytes; n++) CHECK(!fwm__meta_decode(bytes, n, &back));
}

static void test_log_record(void) {
    uint32_t tokens[5] = {1, 17, 179, 0, 65535};
    size_t size = fwm__log_record_bytes(5);
    uint8_t *bytes = malloc(size);
    fwm__log_record_encode(FWM_LOG_STEP, tokens, 5, bytes);
    fwm__log_op op;
    const uint8_t *raw;
    size_t count;
    CHECK(fwm__log_record_decode(bytes, size, &op, &raw, &count));
    CHECK(op == FWM_LOG_STEP && count == 5);
    for (size_t i = 0; i < 5; i++) CHECK(fwm__log_token(raw, i) == tokens[i]);
    for (size_t i = 0; i < size; i++)
        for (int bit = 0; bit < 8; bit++) {
            bytes[i] ^= (uint8_t)(1u << bit);
            CHECK(!fwm__log_record_decode(bytes, size, &op, &raw, &count));
            bytes[i] ^= (uint8_t)(1u << bit);
        }
    for (size_t n = 0; n < size; n++) CHECK(!fwm__log_record_decode(bytes, n, &op, &raw, &count));
    uint8_t reset[64];
    fwm__log_record_encode(FWM_LOG_RESET, NULL, 0, reset);
    CHECK(fwm__log_record_decode(reset, fwm__log_record_bytes(0), &op, &raw, &count));
    CHECK(op == FWM_LOG_RESET && count == 0);
    free(bytes);
}

static void test_snapshot_record(void) {
    const uint32_t vocab = 6;
    const float logits[6] = {0.5f, -1.25f, 3.0f, 1e-20f, -0.0f, 7.75f};
    const uint8_t blob[9] = {9, 8, 7, 6, 5, 4, 3, 2, 1};
    for (int with = 0; with < 2; with++) {
        size_t size = fwm__snapshot_record_bytes(sizeof blob, vocab, with);
        uint8_t *bytes = malloc(size), *at;
        fwm__snapshot_record_begin(bytes, sizeof blob, vocab, with, logits, &at);
        memcpy(at, blob, sizeof blob);
        fwm__snapshot_record_seal(bytes, size);
        fwm__snapshot_view v;
        CHECK(fwm__snapshot_record_decode(bytes, size, &v));
        CHECK(v.blob_bytes == sizeof blob && memcmp(v.blob, blob, sizeof blob) == 0 && v.has_logits == with);
        if (with) CHECK(memcmp(v.logits, logits, sizeof logits) == 0); /* little-endian host */
        for (size_t i = 0; i < size; i++) {
            bytes[i] ^= 0x10;
            CHECK(!fwm__snapshot_record_decode(bytes, size, &v));
            bytes[i] ^= 0x10;
        }
        for (size_t n = 0; n < size; n++) CHECK(!fwm__snapshot_record_decode(bytes, n, &v));
        free(bytes);
    }
}

/* ---- the LMDB store ---- */

typedef struct seen {
    uint64_t seqs[64];
    char values[64][16];
    size_t count;
} seen;

static bool collect_log(void *user, uint64_t seq, const void *bytes, size_t length) {
    seen *s = user;
    s->seqs[s->count] = seq;
    snprintf(s->values[s->count], sizeof s->values[0], "%.*s", (int)length, (const char *)bytes);
    s->count++;
    return true;
}

static bool collect_ids(void *user, const uint8_t id[FWM_STORE_ID_BYTES], const void *meta, size_t length) {
    (void)meta;
    (void)length;
    seen *s = user;
    s->seqs[s->count++] = id[0];
    return s->count < 3; /* a page of three */
}

static void id_of(uint8_t id[FWM_STORE_ID_BYTES], uint8_t first) {
    memset(id, 0x5a, FWM_STORE_ID_BYTES);
    id[0] = first;
}

static void test_lmdb(const char *dir) {
    fwm__store *st;
    fwm__store_error error;
    CHECK(fwm__store_open(dir, NULL, &st, &error) == FWM_STORE_OK);
    const fwm__store_backend *b = st->backend;
    fwm__store *second;
    CHECK(fwm__store_open(dir, NULL, &second, &error) == FWM_STORE_BUSY);
    CHECK(strstr(error.message, "in use by another fwm-serve") != NULL);

    uint8_t a[16], c[16], ids[5][16];
    id_of(a, 10);
    id_of(c, 11);
    CHECK(b->begin(st, &error) == FWM_STORE_OK);
    CHECK(b->put_meta(st, a, "meta-a", 6, &error) == FWM_STORE_OK);
    CHECK(b->put_snapshot(st, a, "snap-a", 6, &error) == FWM_STORE_OK);
    char value[16];
    for (uint64_t seq = 0; seq < 6; seq++) {
        snprintf(value, sizeof value, "a%llu", (unsigned long long)seq);
        CHECK(b->append_log(st, a, seq, value, strlen(value), &error) == FWM_STORE_OK);
        snprintf(value, sizeof value, "c%llu", (unsigned long long)seq);
        CHECK(b->append_log(st, c, seq, value, strlen(value), &error) == FWM_STORE_OK);
    }
    CHECK(b->put_meta(st, c, "meta-c", 6, &error) == FWM_STORE_OK);
    CHECK(b->commit(st, &error) == FWM_STORE_OK);
    /* an aborted batch leaves nothing */
    CHECK(b->begin(st, &error) == FWM_STORE_OK);
    CHECK(b->put_meta(st, a, "changed", 7, &error) == FWM_STORE_OK);
    CHECK(b->remove(st, c, &error) == FWM_STORE_OK);
    b->abort(st);
    char meta[32];
    size_t length = 0;
    CHECK(b->get_meta(st, a, meta, sizeof meta, &length, &error) == FWM_STORE_OK);
    CHECK(length == 6 && memcmp(meta, "meta-a", 6) == 0);
    CHECK(b->get_meta(st, c, meta, sizeof meta, &length, &error) == FWM_STORE_OK);
    void *buffer = NULL;
    size_t capacity = 0;
    CHECK(b->get_snapshot(st, a, &buffer, &capacity, &length, &error) == FWM_STORE_OK);
    CHECK(length == 6 && memcmp(buffer, "snap-a", 6) == 0);
    CHECK(b->get_snapshot(st, c, &buffer, &capacity, &length, &error) == FWM_STORE_NOT_FOUND);
    seen log = {0};
    CHECK(b->read_log(st, a, 2, collect_log, &log, &error) == FWM_STORE_OK);
    CHECK(log.count == 4 && log.seqs[0] == 2 && log.seqs[3] == 5 && strcmp(log.values[0], "a2") == 0);
    /* trim below 3 and truncate from 5: a's records 3 and 4 remain; c untouched */
    CHECK(b->begin(st, &error) == FWM_STORE_OK);
    CHECK(b->delete_log(st, a, 0, 3, &error) == FWM_STORE_OK);
    CHECK(b->delete_log(st, a, 5, UINT64_MAX, &error) == FWM_STORE_OK);
    CHECK(b->commit(st, &error) == FWM_STORE_OK);
    memset(&log, 0, sizeof log);
    CHECK(b->read_log(st, a, 0, collect_log, &log, &error) == FWM_STORE_OK);
    CHECK(log.count == 2 && log.seqs[0] == 3 && log.seqs[1] == 4);
    memset(&log, 0, sizeof log);
    CHECK(b->read_log(st, c, 0, collect_log, &log, &error) == FWM_STORE_OK);
    CHECK(log.count == 6 && strcmp(log.values[5], "c5") == 0);
    /* remove deletes meta, snapshot and log; listing pages in id order */
    CHECK(b->begin(st, &error) == FWM_STORE_OK);
    CHECK(b->remove(st, a, &error) == FWM_STORE_OK);
    for (int i = 0; i < 5; i++) {
        id_of(ids[i], (uint8_t)(50 - 10 * i)); /* 50, 40, 30, 20, 10 */
        CHECK(b->put_meta(st, ids[i], "m", 1, &error) == FWM_STORE_OK);
    }
    CHECK(b->commit(st, &error) == FWM_STORE_OK);
    memset(&log, 0, sizeof log);
    CHECK(b->read_log(st, a, 0, collect_log, &log, &error) == FWM_STORE_OK && log.count == 0);
    CHECK(b->get_snapshot(st, a, &buffer, &capacity, &length, &error) == FWM_STORE_NOT_FOUND);
    seen page = {0};
    CHECK(b->list(st, NULL, collect_ids, &page, &error) == FWM_STORE_OK);
    CHECK(page.count == 3 && page.seqs[0] == 10 && page.seqs[1] == 11 && page.seqs[2] == 20);
    uint8_t after[16];
    id_of(after, 20);
    memset(&page, 0, sizeof page);
    CHECK(b->list(st, after, collect_ids, &page, &error) == FWM_STORE_OK);
    CHECK(page.count == 3 && page.seqs[0] == 30 && page.seqs[2] == 50);
    fwm__store_info info;
    CHECK(b->info(st, &info, &error) == FWM_STORE_OK && info.sessions == 6 && info.file_bytes > 0);
    CHECK(b->sync(st, &error) == FWM_STORE_OK);
    fwm__store_close(st);
    /* reopened: what was committed is there */
    CHECK(fwm__store_open(dir, NULL, &st, &error) == FWM_STORE_OK);
    CHECK(st->backend->get_meta(st, c, meta, sizeof meta, &length, &error) == FWM_STORE_OK);
    CHECK(length == 6 && memcmp(meta, "meta-c", 6) == 0);
    CHECK(st->backend->info(st, &info, &error) == FWM_STORE_OK && info.sessions == 6);
    fwm__store_close(st);
    free(buffer);
}

int main(void) {
    test_meta_record();
    test_log_record();
    test_snapshot_record();
    char dir[] = "/tmp/fwm-test-store-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    test_lmdb(dir);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_finish("test_store");
}
