/* test_utf8.c - common/fwm_utf8.h: what is valid UTF-8 (RFC 3629), cutting at character
 * boundaries, dropping a cut character, and replacing invalid bytes with U+FFFD; plus a random
 * sweep: whatever the bytes, every cut and every sanitized copy is valid. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fwm_utf8.h"

static bool valid(const char *s) { return fwm__utf8_valid(s, strlen(s)); }

static void test_valid(void) {
    CHECK(valid(""));
    CHECK(valid("mary went to the garden ."));
    CHECK(valid("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80")); /* 2, 3, 4 bytes */
    CHECK(valid("\xF4\x8F\xBF\xBF"));                          /* U+10FFFF */
    CHECK(!valid("\xC3"));                                     /* truncated */
    CHECK(!valid("\xA9"));                                     /* stray continuation */
    CHECK(!valid("\xC0\xAF"));                                 /* overlong '/' */
    CHECK(!valid("\xE0\x80\xAF"));                             /* overlong */
    CHECK(!valid("\xED\xA0\x80"));                             /* surrogate U+D800 */
    CHECK(!valid("\xF4\x90\x80\x80"));                         /* above U+10FFFF */
    CHECK(!valid("\xF5\x80\x80\x80"));
    CHECK(!valid("\xFF"));
    CHECK(!valid("\xE2\x82"));
    CHECK_INT(fwm__utf8_sequence("\xE2\x82\xAC", 3), 3);
    CHECK_INT(fwm__utf8_sequence("\xE2\x82\xAC", 2), 0);
}

static void test_cut(void) {
    const char *s = "a\xC3\xA9\xE2\x82\xAC"; /* a é € : boundaries at 0, 1, 3, 6 */
    size_t n = strlen(s);
    size_t expect[] = {0, 1, 1, 3, 3, 3, 6, 6};
    for (size_t max = 0; max <= 7; max++) CHECK_INT(fwm__utf8_cut(s, n, max), expect[max]);
    CHECK_INT(fwm__utf8_cut("\x80\x80\x80\x80\x80", 5, 4), 4); /* no boundary near: a byte cut */
    CHECK_INT(fwm__utf8_complete(s, 6), 6);
    CHECK_INT(fwm__utf8_complete(s, 5), 3);
    CHECK_INT(fwm__utf8_complete(s, 4), 3);
    CHECK_INT(fwm__utf8_complete(s, 3), 3);
    CHECK_INT(fwm__utf8_complete(s, 2), 1);
    CHECK_INT(fwm__utf8_complete("", 0), 0);
    CHECK_INT(fwm__utf8_complete("ab\xF0\x9F\x98", 5), 2);
    CHECK_INT(fwm__utf8_complete("\xA9\xA9", 2), 2); /* stray bytes are not a cut: sanitize them */
}

static void test_sanitize(void) {
    char out[64];
    CHECK_INT(fwm__utf8_sanitize(out, sizeof out, "ok \xC3\xA9", 5), 5);
    CHECK_STR(out, "ok \xC3\xA9");
    CHECK_INT(fwm__utf8_sanitize(out, sizeof out, "a\xFF" "b\xC3", 4), 8);
    CHECK_STR(out, "a\xEF\xBF\xBD" "b\xEF\xBF\xBD");
    CHECK_INT(fwm__utf8_sanitized_length("a\xFF" "b\xC3", 4), 8);
    CHECK_INT(fwm__utf8_sanitize(out, 5, "a\xFF" "b", 3), 4); /* room for 4 bytes: a + U+FFFD */
    CHECK_STR(out, "a\xEF\xBF\xBD");
    CHECK_INT(fwm__utf8_sanitize(out, 3, "a\xFF", 2), 1); /* U+FFFD does not fit: stop before it */
    CHECK_STR(out, "a");
    CHECK_INT(fwm__utf8_sanitize(out, 1, "abc", 3), 0);
    CHECK_STR(out, "");
}

static void test_random_bytes(void) {
    srand(7);
    static const unsigned char pool[] = {'a', ' ', 0x80, 0xBF, 0xC2, 0xC3, 0xE0, 0xE2, 0xED, 0xF0, 0xF4, 0xFF,
                                         0xA9, 0x82};
    char text[40], out[160];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)rand() % sizeof text;
        for (size_t i = 0; i < n; i++) text[i] = (char)pool[rand() % (int)sizeof pool];
        size_t w = fwm__utf8_sanitize(out, sizeof out, text, n);
        CHECK(fwm__utf8_valid(out, w));
        CHECK_INT(w, fwm__utf8_sanitized_length(text, n));
        if (fwm__utf8_valid(text, n)) {
            CHECK(w == n && memcmp(out, text, n) == 0); /* valid text is copied unchanged */
            size_t max = (size_t)rand() % (n + 1);
            size_t cut = fwm__utf8_cut(text, n, max);
            CHECK(cut <= max && max - cut <= 3 && fwm__utf8_valid(text, cut));
            CHECK(fwm__utf8_valid(text, fwm__utf8_complete(text, max)));
        }
        size_t small = (size_t)rand() % 12 + 1;
        CHECK(fwm__utf8_valid(out, fwm__utf8_sanitize(out, small, text, n)));
    }
}

int main(void) {
    test_valid();
    test_cut();
    test_sanitize();
    test_random_bytes();
    return check_finish("test_utf8");
}
