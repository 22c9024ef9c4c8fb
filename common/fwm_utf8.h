/* fwm_utf8.h - keeping strings that leave the process valid UTF-8: cutting at character boundaries
 * and replacing the bytes of invalid sequences with U+FFFD when client input is echoed back.
 *
 * Validity is RFC 3629's: no overlong forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
 * Header-only (static inline functions), so libfwm (the tokenizer's error messages), the RPC codec
 * (which the C client links without libfwm) and the tests share this one copy. No state, thread-safe.
 */
#ifndef FWM_COMMON_UTF8_H
#define FWM_COMMON_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define FWM_UTF8_REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD, 3 bytes */
#define FWM_UTF8_REPLACEMENT_BYTES 3

static inline bool fwm__utf8_is_continuation(unsigned char b) {
    return (b & 0xC0) == 0x80;
}

/* Length (1..4) of the valid sequence that starts text[0] (`length` bytes available), or 0 when
 * the bytes there do not form one (a stray or truncated sequence). */
static inline size_t fwm__utf8_sequence(const char *text, size_t length) {
    const unsigned char *p = (const unsigned char *)text;
    if (length == 0) return 0;
    if (p[0] < 0x80) return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (p[0] >= 0xC2 && p[0] <= 0xDF) n = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF) n = 3;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4) n = 4;
    else return 0;
    if (p[0] == 0xE0) lo = 0xA0;      /* overlong */
    else if (p[0] == 0xED) hi = 0x9F; /* surrogates */
    else if (p[0] == 0xF0) lo = 0x90; /* overlong */
    else if (p[0] == 0xF4) hi = 0x8F; /* above U+10FFFF */
    if (length < n || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (!fwm__utf8_is_continuation(p[i])) return 0;
    return n;
}

static inline bool fwm__utf8_valid(const char *text, size_t length) {
    for (size_t i = 0; i < length;) {
        size_t n = fwm__utf8_sequence(text + i, length - i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

/* Where to cut text[0..length) to keep at most `max` bytes without splitting a character: `max`
 * backed off over the continuation bytes of the character it would split (length when it fits). */
static inline size_t fwm__utf8_cut(const char *text, size_t length, size_t max) {
    if (length <= max) return length;
    size_t n = max;
    while (n > 0 && max - n < 3 && fwm__utf8_is_continuation((unsigned char)text[n])) n--;
    return fwm__utf8_is_continuation((unsigned char)text[n]) ? max : n;
}

/* `length` less a final character that is incomplete (text cut by a fixed-size buffer). */
static inline size_t fwm__utf8_complete(const char *text, size_t length) {
    if (length == 0) return 0;
    size_t last = length; /* where the final character begins: back over its continuation bytes */
    for (size_t k = 0; last > 0 && k < 4; k++)
        if (!fwm__utf8_is_continuation((unsigned char)text[--last])) break;
    unsigned char lead = (unsigned char)text[last];
    if (fwm__utf8_is_continuation(lead)) return length; /* stray bytes: not a cut, left as they are */
    size_t want = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
    return length - last < want ? last : length;
}

/* Bytes fwm__utf8_sanitize would write for the whole text: each byte that does not begin a valid
 * sequence counts as one replacement character. */
static inline size_t fwm__utf8_sanitized_length(const char *text, size_t length) {
    size_t out = 0;
    for (size_t i = 0; i < length;) {
        size_t n = fwm__utf8_sequence(text + i, length - i);
        out += n ? n : FWM_UTF8_REPLACEMENT_BYTES;
        i += n ? n : 1;
    }
    return out;
}

/* Copy text[0..length) into out (out_size > 0 bytes, NUL-terminated), each byte that does not
 * begin a valid sequence replaced by U+FFFD, stopping before a character that does not fit.
 * Returns the bytes written, without the NUL. */
static inline size_t fwm__utf8_sanitize(char *out, size_t out_size, const char *text, size_t length) {
    size_t used = 0;
    for (size_t i = 0; i < length;) {
        size_t n = fwm__utf8_sequence(text + i, length - i);
        const char *piece = n ? text + i : FWM_UTF8_REPLACEMENT;
        size_t size = n ? n : FWM_UTF8_REPLACEMENT_BYTES;
        if (used + size >= out_size) break;
        memcpy(out + used, piece, size);
        used += size;
        i += n ? n : 1;
    }
    out[used] = '\0';
    return used;
}

#endif
