#!/usr/bin/env python3
"""test_prepare_austen.py - scripts/prepare_austen.py (docs/CORPUS.md):

* its reader of R's lazy-load databases returns exactly what a writer of this test's own (written
  from R's format, not from the reader) put in: character vectors with NA_character_, UTF-8,
  Latin-1 and ASCII marked strings, the empty string, a vector of 100,000 lines, one written with
  the long-vector length form, integer/double/logical vectors with NA and attributes, named lists,
  symbols repeated through the reference table; serialization formats 2 and 3; every record
  compression R's lazyLoadDBfetch knows (zlib; '0', '1', '2' of form 2; 'Z' LZMA2 of form 3);
* truncated or corrupt data raise RDataError with a message that says what is wrong (never
  another exception, never a wrong value): a truncated .rdb or .rdx, a flipped byte in a record,
  a record whose length header lies, a truncated serialization, trailing bytes, a SEXP type the
  reader lacks (named in the message), a reference outside the table;
* the paragraph rule;
* end to end (skipped where dpkg-deb is missing): a stand-in r-cran-janeaustenr .deb with six
  short "novels", --deb and --out: the three files, the stamp, the printed summary, a second run
  that does nothing, a rebuild when an output was changed, a refused vector with Gutenberg text.

usage: test_prepare_austen.py
"""
import bz2
import gzip
import json
import lzma
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "prepare_austen.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
import prepare_austen as pa  # noqa: E402

from cli_checks import check, finish  # noqa: E402


# ------------------------------------------------------------------------------------------------
# a minimal writer of R's XDR serialization (R's serialize.c: WriteItem, OutStringVec, ...)

def i32(v):
    return struct.pack(">i", v)


def flags(t, levels=0, obj=False, attr=False, tag=False):
    return i32(t | (levels << 12) | (obj << 8) | (attr << 9) | (tag << 10))


class Writer:
    def __init__(self, version=3):
        self.version = version
        self.syms = {}  # symbol name -> reference index (1-based)

    def header(self):
        out = b"X\n" + i32(self.version) + i32(0x040201)
        if self.version == 3:
            return out + i32(0x030500) + i32(5) + b"UTF-8"
        return out + i32(0x020300)

    def charsxp(self, s, mark=None):
        if s is None:
            return flags(9) + i32(-1)
        if mark is None:
            mark = "ascii" if all(ord(c) < 128 for c in s) else "utf8"
        levels = {"ascii": 64, "utf8": 8, "latin1": 4, "native": 0}[mark]
        b = s.encode("latin-1" if mark == "latin1" else "utf-8")
        return flags(9, levels) + i32(len(b)) + b

    def symbol(self, name):
        if name in self.syms:  # REFSXP with the index packed into the flags
            return i32(255 | (self.syms[name] << 8))
        self.syms[name] = len(self.syms) + 1
        return i32(1) + self.charsxp(name)

    def attrs(self, attributes):
        out = b""
        for name, value in attributes.items():
            out += flags(2, tag=True) + self.symbol(name) + value
        return out + i32(254)

    def length(self, n, long_form=False):
        return i32(-1) + i32(n >> 32) + i32(n & 0xFFFFFFFF) if long_form else i32(n)

    def strsxp(self, strings, marks=None, attributes=None, long_form=False):
        out = [flags(16, attr=bool(attributes)), self.length(len(strings), long_form)]
        out += [self.charsxp(s, marks[i] if marks else None) for i, s in enumerate(strings)]
        return b"".join(out) + (self.attrs(attributes) if attributes else b"")

    def intsxp(self, vals, attributes=None, t=13):
        out = flags(t, attr=bool(attributes)) + i32(len(vals))
        out += b"".join(i32(-(2 ** 31) if v is None else int(v)) for v in vals)
        return out + (self.attrs(attributes) if attributes else b"")

    def realsxp(self, vals):
        return flags(14) + i32(len(vals)) + b"".join(
            struct.pack(">Q", 0x7FF00000000007A2) if v is None else struct.pack(">d", v)
            for v in vals)

    def altrep(self, cls, package, base_type, state, attributes=None):
        """ALTREP_SXP: the class as a pairlist (class symbol, package symbol, base type), the
        state, the attributes (a pairlist or NULL)."""
        info = (flags(2) + self.symbol(cls) + flags(2) + self.symbol(package) + flags(2)
                + self.intsxp([base_type]) + i32(254))
        return i32(238) + info + state + (self.attrs(attributes) if attributes else i32(254))

    def cons(self, car, cdr):
        """A dotted pair (CONS(car, cdr))."""
        return flags(2) + car + cdr

    def vecsxp(self, items, names=None):
        attributes = {"names": self.strsxp(names)} if names is not None else None
        out = flags(19, attr=bool(attributes)) + i32(len(items)) + b"".join(items)
        return out + (self.attrs(attributes) if attributes else b"")


