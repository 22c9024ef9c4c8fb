/* test_xxhash.c - XXH64 against published vectors (the xxHash specification's examples and its
 * sanity-check table), and streaming == one-shot for every split of a buffer.
 * `test_xxhash --print N` prints "length seed hash" lines for the prefixes of the sanity buffer,
 * hashed in irregular streaming chunks, for check_xxhash.py to compare with python3-xxhash. */
#include <inttypes.h>
#include <stdlib.h>

#include "format_test_util.h"
#include "xxhash64.h"

#define PRIME32 2654435761u
#define PRIME64 11400714785074694797ull
#define SANITY_SIZE 2367

static uint8_t sanity[SANITY_SIZE];

/* The buffer of xxHash's own sanity check: byte i is the top byte of PRIME32 * PRIME64^i. */
static void fill_sanity(void) {
    uint64_t generator = PRIME32;
    for (int i = 0; i < SANITY_SIZE; i++) {
        sanity[i] = (uint8_t)(generator >> 56);
        generator *= PRIME64;
    }
}

static void published_vectors(void) {
    CHECK_U64(fwm__xxh64("", 0, 0), 0xEF46DB3751D8E999ull);
    CHECK_U64(fwm__xxh64("a", 1, 0), 0xD24EC4F1A98C6E5Bull);
    CHECK_U64(fwm__xxh64("abc", 3, 0), 0x44BC2CF5AD770999ull);
    CHECK_U64(fwm__xxh64("Nobody inspects the spammish repetition", 39, 0), 0xFBCEA83C8A378BF1ull);
    /* xxHash's sanity table (xsum_sanity_check.c) */
    CHECK_U64(fwm__xxh64(sanity, 0, PRIME32), 0xAC75FDA2929B17EFull);
    CHECK_U64(fwm__xxh64(sanity, 1, 0), 0xE934A84ADB052768ull);
    CHECK_U64(fwm__xxh64(sanity, 1, PRIME32), 0x5014607643A9B4C3ull);
    CHECK_U64(fwm__xxh64(sanity, 14, 0), 0x8282DCC4994E35C8ull);
    CHECK_U64(fwm__xxh64(sanity, 14, PRIME32), 0xC3BD6BF63DEB6DF0ull);
    CHECK_U64(fwm__xxh64(sanity, 222, 0), 0xB641AE8CB691C174ull);
    CHECK_U64(fwm__xxh64(sanity, 222, PRIME32), 0x20CB8AB7AE10C14Aull);
}

static void streaming_equals_one_shot(void) {
    for (size_t length = 0; length <= 300; length += (length < 70 ? 1 : 23)) {
        uint64_t want = fwm__xxh64(sanity, length, 7);
        for (size_t split = 0; split <= length; split++) {
            fwm__xxh64_state state;
            fwm__xxh64_init(&state, 7);
            fwm__xxh64_update(&state, sanity, split);
            CHECK_U64(fwm__xxh64_digest(&state), fwm__xxh64(sanity, split, 7)); /* digest mid-way */
            fwm__xxh64_update(&state, sanity + split, length - split);
            uint64_t got = fwm__xxh64_digest(&state);
            if (got != want) {
                fprintf(stderr, "length %zu split %zu: 0x%016" PRIx64 " != 0x%016" PRIx64 "\n",
                        length, split, got, want);
                check_failures++;
                return;
            }
        }
    }
    /* byte by byte */
    fwm__xxh64_state state;
    fwm__xxh64_init(&state, 0);
    for (size_t i = 0; i < 1000; i++) fwm__xxh64_update(&state, sanity + i, 1);
    CHECK_U64(fwm__xxh64_digest(&state), fwm__xxh64(sanity, 1000, 0));
}

static int print_hashes(long limit) {
    static const uint64_t seeds[3] = {0, PRIME32, 0x0123456789ABCDEFull};
    for (long length = 0; length <= limit && length <= SANITY_SIZE; length++)
        for (int s = 0; s < 3; s++) {
            fwm__xxh64_state state;
            fwm__xxh64_init(&state, seeds[s]);
            size_t at = 0, chunk = 1;
            while (at < (size_t)length) {
                size_t n = chunk < (size_t)length - at ? chunk : (size_t)length - at;
                fwm__xxh64_update(&state, sanity + at, n);
                at += n;
                chunk = chunk * 3 % 41 + 1;
            }
            printf("%ld %" PRIu64 " %016" PRIx64 "\n", length, seeds[s], fwm__xxh64_digest(&state));
        }
    return 0;
}

int main(int argc, char **argv) {
    fill_sanity();
    if (argc == 3 && strcmp(argv[1], "--print") == 0) return print_hashes(atol(argv[2]));
    static const check_case cases[] = {
        {"published_vectors", published_vectors},
        {"streaming_equals_one_shot", streaming_equals_one_shot},
    };
    return check_run_cases("test_xxhash", cases, sizeof cases / sizeof cases[0]);
}
