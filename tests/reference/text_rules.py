#!/usr/bin/python3
"""text_rules.py - a second implementation of the text rules (docs/TEXT.md), written from that page
alone, in plain Python (standard library only).

What it is for: tests/train/check_text_rules.py compares it with the C splitter
(common/fwm_text.c, printed by tests/train/text_dump) token by token and span by span, so that a
disagreement shows a bug in one of the two or a gap in the page. It is deliberately simple and
slow: one character at a time, each rule where docs/TEXT.md states it.

API:
  split(data: bytes) -> [(text, start, end, is_eos)]
      the tokens of UTF-8 input: text is the token's normalised form (str), [start, end) the bytes
      of the source it came from; ValueError naming the byte offset on invalid UTF-8.
  vocabulary(train_tokens, size=None) -> [word]
      the training vocabulary (index = token id): <pad>, <eos>, <unk>, then the words by
      frequency, most frequent first, ties in order of first appearance; all, or the `size` most
      frequent.
  MAX_TOKEN = 128: the longest normalised form (bytes) a vocabulary can hold.

CLI:
  text_rules.py FILE [--vocab [N]]   prints "start end is_eos text" per token, or the vocabulary
"""

import sys

MAX_TOKEN = 128
EOS = "<eos>"
UNK = "<unk>"
PAD = "<pad>"

# Character classes (docs/TEXT.md, "Characters").
LINE_END = "line end"
SPACE = "space"
LETTER = "letter"
DIGIT = "digit"
APOSTROPHE = "apostrophe"
HYPHEN = "hyphen"
DOT = "dot"
COMMA = "comma"
DROPPED = "dropped"
PUNCT = "punctuation"

_SPACES = (set(range(0x00, 0x21)) - {0x0A}) | {0x7F} | set(range(0x80, 0xA0)) | {
    0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF} | set(range(0x2000, 0x200C))
_APOSTROPHES = {ord("'"), 0x2018, 0x2019, 0x201B, 0x02BC}
_HYPHENS = {ord("-"): 1, 0x2010: 1, 0x2011: 1, 0x2012: 1, 0x2013: 1, 0x2014: 2, 0x2015: 2}
_DOTS = {ord("."): 1, 0x2026: 3}
_QUOTES = {0x201C, 0x201D, 0x201F, 0x00AB, 0x00BB}


def classify(cp):
    """(class, normalised form, weight) of the code point cp; weight is 0 outside hyphens and
    dots."""
    if cp == 0x0A:
        return LINE_END, "", 0
    if cp in _SPACES:
        return SPACE, "", 0
    if ord("A") <= cp <= ord("Z"):
        return LETTER, chr(cp + 32), 0
    if ord("a") <= cp <= ord("z"):
        return LETTER, chr(cp), 0
    if ord("0") <= cp <= ord("9"):
        return DIGIT, chr(cp), 0
    if cp in _APOSTROPHES:
        return APOSTROPHE, "'", 0
    if cp in _HYPHENS:
        return HYPHEN, "-" * _HYPHENS[cp], _HYPHENS[cp]
    if cp in _DOTS:
        return DOT, "." * _DOTS[cp], _DOTS[cp]
    if cp == ord(","):
        return COMMA, ",", 0
    if cp == ord("_"):
        return DROPPED, "", 0
    if cp in _QUOTES:
        return PUNCT, '"', 0
    if cp < 0x80:
        return PUNCT, chr(cp), 0
    return LETTER, chr(cp), 0


def decode(data):
    """The characters of UTF-8 `data` as [(code point, start, end)] byte spans. Invalid UTF-8
    (RFC 3629) raises ValueError naming the offset of the first byte of the offending sequence.

    Python's strict decoder refuses exactly what RFC 3629 refuses (overlong forms, surrogates,
    code points above U+10FFFF, stray or missing continuation bytes), and reports where the bad
    sequence starts; the byte spans of valid input follow from the code points' encoded lengths,
    and are checked against the bytes."""
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        raise ValueError("invalid UTF-8 at byte %d (%s)" % (e.start, e.reason)) from None
    chars = []
    pos = 0
    for ch in text:
        cp = ord(ch)
        n = 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
        assert data[pos:pos + n] == ch.encode("utf-8")
        chars.append((cp, pos, pos + n))
        pos += n
    assert pos == len(data)
    return chars