def compress_record(data, compressed, kind=None):
    n = struct.pack(">I", len(data))
    if compressed == 0:
        return data
    if compressed == 1:
        return n + zlib.compress(data)
    if kind == "0":
        return n + b"0" + data
    if kind == "1":
        return n + b"1" + zlib.compress(data)
    if kind == "2":
        return n + b"2" + bz2.compress(data)
    if kind == "Z":
        return n + b"Z" + lzma.compress(data, format=lzma.FORMAT_RAW,
                                         filters=[{"id": lzma.FILTER_LZMA2, "preset": 6}])
    raise ValueError(kind)


def write_db(folder, objects, version=3, compressed=1, kind=None):
    """objects: name -> function(Writer) -> bytes of one serialized item (without the header);
    each object is a stream of its own (its own reference table). Returns (rdx, rdb) paths."""
    rdb = b""
    keys = {}
    for name, item in objects.items():
        w = Writer(version)
        rec = compress_record(w.header() + item(w), compressed, kind)
        keys[name] = (len(rdb), len(rec))
        rdb += rec
    w = Writer(version)
    variables = w.vecsxp([w.intsxp(list(k)) for k in keys.values()], names=list(keys))
    references = w.vecsxp([], names=[])
    comp = w.intsxp([1], t=10) if compressed == 1 else w.intsxp([compressed])
    index = w.header() + w.vecsxp([variables, references, comp],
                                  names=["variables", "references", "compressed"])
    rdx_path, rdb_path = os.path.join(folder, "Rdata.rdx"), os.path.join(folder, "Rdata.rdb")
    with open(rdx_path, "wb") as f:
        f.write(gzip.compress(index))
    with open(rdb_path, "wb") as f:
        f.write(rdb)
    return rdx_path, rdb_path


def expect_error(fn, words, what):
    try:
        value = fn()
    except pa.RDataError as e:
        msg = str(e)
        ok = all(w in msg for w in words)
        if not ok:
            print("message:", msg)
        check(ok, "%s: the error names %s" % (what, words))
        return
    except Exception as e:  # noqa: BLE001 - any other exception is a failure of the reader
        check(False, "%s: raised %s (%s), not RDataError" % (what, type(e).__name__, e))
        return
    check(False, "%s: no error (returned %.200r)" % (what, value))


# ------------------------------------------------------------------------------------------------

LINES = ["It is a truth universally acknowledged,", None, "",
         "Émile — naïve “quoted” £20,000", "  indented\tline  ", "x" * 5000]
LONG = ["%d %s" % (i, "ab" * (i % 7)) for i in range(100000)]


def objects_for(with_long):
    objects = {
        "lines": lambda w: w.strsxp(LINES),
        "longform": lambda w: w.strsxp(["a", "b", None], long_form=True),
        "marks": lambda w: w.strsxp(["café", "plain", "naïve", "日本"],
                                    marks=["latin1", "ascii", "utf8", "native"]),
        "ints": lambda w: w.intsxp([1, None, -7], attributes={"names": w.strsxp(["a", "b", "c"]),
                                                               "class": w.strsxp(["myclass"])}),
        "reals": lambda w: w.realsxp([1.5, None, -0.0]),
        "logicals": lambda w: w.intsxp([1, 0, None], t=10),
        "nested": lambda w: w.vecsxp([w.strsxp(["x"]), i32(254), w.intsxp([3])],
                                     names=["s", "null", "n"]),
        "altseq": lambda w: w.altrep("compact_intseq", "base", 13, w.realsxp([5, 3, -1])),
        "altwrap": lambda w: w.altrep("wrap_string", "base", 16,
                                      w.cons(w.strsxp(["p", None]), w.intsxp([0, 1])),
                                      attributes={"names": w.strsxp(["a", "b"])}),
        "altdefer": lambda w: w.altrep("deferred_string", "base", 16,
                                       w.cons(w.intsxp([7, None, -2]), w.intsxp([0]))),
    }
    if with_long:
        objects["long"] = lambda w: w.strsxp(LONG)
    return objects


