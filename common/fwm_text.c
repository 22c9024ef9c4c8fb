/* fwm_text.c - the text rules of fwm_text.h (docs/TEXT.md): a scanner over UTF-8 characters that
 * maps each to a class and its normalised bytes, then forms words, contractions and punctuation
 * tokens from the classes. */
#include "fwm_text.h"

#include <string.h>

#include "fwm_error.h"
#include "fwm_utf8.h"

enum char_class {
    C_SPACE,      /* white space, control characters, Unicode spaces */
    C_NEWLINE,    /* "\n": a line's end */
    C_LETTER,     /* ASCII letter, or any non-ASCII character not mapped below */
    C_DIGIT,      /* 0-9 */
    C_APOSTROPHE, /* ' and the curly single quotes */
    C_HYPHEN,     /* "-" (weight 1), the en dash (1), the em dash and the horizontal bar (2) */
    C_DOT,        /* "." (weight 1), the ellipsis (3) */
    C_COMMA,      /* "," */
    C_DROPPED,    /* "_" */
    C_PUNCT,      /* any other ASCII punctuation, and the curly double quotes (as "\"") */
};

typedef struct text_char {
    enum char_class cls;
    size_t bytes;    /* source bytes of the character */
    char out[4];     /* normalised bytes */
    size_t out_len;
    int weight;      /* hyphens or dots it stands for */
} text_char;

/* The code point of the valid sequence at s (n bytes, from fwm__utf8_sequence). */
static unsigned code_point(const unsigned char *s, size_t n)
{
    if (n == 1)
        return s[0];
    if (n == 2)
        return (unsigned)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
    if (n == 3)
        return (unsigned)(s[0] & 0x0f) << 12 | (unsigned)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
    return (unsigned)(s[0] & 0x07) << 18 | (unsigned)(s[1] & 0x3f) << 12 |
           (unsigned)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
}

static void set_ascii(text_char *c, enum char_class cls, const char *out, int weight)
{
    c->cls = cls;
    c->out_len = strlen(out);
    memcpy(c->out, out, c->out_len);
    c->weight = weight;
}

/* The character at text[i] (i < length). Returns 0 on invalid UTF-8. */
static int read_char(const char *text, size_t length, size_t i, text_char *c)
{
    size_t n = fwm__utf8_sequence(text + i, length - i);
    if (n == 0)
        return 0;
    c->bytes = n;
    c->weight = 1;
    unsigned char b = (unsigned char)text[i];
    if (n == 1) {
        c->out[0] = (char)b;
        c->out_len = 1;
        if (b == '\n')
            c->cls = C_NEWLINE;
        else if (b <= 0x20 || b == 0x7f)
            c->cls = C_SPACE;
        else if (b >= 'A' && b <= 'Z') {
            c->cls = C_LETTER;
            c->out[0] = (char)(b - 'A' + 'a');
        } else if (b >= 'a' && b <= 'z')
            c->cls = C_LETTER;
        else if (b >= '0' && b <= '9')
            c->cls = C_DIGIT;
        else if (b == '\'')
            c->cls = C_APOSTROPHE;
        else if (b == '-')
            c->cls = C_HYPHEN;
        else if (b == '.')
            c->cls = C_DOT;
        else if (b == ',')
            c->cls = C_COMMA;
        else if (b == '_')
            c->cls = C_DROPPED;
        else
            c->cls = C_PUNCT;
        return 1;
    }
    unsigned cp = code_point((const unsigned char *)text + i, n);
    switch (cp) {
    case 0x2018: case 0x2019: case 0x201B: case 0x02BC:
        set_ascii(c, C_APOSTROPHE, "'", 1);
        return 1;
    case 0x201C: case 0x201D: case 0x201F: case 0x00AB: case 0x00BB:
        set_ascii(c, C_PUNCT, "\"", 1);
        return 1;
    case 0x2013: case 0x2010: case 0x2011: case 0x2012:
        set_ascii(c, C_HYPHEN, "-", 1);
        return 1;
    case 0x2014: case 0x2015:
        set_ascii(c, C_HYPHEN, "--", 2);
        return 1;
    case 0x2026:
        set_ascii(c, C_DOT, "...", 3);
        return 1;
    case 0x00A0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
    case 0xFEFF:
        set_ascii(c, C_SPACE, " ", 1);
        return 1;
    default:
        break;
    }
    if ((cp >= 0x2000 && cp <= 0x200B) || cp < 0xA0) { /* Unicode spaces, C1 controls */
        set_ascii(c, C_SPACE, " ", 1);
        return 1;
    }
    c->cls = C_LETTER;
    memcpy(c->out, text + i, n);
    c->out_len = n;
    return 1;
}

