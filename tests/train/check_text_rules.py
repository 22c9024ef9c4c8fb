#!/usr/bin/env python3
"""check_text_rules.py - the text splitter (common/fwm_text.c, printed by text_dump) against the
reference implementation tests/reference/text_rules.py, written from docs/TEXT.md alone: the same
tokens, spans and <eos> flags, token by token, on
  - edge cases: every row of docs/TEXT.md's tables and its examples, contractions, typographic
    quotes and dashes, hyphen and dot runs, numbers, underscores, literal <unk> and <eos>, blank
    lines, CRLF, non-ASCII letters, tokens over 128 bytes, a file without a final newline; each
    case on its own and all of them in one file;
  - invalid UTF-8 (overlong forms, surrogates, truncated sequences, stray continuation bytes, code
    points above U+10FFFF): both refuse it, naming the same byte offset;
  - the Jane Austen corpus, data/austen/{train,valid,test}.txt under the source root (written by
    scripts/setup.sh; without it the test fails, unless FWM_ALLOW_NO_CORPUS=1).
A token over 128 bytes must come from the C splitter with too_long set and its first 128 bytes.
With FWM_TRAIN, the vocabulary fwm-train --task text writes into a model file (one training step
of a tiny LSTM) is also compared with the reference's, on a small folder (all words, and
--vocab-size 6) and on the corpus (all words).

usage: check_text_rules.py TEXT_DUMP SOURCE_ROOT [FWM_TRAIN]
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import text_rules  # noqa: E402

MAX = text_rules.MAX_TOKEN
L = "x" * 130  # a word over the limit

# (name, input). Strings are written as UTF-8; bytes as they are.
CASES = [
    # docs/TEXT.md's examples
    ("example 1", "Elizabeth walked to the ballroom.\n"),
    ("example 2", "\"I don't know,\" said Mr. Darcy--\n"),
    ("example 3", "Emma's 10,000 pounds... well-known\n"),
    ("example 4", "_She_ was\u2014at last\u2014content\n"),
    ("example 5", "the sisters' 'tis\n"),
    # the table of characters, row by row
    ("line end", "a\nb\n"),
    ("ASCII controls", "a\x01b\x08c\x0bd\x0ce\x1bf\x1fg\x7fh\n"),
    ("NUL", b"a\x00b \x00\n\x00\n"),
    ("space and tab", "a b\tc \t d\n"),
    ("C1 controls", "a\u0080b\u0085c\u009fd\n"),
    ("U+00A0", "a\u00a0b 10\u00a0000\n"),
    ("U+1680", "a\u1680b\n"),
    ("U+2000-U+200B", "a\u2000b\u2001c\u2005d\u2009e\u200af\u200bg\n"),
    ("U+2028 U+2029", "a\u2028b\u2029c\n"),
    ("U+202F U+205F U+3000 U+FEFF", "\ufeffa\u202fb\u205fc\u3000d\ufeff\n"),
    ("next to the spaces", "a\u200cb a\u200db a\u2060b a\u00adb\n"),
    ("upper case", "ABC Xyz MiXeD\n"),
    ("lower case", "abcdefghijklmnopqrstuvwxyz\n"),
    ("digits", "0123456789 a1 1a 007\n"),
    ("apostrophes", "it's it\u2018s it\u2019s it\u201bs it\u02bcs\n"),
    ("apostrophes joining", "o'clock o\u2018clock o\u2019clock o\u201bclock o\u02bcclock\n"),
    ("lone apostrophes", "' \u2018 \u2019 \u201b \u02bc '' a' 'a\n"),
    ("hyphens joining", "a-b a\u2010b a\u2011b a\u2012b a\u2013b a\u2014b a\u2015b\n"),
    ("lone hyphens", "- \u2010 \u2011 \u2012 \u2013 \u2014 \u2015\n"),
    ("hyphen runs",
     "-- --- ---- -\u2013 \u2013\u2013 -\u2014 \u2014\u2014 \u2015- \u2010\u2011\u2012\n"),
    ("hyphen runs next to words", "a--b a---b a-\u2014b a\u2014-b -a a- --a a-- -1 1-\n"),
    ("dots", ". .. ... .... ..... \u2026 \u2026\u2026 .\u2026 \u2026.\n"),
    ("dots next to words", "a.b a..b a...b a\u2026b a. .a end.\n"),
    ("commas", ", ,, a,b a, ,a 1,b a,1 1,2\n"),
    ("underscore", "_ __ _a_ a_b snake_case __init__ a_1 1_000\n"),
    ("underscore in runs and joins", "-_- ._. \u2014_\u2014 a_-b a-_b 1_.5 1._5 it_'s it'_s\n"),
    ("curly double quotes",
     "\u201cHi,\u201d she said. \u201fx\u201f \u00abfr\u00bb \u201c\u201d\n"),
    ("ASCII punctuation", "!\"#$%&()*+/:;<=>?@[\\]^`{|}~\n"),
    ("ASCII punctuation between letters", "a!b a\"b a#b a(b) a/b a:b a;b a?b a@b a[b] a~b\n"),
    ("non-ASCII letters", "caf\u00e9 \u00dcber STRA\u00dfE \u00c9cole na\u00efve\n"),
    ("Greek", "\u0391\u03b8\u03ae\u03bd\u03b1 \u03b1\u03b2\u03b3 \u0394\u0395\u0396\n"),
    ("CJK", "\u4e2d\u6587\u5b57 \u65e5\u672c\u8a9e\u3002\u3001\u300c\u300d\n"),
    ("other non-ASCII",
     "e\u0301 \U0001f600 \ufffd \ue000 \U0010ffff \u00bf \u00a1 \u00b7 \u2030\n"),
    ("non-ASCII in joins", "caf\u00e9's \u00e9-\u00e9 \u00e9'\u00e9 \u4e2d-\u6587 1.\u00e9\n"),
    # contractions
    ("n't", "don't can't won't isn't ain't DON'T Can't don\u2019t\n"),
    ("n't edges", "n't N'T an't 'nt don't't dont n't's\n"),
    ("'s 'm 'd 'll 're 've", "Elizabeth's I'm she'd he'll they're we've\n"),
    ("upper-case contractions", "I'M THEY'RE HE'LL SHE'D WE'VE IT'S\n"),
    ("curly contractions",
     "Elizabeth\u2019s I\u2019m she\u2019d he\u2019ll they\u2019re we\u2019ve\n"),
    ("not contractions", "o'clock ma'am rock'n'roll y'all 'tis 'twas sisters' o' l'amour\n"),
    ("contraction edges", "can't've it's-a x-ray's well-known's 90's 1990's a's s's 's\n"),
    ("apostrophe joins", "a''b a'-b a-'b a'1 1'a '1 it''s it's'\n"),
    # numbers
    ("numbers", "10,000 3.5 1,2,3 1.2.3 1,000.50\n"),
    ("number edges", "3.5. .5 5. 1..2 1,,2 1.a a.1 a1.5 1-2 1'2 -5 $3.50, 1,b 1.\u20262\n"),
    ("number and curly", "1\u20142 1\u20132 1\u20262\n"),
    # literal specials
    ("literal <unk>", "<unk> word<unk> <unk>word a<unk>b <unk><unk>\n"),
    ("literal <eos>", "<eos> word<eos>next <eos>word\n"),
    ("literal <eos> at line end", "words then <eos>\nnext\n"),
    ("literal <eos> then blank", "x <eos>\n\n<eos>\n"),
    ("literal specials, other case", "<UNK> <Eos> <unk <eos <<unk>> <un k> <eos/> < unk>\n"),
    ("literal specials next to punctuation", "(<unk>) \"<unk>\" <unk>'s <unk>-<unk> <unk>.\n"),
    ("literal <eos> alone", "<eos>"),
    # lines
    ("blank lines", "a\n\n\nb\n\n"),
    ("only newlines", "\n\n\n"),
    ("empty file", ""),
    ("lines of spaces", "  \n\t\n\u00a0\n_\n__\n"),
    ("lines of punctuation", "...\n--\n!?\n\u2014\n'\n\"\n,\n"),
    ("CRLF", "first line\r\nsecond\r\n\r\nthird.\r\n"),
    ("CR alone", "a\rb\r\n"),
    ("tabs", "\tindented\tword\t\n\t\n"),
    ("no final newline", "the last line has no newline."),
    ("no final newline, punctuation", "first\nlast --"),
    ("leading newline", "\nstart\n"),
    # long tokens
    ("128 bytes", "a" * 128 + "\n"),
    ("129 bytes", "a" * 129 + "\n"),
    ("long word", L + " short " + "b" * 300 + "\n"),
    ("long non-ASCII", "\u00e9" * 64 + " " + "\u00e9" * 65 + "\n"),
    ("long word cut in a character", "a" * 127 + "\u00e9" + " " + "a" * 126 + "\u4e2d" + "\n"),
    ("long word contractions", L + "'s " + L + "n't " + "a" * 126 + "'s " + "a" * 127 + "n't\n"),
    ("long number", "1," * 100 + "1\n"),
    ("long hyphenated", "-".join(["ab"] * 60) + "\n"),
    # mixed prose
    ("prose", "\u201cMy dear Mr. Bennet,\u201d said his lady to him one day, \u201chave you heard "
              "that Netherfield Park is let at last?\u201d\n"),
    ("prose 2", "It is a truth universally acknowledged, that a single man in possession of a good "
                "fortune, must be in want of a wife.\n\nHowever little known...\n"),
]

# (name, bytes, offset of the offending sequence)
INVALID = [
    ("overlong 2-byte NUL", b"ab\xc0\x80cd\n", 2),
    ("overlong 2-byte C1", b"\xc1\xbf\n", 0),
    ("overlong 3-byte", b"x \xe0\x80\x80\n", 2),
    ("overlong 3-byte top", b"xyz\xe0\x9f\xbf\n", 3),
    ("overlong 4-byte", b"\xf0\x8f\xbf\xbf\n", 0),
    ("surrogate high", b"ok \xed\xa0\x80\n", 3),
    ("surrogate low", b"ok\n\xed\xbf\xbf\n", 3),
    ("surrogate pair", b"a \xed\xa0\xbd\xed\xb8\x80\n", 2),
    ("truncated 2-byte at end", b"abc\xc3", 3),
    ("truncated 3-byte at end", b"abc\xe2\x82", 3),
    ("truncated 3-byte before space", b"abc\xe2\x82 x\n", 3),
    ("truncated 4-byte", b"hi \xf0\x9f\x98\n", 3),
    ("stray continuation", b"abc\x80\n", 3),
    ("stray continuation after a character", b"\xc3\xa9\xa9\n", 2),
    ("stray continuation at start", b"\xbf", 0),
    ("above U+10FFFF F4", b"x\xf4\x90\x80\x80\n", 1),
    ("above U+10FFFF F5", b"x\xf5\x80\x80\x80\n", 1),
    ("byte FE", b"\xfe\n", 0),
    ("byte FF", b"tokens first\n\xff\n", 13),
    ("Latin-1 after tokens", b"hello world.\nnext \xe9t\xe9\n", 18),
    ("invalid inside a literal", b"<un\xc0\x80k>\n", 3),
    ("invalid after a long word", b"a" * 200 + b"\x80\n", 200),
]

failures = 0
compared = 0
files_compared = 0


def fail(msg):
    global failures
    failures += 1
    print("FAILED:", msg)


def run_dump(exe, path):
    """(tokens [(text bytes, start, end, is_eos, too_long)], error message or None)."""
    r = subprocess.run([exe, path], capture_output=True)
    if r.returncode not in (0, 1):
        raise SystemExit("text_dump exited with %d: %s" % (r.returncode, r.stderr.decode(
            "utf-8", "replace")))
    tokens = []
    lines = r.stdout.split(b"\n")
    assert lines[-1] == b"", "text_dump's output does not end with a newline"
    for line in lines[:-1]:
        start, end, eos, too_long, text = line.split(b" ", 4)
        tokens.append((text, int(start), int(end), eos == b"1", too_long == b"1"))
    err = r.stderr.decode("utf-8", "replace").strip() if r.returncode == 1 else None
    return tokens, err


def expected(ref_token):
    """The C token a reference token must match: (text bytes, start, end, is_eos, too_long)."""
    text, start, end, is_eos = ref_token
    b = text.encode("utf-8")
    too_long = len(b) > MAX
    return (b[:MAX] if too_long else b, start, end, is_eos, too_long)


def show(data, tokens, k, label):
    lo, hi = max(0, k - 3), min(len(tokens), k + 3)
    print("  %s tokens %d..%d:" % (label, lo, hi - 1))
    for j in range(lo, hi):
        t = tokens[j]
        text, start, end, eos, too_long = t
        print("   %s%6d [%d,%d) eos=%d too_long=%d %r  source %r" % (
            "->" if j == k else "  ", j, start, end, eos, too_long,
            text.decode("utf-8", "replace"), data[start:end]))


def compare(name, data, exe, tmpdir):
    """Split `data` both ways and compare; returns the number of tokens compared."""
    global files_compared
    path = os.path.join(tmpdir, "case.txt")
    with open(path, "wb") as f:
        f.write(data)
    got, err = run_dump(exe, path)
    try:
        want = [expected(t) for t in text_rules.split(data)]
    except ValueError as e:
        fail("%s: the reference refuses the input (%s)" % (name, e))
        return 0
    files_compared += 1
    if err is not None:
        fail("%s: text_dump refuses valid input: %s" % (name, err))
        return 0
    for k in range(max(len(got), len(want))):
        g = got[k] if k < len(got) else None
        w = want[k] if k < len(want) else None
        if g != w:
            where = w[1] if w else g[1]
            what = "differs" if g and w else "only in C" if g else "only in the reference"
            fail("%s: token %d %s; input around byte %d: %r" % (
                name, k, what, where, data[max(0, where - 40):where + 40]))
            show(data, got, k, "C (text_dump)")
            show(data, want, k, "reference (text_rules.py)")
            return k
    return len(want)


def offset_in(message):
    m = re.search(r"byte(?: offset)? (\d+)", message)
    if m:
        return int(m.group(1))
    numbers = re.findall(r"\d+", message)
    return int(numbers[0]) if len(numbers) == 1 else None


def check_invalid(name, data, offset, exe, tmpdir):
    path = os.path.join(tmpdir, "invalid.txt")
    with open(path, "wb") as f:
        f.write(data)
    try:
        text_rules.split(data)
        fail("%s: the reference accepts %r" % (name, data))
        ref_offset = None
    except ValueError as e:
        ref_offset = offset_in(str(e))
        if ref_offset != offset:
            fail("%s: the reference names byte %s, not %d: %s" % (name, ref_offset, offset, e))
    _, err = run_dump(exe, path)
    if err is None:
        fail("%s: text_dump accepts %r" % (name, data))
        return
    c_offset = offset_in(err)
    if c_offset != offset:
        fail("%s: text_dump names byte %s, the reference %s (input %r): %s" % (
            name, c_offset, ref_offset, data, err))


# the training vocabulary: a small folder's train.txt (ties, a literal <unk> and <eos>, a word over
# 128 bytes, punctuation, contractions)
VOCAB_TRAIN = ("The cat sat. The dog sat!\n\nA cat, a dog; the end.\n<unk> don't zebra zebra <eos>"
               " Cat's " + "y" * 140 + " dog--cat...\n\u201cquoted\u201d caf\u00e9 caf\u00e9\n")


def gguf_metadata(path):
    """The key-value metadata of a GGUF file (version 3) as {key: value}."""
    with open(path, "rb") as f:
        data = f.read()
    pos = 0

    def take(fmt):
        nonlocal pos
        values = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return values[0]

    def string():
        nonlocal pos
        n = take("Q")
        pos += n
        return data[pos - n:pos].decode("utf-8")

    scalars = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
               12: "d"}

    def value(vtype):
        if vtype == 8:
            return string()
        if vtype == 9:
            item_type, n = take("I"), take("Q")
            return [value(item_type) for _ in range(n)]
        return take(scalars[vtype])

    if data[:4] != b"GGUF":
        raise ValueError("%s is not a GGUF file" % path)
    pos = 4
    take("I")  # version
    take("Q")  # tensors
    meta = {}
    for _ in range(take("Q")):
        key = string()
        meta[key] = value(take("I"))
    return meta


def check_vocabulary(name, fwm_train, folder, size, tmpdir):
    """fwm-train --task text on folder (train/valid/test.txt) against vocabulary()."""
    with open(os.path.join(folder, "train.txt"), "rb") as f:
        want = text_rules.vocabulary(text_rules.split(f.read()), size)
    model = os.path.join(tmpdir, "vocab.gguf")
    cmd = [fwm_train, "--task", "text", "--data", folder, "--arch", "lstm", "--layers", "1",
           "--embedding", "4", "--hidden", "4", "--steps", "1", "--lanes", "1", "--window", "4",
           "--threads", "1", "--eval-every", "0", "--eval-lanes", "64", "--no-test", "--force",
           "--progress", "0", "--run-dir", os.path.join(tmpdir, "run"), "--out", model]
    if size is not None:
        cmd += ["--vocab-size", str(size)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s: fwm-train exited with %d: %s" % (name, r.returncode, r.stderr.strip()))
        return
    meta = gguf_metadata(model)
    got = meta.get("tokenizer.ggml.tokens")
    if meta.get("tokenizer.ggml.model") != "text":
        fail("%s: tokenizer.ggml.model is %r" % (name, meta.get("tokenizer.ggml.model")))
    if meta.get("tokenizer.ggml.unknown_token_id") != 2:
        fail("%s: tokenizer.ggml.unknown_token_id is %r" % (
            name, meta.get("tokenizer.ggml.unknown_token_id")))
    if got != want:
        k = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]),
                 min(len(got), len(want)))
        fail("%s: vocabulary differs at id %d of %d (fwm-train) and %d (reference): fwm-train %r, "
             "reference %r" % (name, k, len(got), len(want), got[max(0, k - 2):k + 3],
                               want[max(0, k - 2):k + 3]))
        return
    print("%s: vocabulary of %d words agrees" % (name, len(want)))


def main():
    global compared
    exe, root = sys.argv[1:3]
    fwm_train = sys.argv[3] if len(sys.argv) > 3 else None
    with tempfile.TemporaryDirectory() as tmpdir:
        for name, text in CASES:
            data = text if isinstance(text, bytes) else text.encode("utf-8")
            compared += compare(name, data, exe, tmpdir)
        everything = b"".join(t if isinstance(t, bytes) else t.encode("utf-8") for _, t in CASES)
        compared += compare("all edge cases in one file", everything, exe, tmpdir)
        for name, data, offset in INVALID:
            check_invalid(name, data, offset, exe, tmpdir)
        if fwm_train:
            folder = os.path.join(tmpdir, "small")
            os.mkdir(folder)
            for split in ("train", "valid", "test"):
                with open(os.path.join(folder, split + ".txt"), "w", encoding="utf-8") as f:
                    f.write(VOCAB_TRAIN if split == "train" else "the cat sat .\n")
            check_vocabulary("small folder", fwm_train, folder, None, tmpdir)
            check_vocabulary("small folder, --vocab-size 6", fwm_train, folder, 6, tmpdir)
        corpus = os.path.join(root, "data", "austen")
        if os.path.isdir(corpus):
            for split in ("train", "valid", "test"):
                path = os.path.join(corpus, split + ".txt")
                if not os.path.exists(path):
                    fail("%s is missing (run scripts/setup.sh)" % path)
                    continue
                with open(path, "rb") as f:
                    data = f.read()
                compared += compare(os.path.relpath(path, root), data, exe, tmpdir)
            if fwm_train and all(os.path.exists(os.path.join(corpus, split + ".txt"))
                                 for split in ("train", "valid", "test")):
                check_vocabulary("data/austen", fwm_train, corpus, None, tmpdir)
        elif os.environ.get("FWM_ALLOW_NO_CORPUS") == "1":
            print("note: no corpus at %s (FWM_ALLOW_NO_CORPUS=1): edge cases only" % corpus)
        else:
            fail("no corpus at %s: run scripts/setup.sh (or set FWM_ALLOW_NO_CORPUS=1 to check "
                 "the edge cases only)" % corpus)
    print("check_text_rules: %d files, %d tokens compared, %d invalid inputs, %d failures" % (
        files_compared, compared, len(INVALID), failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