def check_values(db, label):
    def get(name):
        try:
            return db.fetch(name)
        except pa.RDataError as e:
            check(False, "%s: fetch %s: %s" % (label, name, e))
            return None

    o = get("lines")
    check(o is not None and o.sexptype == pa.STRSXP and o.value == LINES,
          "%s: character vector with NA, empty, UTF-8, whitespace and a 5000-byte string" % label)
    if "long" in db.keys:
        o = get("long")
        check(o is not None and o.value == LONG, "%s: a vector of 100,000 lines" % label)
    o = get("longform")
    check(o is not None and o.value == ["a", "b", None], "%s: the long-vector length form" % label)
    o = get("marks")
    check(o is not None and o.value == ["café", "plain", "naïve", "日本"],
          "%s: Latin-1, ASCII, UTF-8 and native (UTF-8) marked strings" % label)
    o = get("ints")
    check(o is not None and o.value == [1, None, -7] and o.names() == ["a", "b", "c"]
          and o.attr("class").value == ["myclass"], "%s: integers with NA and attributes" % label)
    o = get("reals")
    check(o is not None and o.value[0] == 1.5 and o.value[1] is None and str(o.value[2]) == "-0.0",
          "%s: doubles with NA_real_" % label)
    o = get("logicals")
    check(o is not None and o.value == [True, False, None], "%s: logicals with NA" % label)
    o = get("nested")
    check(o is not None and o.names() == ["s", "null", "n"] and o.value[0].value == ["x"]
          and o.value[1] is None and o.value[2].value == [3], "%s: a named list with NULL" % label)
    o = get("altseq")
    check(o is not None and o.sexptype == pa.INTSXP and o.value == [3, 2, 1, 0, -1],
          "%s: ALTREP compact_intseq" % label)
    o = get("altwrap")
    check(o is not None and o.sexptype == pa.STRSXP and o.value == ["p", None]
          and o.names() == ["a", "b"], "%s: ALTREP wrap_string with attributes" % label)
    o = get("altdefer")
    check(o is not None and o.value == ["7", None, "-2"], "%s: ALTREP deferred_string" % label)


def test_reader(tmp):
    for version in (2, 3):
        for compressed, kind in ((1, None), (0, None), (2, "0"), (2, "1"), (2, "2"), (3, "Z"),
                                 (3, "2")):
            label = "v%d compressed=%d%s" % (version, compressed, "/" + kind if kind else "")
            d = tempfile.mkdtemp(dir=tmp)
            objects = objects_for(compressed == 1)  # the long vector once per version
            rdx, rdb = write_db(d, objects, version, compressed, kind)
            try:
                db = pa.LazyLoadDB(rdx, rdb)
            except pa.RDataError as e:
                check(False, "%s: index: %s" % (label, e))
                continue
            check(db.compressed == compressed, "%s: compressed read from the index" % label)
            check(sorted(db.keys) == sorted(objects), "%s: the keys" % label)
            check_values(db, label)
            expect_error(lambda: db.fetch("nosuch"), ["'nosuch'", "lines"],
                         label + ": unknown name")