def _word_tokens(norm, spans):
    """Rule 5: the tokens of a word given its normalised characters (one per source character)
    and their byte spans."""
    w = "".join(norm)
    start, end = spans[0][0], spans[-1][1]
    if w.endswith("n't") and len(w) > 3:
        n = len(w) - 3
        return [(w[:n], start, spans[n][0]), ("n't", spans[n][0], end)]
    a = w.rfind("'")
    if a > 0 and w[a + 1:] in ("s", "m", "d", "ll", "re", "ve"):
        return [(w[:a], start, spans[a][0]), (w[a:], spans[a][0], end)]
    return [(w, start, end)]


def split(data):
    """The tokens of UTF-8 bytes `data` by docs/TEXT.md: [(text, start, end, is_eos)]."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    chars = decode(data)
    classes = [classify(cp) for cp, _, _ in chars]
    n = len(chars)
    tokens = []
    line_tokens = 0  # tokens the current line has given

    def emit(text, start, end, is_eos=False):
        nonlocal line_tokens
        tokens.append((text, start, end, is_eos))
        line_tokens += 1

    def cls(k):
        return classes[k][0] if k < n else None

    i = 0
    while i < n:
        c, norm, weight = classes[i]
        start = chars[i][1]
        # 1. Literal specials: the five bytes "<unk>" or "<eos>" where a token could start.
        special = data[start:start + 5]
        if special in (b"<unk>", b"<eos>"):
            if special == b"<eos>":
                tokens.append((EOS, start, start + 5, True))
                line_tokens = 0  # a literal <eos> also ends the line
            else:
                emit(UNK, start, start + 5)
            i += 5  # five ASCII bytes are five characters
            continue
        # 2. Space and dropped characters are skipped.
        if c in (SPACE, DROPPED):
            i += 1
            continue
        # 3. Line end: <eos> if the line gave a token.
        if c == LINE_END:
            if line_tokens > 0:
                tokens.append((EOS, start, chars[i][2], True))
            line_tokens = 0
            i += 1
            continue
        # 4. Words: letters and digits, through joiners followed by a letter or digit.
        if c in (LETTER, DIGIT):
            norm_chars = [norm]
            spans = [(chars[i][1], chars[i][2])]
            j = i + 1
            while j < n:
                cj, nj, wj = classes[j]
                if cj in (LETTER, DIGIT):
                    pass
                elif cls(j + 1) in (LETTER, DIGIT) and (
                        cj == APOSTROPHE or (cj == HYPHEN and wj == 1)):
                    pass
                elif cls(j + 1) == DIGIT and cls(j - 1) == DIGIT and (
                        (cj == DOT and wj == 1) or cj == COMMA):
                    pass
                else:
                    break
                norm_chars.append(nj)
                spans.append((chars[j][1], chars[j][2]))
                j += 1
            # 5. Contractions.
            for text, s, e in _word_tokens(norm_chars, spans):
                emit(text, s, e)
            i = j
            continue
        # 6. and 7. Hyphen runs and dot runs.
        if c in (HYPHEN, DOT):
            total = 0
            j = i
            while j < n and classes[j][0] == c:
                total += classes[j][2]
                j += 1
            if c == HYPHEN:
                text = "--" if total >= 2 else "-"
            else:
                text = "..." if total >= 2 else "."
            emit(text, start, chars[j - 1][2])
            i = j
            continue
        # 8. Everything else: a token of its own.
        emit(norm, start, chars[i][2])
        i += 1
    return tokens


def vocabulary(train_tokens, size=None):
    """The vocabulary of a training file's tokens (docs/TEXT.md, "Vocabulary and <unk>"): <pad>,
    <eos>, <unk>, then the words by frequency, most frequent first, ties in order of first
    appearance; all of them, or the `size` most frequent. train_tokens holds split()'s tuples or
    plain strings. <eos> and <unk> are the specials, not words; a word longer than MAX_TOKEN bytes
    is never in a vocabulary."""
    counts = {}
    first = {}
    for k, tok in enumerate(train_tokens):
        text = tok if isinstance(tok, str) else tok[0]
        if text in (EOS, UNK) or len(text.encode("utf-8")) > MAX_TOKEN:
            continue
        if text not in counts:
            counts[text] = 0
            first[text] = k
        counts[text] += 1
    words = sorted(counts, key=lambda w: (-counts[w], first[w]))
    if size is not None:
        words = words[:size]
    return [PAD, EOS, UNK] + words


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], "rb") as f:
        data = f.read()
    try:
        tokens = split(data)
    except ValueError as e:
        print("error:", e, file=sys.stderr)
        return 1
    if len(argv) > 2 and argv[2] == "--vocab":
        size = int(argv[3]) if len(argv) > 3 else None
        for i, w in enumerate(vocabulary(tokens, size)):
            print(i, w)
    else:
        for text, start, end, is_eos in tokens:
            print(start, end, int(is_eos), text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