typedef struct splitter {
    const char *text;
    size_t length;
    fwm__text_token_fn on_token;
    void *user;
    fwm_error *err;
    bool line_has_tokens;
    char buf[FWM__TEXT_MAX_TOKEN + 1];
} splitter;

static fwm_status emit(splitter *s, const char *out, size_t len, size_t start, size_t end,
                       bool is_eos, bool too_long)
{
    memcpy(s->buf, out, len);
    s->buf[len] = 0;
    fwm__text_token t = {s->buf, len, start, end, is_eos, too_long};
    s->line_has_tokens = !is_eos;
    return s->on_token(s->user, &t);
}

static fwm_status invalid_utf8(splitter *s, size_t at)
{
    return fwm__error(s->err, FWM_ERR_INVALID_ARGUMENT,
                      "text: invalid UTF-8 at byte %zu (the text must be UTF-8)", at);
}

static bool is_word_class(enum char_class cls)
{
    return cls == C_LETTER || cls == C_DIGIT;
}

/* A word starting at i (a letter or digit): consumes it and its joined parts, emits it (and its
 * contraction). Returns the position after it in *next. The contraction rule reads only the end of
 * the word (the last apostrophe, the byte before it, at most three bytes after it), so a word of
 * any length is split; only its tokens' lengths are held against FWM__TEXT_MAX_TOKEN. */
static fwm_status scan_word(splitter *s, size_t i, size_t *next)
{
    char w[FWM__TEXT_MAX_TOKEN];
    size_t n = 0, full = 0;        /* bytes kept in w; normalised bytes in all */
    bool has_apos = false;
    size_t apos_norm = 0, apos_src = 0; /* the last apostrophe: normalised index, source offset */
    char before_apos = 0, last = 0;
    char tail[3];                  /* the first bytes after the last apostrophe */
    size_t tail_len = 0;           /* all bytes after it */
    size_t j = i;
    text_char c, prev;
    prev.cls = C_SPACE;
    while (j < s->length) {
        if (!read_char(s->text, s->length, j, &c))
            break; /* the caller reports it */
        bool take = is_word_class(c.cls);
        if (!take && j > i && (c.cls == C_APOSTROPHE || (c.cls == C_HYPHEN && c.weight == 1) ||
                               c.cls == C_DOT || c.cls == C_COMMA)) {
            size_t after = j + c.bytes;
            text_char d;
            if (after < s->length && read_char(s->text, s->length, after, &d)) {
                if (c.cls == C_DOT || c.cls == C_COMMA)
                    take = c.weight == 1 && prev.cls == C_DIGIT && d.cls == C_DIGIT;
                else
                    take = is_word_class(d.cls);
            }
        }
        if (!take)
            break;
        if (c.cls == C_APOSTROPHE) {
            has_apos = true;
            apos_norm = full;
            apos_src = j;
            before_apos = last;
            tail_len = 0;
        }
        for (size_t k = 0; k < c.out_len; k++, full++) {
            if (n < FWM__TEXT_MAX_TOKEN)
                w[n++] = c.out[k];
            if (has_apos && full > apos_norm) {
                if (tail_len < sizeof tail)
                    tail[tail_len] = c.out[k];
                tail_len++;
            }
            last = c.out[k];
        }
        prev = c;
        j += c.bytes;
    }
    *next = j;
    size_t suffix = 0; /* normalised bytes of the contraction split off the end */
    bool nt = false;
    if (has_apos) {
        static const char *const suffixes[] = {"s", "m", "d", "ll", "re", "ve"};
        if (tail_len == 1 && tail[0] == 't' && before_apos == 'n' && apos_norm >= 2) {
            suffix = 3; /* "n't", with at least one character before the "n" */
            nt = true;
        } else if (apos_norm > 0) {
            for (size_t k = 0; k < sizeof suffixes / sizeof *suffixes; k++)
                if (tail_len == strlen(suffixes[k]) && memcmp(tail, suffixes[k], tail_len) == 0)
                    suffix = tail_len + 1;
        }
    }
    if (suffix == 0)
        return emit(s, w, n < full ? n : full, i, j, false, full > FWM__TEXT_MAX_TOKEN);
    size_t stem = full - suffix;
    size_t split_src = nt ? apos_src - 1 : apos_src; /* the "n" of "n't" is one ASCII byte */
    fwm_status st = emit(s, w, stem < n ? stem : n, i, split_src, false, stem > FWM__TEXT_MAX_TOKEN);
    if (st != FWM_OK)
        return st;
    char out[4] = {'\''};
    if (nt)
        memcpy(out, "n't", 3);
    else
        memcpy(out + 1, tail, tail_len);
    return emit(s, out, suffix, split_src, j, false, false);
}