def test_errors(tmp):
    d = tempfile.mkdtemp(dir=tmp)
    rdx, rdb = write_db(d, {"a": lambda w: w.strsxp(LINES), "b": lambda w: w.strsxp(LONG)})
    with open(rdb, "rb") as f:
        good = f.read()

    # a truncated .rdb: the last record lies outside the file
    with open(rdb, "wb") as f:
        f.write(good[:-10])
    db = pa.LazyLoadDB(rdx, rdb)
    expect_error(lambda: db.fetch("b"), ["outside the file", "truncated"], "truncated .rdb")
    check(db.fetch("a").value == LINES, "truncated .rdb: the first record still reads")

    # a flipped byte inside the second record's zlib stream
    off, n = db.keys["b"]
    bad = bytearray(good)
    bad[off + n // 2] ^= 0xFF
    with open(rdb, "wb") as f:
        f.write(bytes(bad))
    db = pa.LazyLoadDB(rdx, rdb)
    expect_error(lambda: db.fetch("b"), ["rdb[b]"], "corrupt zlib stream")

    # a record whose length header is wrong
    bad = bytearray(good)
    bad[off:off + 4] = struct.pack(">I", struct.unpack(">I", good[off:off + 4])[0] + 1)
    with open(rdb, "wb") as f:
        f.write(bytes(bad))
    db = pa.LazyLoadDB(rdx, rdb)
    expect_error(lambda: db.fetch("b"), ["decompresses to", "header says"], "wrong length header")

    # a truncated .rdx (gzip cut short)
    with open(rdx, "rb") as f:
        idx = f.read()
    with open(os.path.join(d, "short.rdx"), "wb") as f:
        f.write(idx[:len(idx) // 2])
    expect_error(lambda: pa.LazyLoadDB(os.path.join(d, "short.rdx"), rdb), ["short.rdx"],
                 "truncated .rdx")

    # serialized streams: truncated, trailing bytes, unsupported and unknown types, bad refs
    w = Writer(3)
    full = w.header() + w.strsxp(LINES)
    for cut in (3, 10, 20, len(full) // 2, len(full) - 1):
        expect_error(lambda: pa.unserialize(full[:cut], "stream"), ["stream", "truncated"],
                     "serialization cut at %d bytes" % cut)
    expect_error(lambda: pa.unserialize(full + b"\0", "stream"), ["1 bytes left over"],
                 "a trailing byte")
    expect_error(lambda: pa.unserialize(b"A\n" + full[2:], "stream"), ["ascii", "XDR"],
                 "ascii format")
    expect_error(lambda: pa.unserialize(b"X\n" + i32(4) + full[6:], "stream"), ["version 4"],
                 "format version 4")
    env = w.header() + flags(4) + i32(0) + i32(254) * 4
    expect_error(lambda: pa.unserialize(env, "stream"), ["ENVSXP", "not supported"],
                 "an environment")
    clo = w.header() + flags(3) + i32(254) + i32(254) + i32(254)
    expect_error(lambda: pa.unserialize(clo, "stream"), ["CLOSXP", "not supported"], "a closure")
    w2 = Writer(3)
    alt = w2.header() + w2.altrep("mmap_real", "mmap", 14, i32(254))
    expect_error(lambda: pa.unserialize(alt, "stream"), ["ALTREP_SXP", "mmap_real"],
                 "an ALTREP class the reader lacks")
    expect_error(lambda: pa.unserialize(w.header() + flags(99), "stream"),
                 ["unknown SEXP type 99"], "an unknown type")
    expect_error(lambda: pa.unserialize(w.header() + i32(255 | (3 << 8)), "stream"),
                 ["reference 3", "0 objects"], "a reference outside the table")
    expect_error(lambda: pa.unserialize(w.header() + flags(16) + i32(1) + flags(13) + i32(0),
                                        "stream"), ["INTSXP", "not a CHARSXP"],
                 "a character vector holding an integer vector")
    expect_error(lambda: pa.unserialize(w.header() + flags(16) + i32(2 ** 30), "stream"),
                 ["length 1073741824"], "an absurd length")
    bad_utf8 = w.header() + flags(16) + i32(1) + flags(9, 8) + i32(2) + b"\xc3\x28"
    expect_error(lambda: pa.unserialize(bad_utf8, "stream"), ["utf-8"], "invalid UTF-8")


def test_paragraphs():
    lines = ["", "  TITLE  ", "", "", "CHAPTER 1", "", "First  line of", "\tthe paragraph.  ",
             "   ", "Second", "one.", "", ""]
    check(pa.paragraphs(lines) == ["TITLE", "CHAPTER 1", "First line of the paragraph.",
                                   "Second one."], "the paragraph rule")
    check(pa.paragraphs(["a", "b"]) == ["a b"], "a paragraph at the end without a blank line")
    for bad, what in ((["ok", None], "NA"), (["a\u00a0b"], "U+00A0"),
                      (["The Project Gutenberg EBook of Emma"], "boilerplate")):
        expect_error(lambda: pa.check_lines("book", bad), ["book"], "refused line: " + what)


def test_end_to_end(tmp):
    if not shutil.which("dpkg-deb"):
        print("skipped the end-to-end part: dpkg-deb is not installed")
        return
    novels = {}
    for name in ("sensesensibility", "prideprejudice", "mansfieldpark", "emma",
                 "northangerabbey", "persuasion"):
        novels[name] = [name.upper(), "", "by Jane Austen", "", "", "CHAPTER 1", "",
                        "It was  the first", "line of %s; £5 and _italics_--" % name, "",
                        "Last."]
    root = os.path.join(tmp, "pkg")
    data = os.path.join(root, "usr", "lib", "R", "site-library", "janeaustenr", "data")
    os.makedirs(data)
    os.makedirs(os.path.join(root, "DEBIAN"))
    with open(os.path.join(root, "DEBIAN", "control"), "w") as f:
        f.write("Package: r-cran-janeaustenr\nVersion: 0.0-test\nArchitecture: all\n"
                "Maintainer: nobody <nobody@example.org>\nDescription: test stand-in\n")
    write_db(data, {k: (lambda w, v=v: w.strsxp(v)) for k, v in novels.items()})
    deb = os.path.join(tmp, "stand-in.deb")
    p = subprocess.run(["dpkg-deb", "--build", root, deb], capture_output=True, text=True)
    if p.returncode != 0:
        print("skipped the end-to-end part: dpkg-deb --build failed:", p.stderr)
        return
    out = os.path.join(tmp, "out")
    cmd = [sys.executable, SCRIPT, "--deb", deb, "--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    check(p.returncode == 0, "prepare_austen.py --deb: exit status %d: %s" % (p.returncode,
                                                                               p.stderr))
    if p.returncode != 0:
        return

    def par(name):
        return [name.upper(), "by Jane Austen", "CHAPTER 1",
                "It was the first line of %s; £5 and _italics_--" % name, "Last."]

    want = {"train.txt": par("sensesensibility") + par("prideprejudice") + par("mansfieldpark")
            + par("emma"),
            "valid.txt": par("northangerabbey"), "test.txt": par("persuasion")}
    for fname, pars in want.items():
        with open(os.path.join(out, fname), "rb") as f:
            got = f.read()
        text = "\n".join(pars) + "\n"
        check(got == text.encode("utf-8"), "%s: the paragraphs in order" % fname)
        line = [l for l in p.stdout.splitlines() if fname in l]
        check(len(line) == 1 and "%d paragraphs" % len(pars) in line[0]
              and "%d words" % len(text.split()) in line[0]
              and "%d bytes" % len(text.encode("utf-8")) in line[0],
              "%s: the printed summary %s" % (fname, line))
    with open(os.path.join(out, pa.STAMP_NAME)) as f:
        stamp = json.load(f)
    check(stamp["deb_version"] == "0.0-test" and stamp["script_version"] == pa.SCRIPT_VERSION,
          "the stamp names the .deb's version and the script's")
    check(sorted(os.listdir(out)) == sorted(list(want) + [pa.STAMP_NAME]),
          "no temporary files left: %s" % os.listdir(out))
    mtime = os.stat(os.path.join(out, "train.txt")).st_mtime_ns
    p = subprocess.run(cmd, capture_output=True, text=True)
    check(p.returncode == 0 and "up to date" in p.stdout
          and os.stat(os.path.join(out, "train.txt")).st_mtime_ns == mtime,
          "a second run does nothing")
    with open(os.path.join(out, "test.txt"), "a") as f:
        f.write("changed\n")
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(os.path.join(out, "test.txt")) as f:
        check(p.returncode == 0 and "up to date" not in p.stdout
              and f.read() == "\n".join(want["test.txt"]) + "\n", "a changed output is rebuilt")

    # a vector with Gutenberg text is refused, and the outputs are left as they were
    novels["emma"].append("End of the Project Gutenberg EBook of Emma")
    shutil.rmtree(data)
    os.makedirs(data)
    write_db(data, {k: (lambda w, v=v: w.strsxp(v)) for k, v in novels.items()})
    subprocess.run(["dpkg-deb", "--build", root, deb], capture_output=True, check=True)
    p = subprocess.run(cmd, capture_output=True, text=True)
    check(p.returncode != 0 and "Gutenberg" in p.stderr and "emma" in p.stderr,
          "Gutenberg boilerplate refused: %s" % p.stderr.strip())


def main():
    with tempfile.TemporaryDirectory(prefix="test-prepare-austen-") as tmp:
        test_reader(tmp)
        test_errors(tmp)
        test_paragraphs()
        test_end_to_end(tmp)
    return finish("ok")


if __name__ == "__main__":
    sys.exit(main())
