/* test_session_table.c - session ids (random, hex round trip, strict parsing) and the id -> entry
 * table (insert, find, remove, growth, removal while walking). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sessions/session_table.h"

static void test_ids(void) {
    uint8_t a[16], b[16], back[16];
    CHECK(fwm__session_id_generate(a));
    CHECK(fwm__session_id_generate(b));
    CHECK(memcmp(a, b, 16) != 0);
    char hex[FWM_SESSION_HEX_SIZE];
    fwm__session_id_to_hex(a, hex);
    CHECK_U64(strlen(hex), 32);
    CHECK(fwm__session_id_from_hex(hex, 32, back));
    CHECK(memcmp(a, back, 16) == 0);
    const uint8_t known[16] = {0x00, 0x01, 0xab, 0xff, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7e};
    fwm__session_id_to_hex(known, hex);
    CHECK_STR(hex, "0001abff10000000000000000000007e");
    CHECK(fwm__session_id_from_hex("0001ABFF10000000000000000000007E", 32, back));
    CHECK(memcmp(known, back, 16) == 0);
    CHECK(!fwm__session_id_from_hex("0001abff10000000000000000000007", 31, back));
    CHECK(!fwm__session_id_from_hex("0001abff10000000000000000000007e0", 33, back));
    CHECK(!fwm__session_id_from_hex("0001abff1000000000000000000000g0", 32, back));
    CHECK(!fwm__session_id_from_hex("", 0, back));
}

static void count_and_drop_odd(fwm__session_entry *e, void *user) {
    void **ctx = user;
    size_t *count = ctx[0];
    fwm__session_table *table = ctx[1];
    (*count)++;
    if (e->default_topk % 2) {
        fwm__session_table_remove(table, e);
        fwm__session_entry_free(e);
    }
}

static void free_all(fwm__session_entry *e, void *user) {
    fwm__session_table_remove(user, e);
    fwm__session_entry_free(e);
}

static void test_table(void) {
    fwm__session_table table;
    CHECK(fwm__session_table_init(&table));
    enum { N = 10000 };
    fwm__session_entry **entries = calloc(N, sizeof *entries);
    for (int i = 0; i < N; i++) {
        entries[i] = fwm__session_entry_new();
        CHECK(entries[i] != NULL);
        entries[i]->default_topk = (uint32_t)i;
        CHECK(fwm__session_table_insert(&table, entries[i]));
    }
    CHECK_U64(table.count, N);
    CHECK(!fwm__session_table_insert(&table, entries[5])); /* already there */
    for (int i = 0; i < N; i++) CHECK(fwm__session_table_find(&table, entries[i]->id) == entries[i]);
    uint8_t absent[16] = {0};
    CHECK(fwm__session_table_find(&table, absent) == NULL);
    fwm__session_table_remove(&table, entries[7]);
    CHECK(fwm__session_table_find(&table, entries[7]->id) == NULL);
    CHECK_U64(table.count, N - 1);
    fwm__session_table_remove(&table, entries[7]); /* no-op */
    CHECK_U64(table.count, N - 1);
    fwm__session_entry_free(entries[7]);
    size_t visited = 0;
    void *ctx[2] = {&visited, &table};
    fwm__session_table_each(&table, count_and_drop_odd, ctx);
    CHECK_U64(visited, N - 1);
    CHECK_U64(table.count, N / 2);
    for (int i = 0; i < N; i += 2) CHECK(fwm__session_table_find(&table, entries[i]->id) == entries[i]);
    fwm__session_table_each(&table, free_all, &table);
    CHECK_U64(table.count, 0);
    fwm__session_table_release(&table);
    fwm__session_entry_free(NULL);
    free(entries);
}

int main(void) {
    test_ids();
    test_table();
    return check_finish("test_session_table");
}