fwm_status fwm__text_split(const char *text, size_t length, fwm__text_token_fn on_token, void *user,
                           fwm_error *err)
{
    fwm__error_clear(err);
    if ((!text && length > 0) || !on_token)
        return fwm__error(err, FWM_ERR_INVALID_ARGUMENT, "text split: NULL argument");
    splitter s;
    s.text = text;
    s.length = length;
    s.on_token = on_token;
    s.user = user;
    s.err = err;
    s.line_has_tokens = false;
    size_t i = 0;
    fwm_status st = FWM_OK;
    while (i < length && st == FWM_OK) {
        text_char c;
        if (!read_char(text, length, i, &c))
            return invalid_utf8(&s, i);
        if (text[i] == '<' && length - i >= 5 &&
            (memcmp(text + i, FWM__TEXT_UNK, 5) == 0 || memcmp(text + i, FWM__TEXT_EOS, 5) == 0)) {
            bool eos = text[i + 1] == 'e';
            st = emit(&s, text + i, 5, i, i + 5, eos, false);
            i += 5;
            continue;
        }
        switch (c.cls) {
        case C_SPACE:
        case C_DROPPED:
            i += c.bytes;
            break;
        case C_NEWLINE:
            if (s.line_has_tokens)
                st = emit(&s, FWM__TEXT_EOS, 5, i, i + 1, true, false);
            i += c.bytes;
            break;
        case C_LETTER:
        case C_DIGIT:
            st = scan_word(&s, i, &i);
            break;
        case C_HYPHEN:
        case C_DOT: { /* a run: "--" or "..." when it stands for two or more */
            enum char_class run = c.cls;
            size_t start = i;
            int weight = 0;
            text_char d = c;
            while (i < length && d.cls == run) {
                weight += d.weight;
                i += d.bytes;
                if (i < length && !read_char(text, length, i, &d))
                    return invalid_utf8(&s, i);
            }
            const char *out = run == C_HYPHEN ? (weight >= 2 ? "--" : "-")
                                              : (weight >= 2 ? "..." : ".");
            st = emit(&s, out, strlen(out), start, i, false, false);
            break;
        }
        default: /* apostrophe, comma, other punctuation: a token each */
            st = emit(&s, c.out, c.out_len, i, i + c.bytes, false, false);
            i += c.bytes;
            break;
        }
    }
    return st;
}
