#!/usr/bin/env python3
"""prepare_austen.py - Jane Austen's six novels as a plain-text corpus (docs/CORPUS.md).

The text comes from Debian's package r-cran-janeaustenr (Julia Silge's janeaustenr R package,
MIT licence; the novels are Project Gutenberg texts and in the public domain). R is not needed:
the package's lazy-load database (janeaustenr/data/Rdata.rdx and Rdata.rdb) is read by the small
reader of R's serialization format in this file.

    scripts/prepare_austen.py [--deb FILE] [--out DIR] [--force]

  --deb FILE  use this r-cran-janeaustenr .deb instead of `apt-get download r-cran-janeaustenr`
  --out DIR   output folder (default: data/austen under the repository root)
  --force     rebuild even if the stamp says the output is up to date

Writes DIR/train.txt (Sense and Sensibility, Pride and Prejudice, Mansfield Park, Emma, in that
order), DIR/valid.txt (Northanger Abbey) and DIR/test.txt (Persuasion): one paragraph per line,
UTF-8, '\\n' line ends. A paragraph is a run of consecutive lines that are not blank, each line
stripped of leading and trailing whitespace and the lines joined with single spaces; every run of
whitespace inside it is then one space. Nothing else is dropped, changed or added (titles, "by
Jane Austen", volume and chapter headings stay as paragraphs of their own): the package's vectors
hold no Project Gutenberg header or licence text, and the script refuses a vector that does.
"Whitespace" is the ASCII set (space, tab, LF, VT, FF, CR); the script refuses a vector with any
other Unicode whitespace or control character, so that nothing is changed silently.

Each file is written to a temporary name and renamed into place; DIR/prepare_austen.stamp
(JSON) is written last and names the script's version, the .deb (file name, version, SHA-256) and
each output's SHA-256. A second run whose .deb (as `apt-get download --print-uris` or --deb gives
it) and script version match the stamp, with the outputs' hashes intact, does nothing.

Prints one line per file: paragraphs, whitespace-separated words, bytes.

Only the Python 3 standard library is used, plus apt-get and dpkg-deb (Debian's tools).
"""
import argparse
import bz2
import gzip
import hashlib
import json
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

# Bump when anything that changes the output changes (reader, paragraph rule, split).
SCRIPT_VERSION = "1"
PACKAGE = "r-cran-janeaustenr"
STAMP_NAME = "prepare_austen.stamp"

SPLITS = [
    ("train.txt", ["sensesensibility", "prideprejudice", "mansfieldpark", "emma"]),
    ("valid.txt", ["northangerabbey"]),
    ("test.txt", ["persuasion"]),
]


class RDataError(Exception):
    """The R data could not be read: truncated, corrupt, or a construct this reader lacks."""


# ------------------------------------------------------------------------------------------------
# R's serialization format (src/main/serialize.c), XDR flavour, format versions 2 and 3

# SEXP types (Rinternals.h) and the pseudo-types of serialize.c
SEXP_NAMES = {
    0: "NILSXP", 1: "SYMSXP", 2: "LISTSXP", 3: "CLOSXP", 4: "ENVSXP", 5: "PROMSXP",
    6: "LANGSXP", 7: "SPECIALSXP", 8: "BUILTINSXP", 9: "CHARSXP", 10: "LGLSXP", 13: "INTSXP",
    14: "REALSXP", 15: "CPLXSXP", 16: "STRSXP", 17: "DOTSXP", 18: "ANYSXP", 19: "VECSXP",
    20: "EXPRSXP", 21: "BCODESXP", 22: "EXTPTRSXP", 23: "WEAKREFSXP", 24: "RAWSXP",
    25: "S4SXP (OBJSXP)",
    238: "ALTREP_SXP", 239: "ATTRLISTSXP", 240: "ATTRLANGSXP", 241: "BASEENV_SXP",
    242: "EMPTYENV_SXP", 243: "BCREPREF", 244: "BCREPDEF", 245: "GENERICREFSXP",
    246: "CLASSREFSXP", 247: "PERSISTSXP", 248: "PACKAGESXP", 249: "NAMESPACESXP",
    250: "BASENAMESPACE_SXP", 251: "MISSINGARG_SXP", 252: "UNBOUNDVALUE_SXP",
    253: "GLOBALENV_SXP", 254: "NILVALUE_SXP", 255: "REFSXP",
}
NILSXP, SYMSXP, LISTSXP, CHARSXP = 0, 1, 2, 9
LGLSXP, INTSXP, REALSXP, CPLXSXP, STRSXP = 10, 13, 14, 15, 16
VECSXP, EXPRSXP, RAWSXP = 19, 20, 24
ALTREP_SXP, NILVALUE_SXP, REFSXP = 238, 254, 255

IS_OBJECT_BIT, HAS_ATTR_BIT, HAS_TAG_BIT = 1 << 8, 1 << 9, 1 << 10
# CHARSXP levels (the gp field): encoding marks
BYTES_MASK, LATIN1_MASK, UTF8_MASK, ASCII_MASK = 1 << 1, 1 << 2, 1 << 3, 1 << 6

NA_INTEGER = -(2 ** 31)
NA_REAL_LOW_WORD = 1954  # R's NA_real_ is the NaN whose low 32 bits are 1954


def sexp_name(t):
    return SEXP_NAMES.get(t, "unknown SEXP type %d" % t)


class RObject:
    """An unserialized R value.

    sexptype: the SEXP type number; value: for atomic vectors a list of Python values (None for NA;
    str for characters, or bytes for strings marked "bytes"), for VECSXP/EXPRSXP a list of
    RObject/None, for a pairlist a list of (tag, value) pairs, for a symbol its name (str);
    attributes: dict name -> value (None when the object has none); is_object: R's OBJECT bit;
    tail: the last CDR of a dotted pairlist (only ALTREP states have one), else None."""

    __slots__ = ("sexptype", "value", "attributes", "is_object", "tail")

    def __init__(self, sexptype, value, attributes=None, is_object=False, tail=None):
        self.sexptype = sexptype
        self.value = value
        self.attributes = attributes
        self.is_object = is_object
        self.tail = tail

    @property
    def type_name(self):
        return sexp_name(self.sexptype)

    def attr(self, name):
        return (self.attributes or {}).get(name)

    def names(self):
        n = self.attr("names")
        return None if n is None else n.value

    def __repr__(self):
        v = self.value
        if isinstance(v, list) and len(v) > 6:
            v = "[%s, ... (%d items)]" % (", ".join(repr(x) for x in v[:6]), len(v))
        extra = ", attributes=%r" % self.attributes if self.attributes else ""
        return "RObject(%s, %s%s)" % (self.type_name, v, extra)


class RUnserializer:
    """Reads one value serialized by R's serialize()/saveRDS() in XDR format, versions 2 and 3.

    Supports what data sets need: NULL, symbols, pairlists (attribute lists, tags), character
    vectors (NA_character_, the UTF-8/Latin-1/bytes/ASCII marks), logical, integer, double,
    complex and raw vectors, lists and expression vectors, attributes (so factors and data
    frames come back as vectors with their attributes), long vector lengths, the reference table,
    and the ALTREP classes R writes for plain data (compact_intseq, compact_realseq, wrap_*,
    deferred_string of integers). Anything else raises RDataError naming the SEXP type."""

    def __init__(self, data, what="serialized data"):
        self.buf = memoryview(data)
        self.pos = 0
        self.what = what
        self.refs = []
        self.native_encoding = None
        self.depth = 0

    # --- primitives
    def _take(self, n, purpose):
        if n < 0 or self.pos + n > len(self.buf):
            raise RDataError("%s is truncated: %s needs %d bytes at offset %d, %d left"
                             % (self.what, purpose, n, self.pos, len(self.buf) - self.pos))
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def _int(self, purpose="an integer"):
        return struct.unpack(">i", self._take(4, purpose))[0]

    def _length(self, type_name):
        n = self._int("the length of a %s" % type_name)
        if n == -1:  # long vector: upper and lower 32 bits follow
            hi = self._int("a long length")
            lo = self._int("a long length")
            if hi < 0 or lo < 0:
                raise RDataError("%s: invalid long length (%d, %d) of a %s at offset %d"
                                 % (self.what, hi, lo, type_name, self.pos))
            n = (hi << 32) + lo
        elif n < 0:
            raise RDataError("%s: negative length %d of a %s at offset %d"
                             % (self.what, n, type_name, self.pos - 4))
        # every element takes at least one byte: catch absurd lengths before allocating
        if n > len(self.buf) - self.pos:
            raise RDataError("%s is truncated or corrupt: a %s of length %d at offset %d, %d bytes "
                             "left" % (self.what, type_name, n, self.pos, len(self.buf) - self.pos))
        return n

    # --- header
    def read(self):
        fmt = bytes(self._take(2, "the format mark"))
        if fmt != b"X\n":
            if fmt in (b"A\n", b"B\n", b"b\n"):
                raise RDataError("%s: serialization format %r (ascii/native binary) is not "
                                 "supported, only XDR ('X\\n')" % (self.what, fmt))
            raise RDataError("%s: not R serialized data (starts with %r, expected b'X\\n')"
                             % (self.what, fmt))
        version = self._int("the format version")
        self._int("the writer's R version")
        self._int("the minimal reader version")
        if version == 3:
            n = self._int("the native encoding's length")
            if not 0 <= n <= 64:
                raise RDataError("%s: implausible native encoding length %d" % (self.what, n))
            self.native_encoding = bytes(self._take(n, "the native encoding")).decode("ascii",
                                                                                       "replace")
        elif version != 2:
            raise RDataError("%s: serialization format version %d is not supported (2 or 3)"
                             % (self.what, version))
        value = self.item()
        if self.pos != len(self.buf):
            raise RDataError("%s: %d bytes left over after the value (corrupt or not one value)"
                             % (self.what, len(self.buf) - self.pos))
        return value

    # --- items
    def item(self):
        self.depth += 1
        if self.depth > 10000:
            raise RDataError("%s: nesting deeper than 10000 levels (corrupt?)" % self.what)
        try:
            return self._item(self._int("an item's flags"))
        finally:
            self.depth -= 1

    def _unsupported(self, t, where=None):
        raise RDataError("%s: SEXP type %s (%d) at offset %d is not supported by this reader%s"
                         % (self.what, sexp_name(t), t, self.pos - 4 if where is None else where,
                            "" if t in SEXP_NAMES else " (corrupt data?)"))

    def _item(self, flags):
        t = flags & 0xFF
        levels = flags >> 12
        is_obj = bool(flags & IS_OBJECT_BIT)
        has_attr = bool(flags & HAS_ATTR_BIT)
        has_tag = bool(flags & HAS_TAG_BIT)
        if t == NILVALUE_SXP:
            return None
        if t == REFSXP:
            i = flags >> 8
            if i == 0:
                i = self._int("a reference index")
            if not 1 <= i <= len(self.refs):
                raise RDataError("%s: reference %d at offset %d, but only %d objects are in the "
                                 "reference table" % (self.what, i, self.pos, len(self.refs)))
            return self.refs[i - 1]
        if t == SYMSXP:
            name = self.item()
            if not isinstance(name, RObject) or name.sexptype != CHARSXP or name.value is None:
                raise RDataError("%s: a symbol's name is not a string (at offset %d)"
                                 % (self.what, self.pos))
            sym = RObject(SYMSXP, name.value)
            self.refs.append(sym)
            return sym
        if t == LISTSXP:
            return self._pairlist(flags)
        if t == CHARSXP:
            if has_attr:
                raise RDataError("%s: a CHARSXP with attributes at offset %d (corrupt?)"
                                 % (self.what, self.pos - 4))
            return RObject(CHARSXP, self._charsxp(levels))
        if t == ALTREP_SXP:
            return self._altrep(is_obj)
        if t in (LGLSXP, INTSXP):
            n = self._length(sexp_name(t))
            raw = self._take(4 * n, "the elements of a %s" % sexp_name(t))
            vals = [None if v == NA_INTEGER else v for v in struct.unpack(">%di" % n, raw)]
            if t == LGLSXP:
                for v in vals:
                    if v not in (None, 0, 1):
                        raise RDataError("%s: logical value %d (corrupt?)" % (self.what, v))
                vals = [None if v is None else bool(v) for v in vals]
            value = vals
        elif t == REALSXP:
            n = self._length("REALSXP")
            value = self._doubles(n)
        elif t == CPLXSXP:
            n = self._length("CPLXSXP")
            d = self._doubles(2 * n)
            value = [None if d[2 * i] is None or d[2 * i + 1] is None
                     else complex(d[2 * i], d[2 * i + 1]) for i in range(n)]
        elif t == RAWSXP:
            n = self._length("RAWSXP")
            value = bytes(self._take(n, "the bytes of a RAWSXP"))
        elif t == STRSXP:
            n = self._length("STRSXP")
            value = []
            for _ in range(n):
                f = self._int("a string's flags")
                if f & 0xFF != CHARSXP:
                    raise RDataError("%s: element of a character vector is a %s, not a CHARSXP "
                                     "(offset %d)" % (self.what, sexp_name(f & 0xFF), self.pos - 4))
                value.append(self._charsxp(f >> 12))
        elif t in (VECSXP, EXPRSXP):
            n = self._length(sexp_name(t))
            value = [self.item() for _ in range(n)]
        else:
            self._unsupported(t)
        attributes = self._attributes() if has_attr else None
        return RObject(t, value, attributes, is_obj)

    def _doubles(self, n):
        raw = self._take(8 * n, "the elements of a REALSXP")
        out = []
        for (v,) in struct.iter_unpack(">d", raw):
            if v != v and struct.unpack(">Q", struct.pack(">d", v))[0] & 0xFFFFFFFF \
                    == NA_REAL_LOW_WORD:
                v = None  # NA_real_ (other NaNs stay NaN)
            out.append(v)
        return out

    def _charsxp(self, levels):
        n = self._int("a string's length")
        if n == -1:
            return None  # NA_character_
        if n < 0:
            raise RDataError("%s: negative string length %d at offset %d"
                             % (self.what, n, self.pos - 4))
        b = bytes(self._take(n, "a string of %d bytes" % n))
        if levels & BYTES_MASK:
            return b
        if levels & UTF8_MASK:
            enc = "utf-8"
        elif levels & LATIN1_MASK:
            enc = "latin-1"
        elif levels & ASCII_MASK:
            enc = "ascii"
        else:
            # native encoding of the writer: version 3 names it; version 2 does not (UTF-8 assumed,
            # strictly, so anything else fails loudly below)
            enc = self.native_encoding or "utf-8"
            if enc.upper().replace("-", "").replace("_", "") in ("UTF8", "ANSIX3.41968",
                                                                  "C", "POSIX", "ASCII"):
                enc = "utf-8"
        try:
            return b.decode(enc)
        except (UnicodeDecodeError, LookupError) as e:
            raise RDataError("%s: a string at offset %d does not decode as %s: %s"
                             % (self.what, self.pos - n, enc, e))

    def _attributes(self):
        a = self.item()
        if a is None:
            return None
        if not isinstance(a, RObject) or a.sexptype != LISTSXP or a.tail is not None:
            raise RDataError("%s: attributes are a %s, not a pairlist (offset %d)"
                             % (self.what, getattr(a, "type_name", type(a).__name__), self.pos))
        out = {}
        for tag, v in a.value:
            if tag is None:
                raise RDataError("%s: an attribute without a name (offset %d)"
                                 % (self.what, self.pos))
            out[tag] = v
        return out

    def _pairlist(self, flags):
        """A pairlist, read cell by cell (R writes the CDR chain as nested items). A chain that
        ends in something other than NULL (a dotted pair, as in the states of ALTREP wrappers)
        keeps that last CDR in .tail."""
        cells = []
        first_attr = None
        first_obj = bool(flags & IS_OBJECT_BIT)
        first = True
        while True:
            attrs = self._attributes() if flags & HAS_ATTR_BIT else None
            if first:
                first_attr = attrs
            elif attrs is not None:
                raise RDataError("%s: attributes on an inner pairlist cell are not supported "
                                 "(offset %d)" % (self.what, self.pos))
            tag = None
            if flags & HAS_TAG_BIT:
                sym = self.item()
                if not isinstance(sym, RObject) or sym.sexptype != SYMSXP:
                    raise RDataError("%s: a pairlist tag is not a symbol (offset %d)"
                                     % (self.what, self.pos))
                tag = sym.value
            cells.append((tag, self.item()))
            first = False
            flags = self._int("a pairlist cell's flags")
            t = flags & 0xFF
            if t == NILVALUE_SXP:
                return RObject(LISTSXP, cells, first_attr, first_obj)
            if t != LISTSXP:
                self.depth += 1
                try:
                    tail = self._item(flags)
                finally:
                    self.depth -= 1
                return RObject(LISTSXP, cells, first_attr, first_obj, tail)

    def _altrep(self, is_obj):
        where = self.pos - 4
        info = self.item()
        state = self.item()
        attr = self.item()
        try:
            cls = info.value[0][1].value
            base_type = info.value[2][1].value[0]
        except (AttributeError, IndexError, TypeError):
            cls = base_type = None
        if not isinstance(cls, str) or not isinstance(base_type, int):
            raise RDataError("%s: malformed ALTREP class information at offset %d"
                             % (self.what, where))
        attributes = None
        if attr is not None:
            if not isinstance(attr, RObject) or attr.sexptype != LISTSXP or attr.tail is not None \
                    or None in [tag for tag, _ in attr.value]:
                raise RDataError("%s: ALTREP attributes at offset %d are not a pairlist of named "
                                 "values" % (self.what, where))
            attributes = {tag: v for tag, v in attr.value}

        def bad():
            raise RDataError("%s: ALTREP class %s at offset %d has a state this reader does not "
                             "understand" % (self.what, cls, where))

        if cls in ("compact_intseq", "compact_realseq"):
            # state: c(length, first, increment), a double vector (an integer one from R 3.5)
            if not isinstance(state, RObject) or state.sexptype not in (INTSXP, REALSXP) \
                    or len(state.value) != 3 or None in state.value:
                bad()
            n, n1, inc = state.value
            if n != int(n) or n < 0 or inc not in (1, -1):
                bad()
            if n > 10 ** 8:
                raise RDataError("%s: ALTREP %s of length %d at offset %d: too long for this "
                                 "reader" % (self.what, cls, n, where))
            vals = [n1 + inc * i for i in range(int(n))]
            if cls == "compact_intseq":
                return RObject(INTSXP, [int(v) for v in vals], attributes, is_obj)
            return RObject(REALSXP, [float(v) for v in vals], attributes, is_obj)
        if cls.startswith("wrap_"):
            # state: CONS(wrapped vector, metadata)
            if not isinstance(state, RObject) or state.sexptype != LISTSXP \
                    or len(state.value) != 1:
                bad()
            x = state.value[0][1]
            if not isinstance(x, RObject) or x.sexptype != base_type:
                bad()
            return RObject(x.sexptype, x.value, attributes, is_obj)
        if cls == "deferred_string":
            # state: CONS(the vector to convert, scipen)
            if not isinstance(state, RObject) or state.sexptype != LISTSXP \
                    or len(state.value) != 1:
                bad()
            arg = state.value[0][1]
            if arg is None or arg.sexptype != INTSXP:
                raise RDataError("%s: ALTREP deferred_string of a %s at offset %d is not "
                                 "supported (only of integers)"
                                 % (self.what, getattr(arg, "type_name", "NULL"), where))
            return RObject(STRSXP, [None if v is None else str(v) for v in arg.value],
                           attributes, is_obj)
        raise RDataError("%s: SEXP type ALTREP_SXP of class %s at offset %d is not supported by "
                         "this reader" % (self.what, cls, where))


def unserialize(data, what="serialized data"):
    return RUnserializer(data, what).read()


# ------------------------------------------------------------------------------------------------
# R's lazy-load databases (makeLazyLoadDB / lazyLoadDBfetch; R_decompress1/2/3 in connections.c)

def _maybe_decompress_file(data, what):
    """Files written by saveRDS: gzip (the default), bzip2, xz, or plain."""
    try:
        if data[:2] == b"\x1f\x8b":
            return gzip.decompress(data)
        if data[:3] == b"BZh":
            return bz2.decompress(data)
        if data[:6] == b"\xfd7zXZ\x00":
            return lzma.decompress(data)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError) as e:
        raise RDataError("%s: cannot decompress: %s" % (what, e))
    return data


def read_rds(path):
    with open(path, "rb") as f:
        data = f.read()
    return unserialize(_maybe_decompress_file(data, path), path)


def decompress_record(raw, compressed, what):
    """The bytes of one .rdb record: compressed is the index's `compressed` field (FALSE/0, TRUE/1
    zlib, 2 bzip2, 3 xz). Every form starts with the uncompressed length (4 bytes, big-endian);
    forms 2 and 3 then have a type byte: '0' stored, '1' zlib, '2' bzip2, and (form 3) 'Z' a raw
    LZMA2 stream with preset 6 options."""
    if compressed == 0:
        return raw
    if len(raw) < 5:
        raise RDataError("%s: record of %d bytes is too short" % (what, len(raw)))
    outlen = struct.unpack(">I", raw[:4])[0]
    try:
        if compressed == 1:
            kind, body = "zlib", raw[4:]
            out = zlib.decompress(body)
        elif compressed in (2, 3):
            kind, body = chr(raw[4]), raw[5:]
            if kind == "0":
                out = bytes(body)
            elif kind == "1":
                out = zlib.decompress(body)
            elif kind == "2":
                out = bz2.decompress(body)
            elif kind == "Z" and compressed == 3:
                d = lzma.LZMADecompressor(lzma.FORMAT_RAW,
                                          filters=[{"id": lzma.FILTER_LZMA2, "preset": 6}])
                out = d.decompress(body, max_length=outlen + 1)
            else:
                raise RDataError("%s: unknown compression type %r in a record (compressed=%d)"
                                 % (what, kind, compressed))
        else:
            raise RDataError("%s: unknown compression %r in the index" % (what, compressed))
    except (zlib.error, OSError, EOFError, ValueError, lzma.LZMAError) as e:
        raise RDataError("%s: cannot decompress a record (%s): %s" % (what, kind, e))
    if len(out) != outlen:
        raise RDataError("%s: a record decompresses to %d bytes, its header says %d (truncated or "
                         "corrupt)" % (what, len(out), outlen))
    return out


class LazyLoadDB:
    """R's lazy-load database: NAME.rdx (the index, a saveRDS'd list of `variables` (name ->
    c(offset, length) in NAME.rdb), `references` and `compressed`) and NAME.rdb (the records)."""

    def __init__(self, rdx_path, rdb_path):
        self.rdb_path = rdb_path
        index = read_rds(rdx_path)
        if not isinstance(index, RObject) or index.sexptype != VECSXP or not index.names():
            raise RDataError("%s: the index is not a named list" % rdx_path)
        fields = dict(zip(index.names(), index.value))
        for key in ("variables", "compressed"):
            if key not in fields:
                raise RDataError("%s: the index has no `%s`" % (rdx_path, key))
        comp = fields["compressed"]
        if comp is None or comp.sexptype not in (LGLSXP, INTSXP, REALSXP) or len(comp.value) != 1 \
                or comp.value[0] is None:
            raise RDataError("%s: `compressed` is not a single value" % rdx_path)
        self.compressed = int(comp.value[0])
        variables = fields["variables"]
        if variables is None or variables.sexptype != VECSXP:
            raise RDataError("%s: `variables` is not a list" % rdx_path)
        names = variables.names() or []
        if len(names) != len(variables.value):
            raise RDataError("%s: `variables` is not a named list" % rdx_path)
        self.keys = {}
        for name, key in zip(names, variables.value):
            if key is None or key.sexptype not in (INTSXP, REALSXP) or len(key.value) != 2 \
                    or None in key.value:
                raise RDataError("%s: the key of %r is not c(offset, length)" % (rdx_path, name))
            self.keys[name] = (int(key.value[0]), int(key.value[1]))
        with open(rdb_path, "rb") as f:
            self.rdb = f.read()

    def fetch(self, name):
        if name not in self.keys:
            raise RDataError("%s: no object %r (it holds: %s)"
                             % (self.rdb_path, name, ", ".join(sorted(self.keys))))
        off, n = self.keys[name]
        what = "%s[%s]" % (os.path.basename(self.rdb_path), name)
        if off < 0 or n < 0 or off + n > len(self.rdb):
            raise RDataError("%s: record at offset %d, length %d lies outside the file (%d bytes; "
                             "truncated?)" % (what, off, n, len(self.rdb)))
        data = decompress_record(self.rdb[off:off + n], self.compressed, what)
        return unserialize(data, what)


# ------------------------------------------------------------------------------------------------
# the corpus

ASCII_WS = " \t\n\v\f\r"
_ws_run = re.compile("[ \t\n\v\f\r]+")


def check_lines(name, lines):
    """The novel's character vector: no NA, no Gutenberg boilerplate, no whitespace or control
    character outside ASCII whitespace (which the paragraph rule would otherwise keep as is)."""
    for i, line in enumerate(lines):
        if line is None:
            raise RDataError("%s: line %d is NA" % (name, i + 1))
        if not isinstance(line, str):
            raise RDataError("%s: line %d is marked as bytes, not text" % (name, i + 1))
        for ch in line:
            if ch not in ASCII_WS and (ch.isspace() or (ord(ch) < 32 or 0x7f <= ord(ch) < 0xa0)):
                raise RDataError("%s: line %d holds the character U+%04X; the paragraph rule only "
                                 "knows ASCII whitespace" % (name, i + 1, ord(ch)))
        low = line.lower()
        if "gutenberg" in low or "*** start of" in low or "*** end of" in low:
            raise RDataError("%s: line %d looks like Project Gutenberg boilerplate: %r"
                             % (name, i + 1, line))


def paragraphs(lines):
    out, cur = [], []
    for line in lines:
        s = line.strip(ASCII_WS)
        if s:
            cur.append(s)
        elif cur:
            out.append(_ws_run.sub(" ", " ".join(cur)))
            cur = []
    if cur:
        out.append(_ws_run.sub(" ", " ".join(cur)))
    return out


def find_db(root):
    found = []
    for dirpath, _dirs, files in os.walk(root):
        if os.path.basename(dirpath) == "data" \
                and os.path.basename(os.path.dirname(dirpath)) == "janeaustenr" \
                and "Rdata.rdx" in files and "Rdata.rdb" in files:
            found.append(dirpath)
    if len(found) != 1:
        raise SystemExit("prepare_austen.py: error: expected one janeaustenr/data/Rdata.rdx and "
                         ".rdb in the package, found %d: %s" % (len(found), found))
    return os.path.join(found[0], "Rdata.rdx"), os.path.join(found[0], "Rdata.rdb")


# ------------------------------------------------------------------------------------------------
# the package

def die(msg):
    sys.exit("prepare_austen.py: error: " + msg)


def run(cmd, cwd=None):
    try:
        return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)
    except FileNotFoundError:
        die("%s is not installed (this script needs Debian's apt-get and dpkg-deb, or --deb FILE "
            "with dpkg-deb)" % cmd[0])


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def apt_print_uri(tmp):
    """(file name, SHA-256) of the .deb apt-get would download, without downloading; None if apt
    does not know the package."""
    r = run(["apt-get", "download", "--print-uris", PACKAGE], cwd=tmp)
    for line in r.stdout.splitlines():
        m = re.match(r"'[^']*' (\S+\.deb) \d+ SHA256:([0-9a-f]{64})\s*$", line)
        if m:
            return m.group(1), m.group(2)
    return None


def apt_download(tmp):
    r = run(["apt-get", "download", PACKAGE], cwd=tmp)
    if r.returncode != 0:
        err = r.stderr + r.stdout
        if "Unable to locate package" in err or "has no installation candidate" in err \
                or "Can't select" in err or "No packages found" in err:
            print("prepare_austen.py: apt does not know %s; running apt-get update" % PACKAGE,
                  file=sys.stderr)
            u = run(["apt-get", "update"])
            if u.returncode != 0:
                die("apt-get update failed:\n" + u.stderr.strip())
            r = run(["apt-get", "download", PACKAGE], cwd=tmp)
        if r.returncode != 0:
            die("apt-get download %s failed:\n%s\n(or pass --deb FILE with the package, e.g. "
                "from https://packages.debian.org/%s)" % (PACKAGE, (r.stderr + r.stdout).strip(),
                                                          PACKAGE))
    debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
    if len(debs) != 1:
        die("apt-get download left %d .deb files in %s" % (len(debs), tmp))
    return os.path.join(tmp, debs[0])


def deb_version(deb):
    r = run(["dpkg-deb", "-f", deb, "Package", "Version"])
    if r.returncode != 0:
        die("dpkg-deb cannot read %s:\n%s" % (deb, r.stderr.strip()))
    fields = dict(l.split(": ", 1) for l in r.stdout.splitlines() if ": " in l)
    if fields.get("Package") != PACKAGE:
        die("%s is the package %r, not %s" % (deb, fields.get("Package"), PACKAGE))
    return fields["Version"]


# ------------------------------------------------------------------------------------------------
# output

def read_stamp(out_dir):
    try:
        with open(os.path.join(out_dir, STAMP_NAME)) as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def stamp_current(out_dir, stamp, deb_sha256):
    """True if the stamp says the outputs came from this .deb and this script version and they
    are unchanged."""
    if not stamp or stamp.get("script_version") != SCRIPT_VERSION \
            or stamp.get("deb_sha256") != deb_sha256:
        return False
    files = stamp.get("files")
    for fname, _ in SPLITS:
        p = os.path.join(out_dir, fname)
        try:
            want = files[fname]["sha256"]
            for key in ("paragraphs", "words", "bytes"):
                int(files[fname][key])
        except (KeyError, TypeError, ValueError):
            return False
        if not os.path.isfile(p) or sha256_file(p) != want:
            return False
    return True


def write_atomic(path, data):
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def summary_line(fname, n_par, n_words, n_bytes):
    return "%-9s %7d paragraphs %9d words %10d bytes" % (fname, n_par, n_words, n_bytes)


def print_summary(out_dir, stamp):
    for fname, _ in SPLITS:
        f = stamp["files"][fname]
        print(summary_line(os.path.join(out_dir, fname), f["paragraphs"], f["words"], f["bytes"]))


def build(deb):
    """Reads the novels from the .deb and returns {file name: text bytes}."""
    with tempfile.TemporaryDirectory(prefix="austen-x-") as x:
        r = run(["dpkg-deb", "-x", deb, x])
        if r.returncode != 0:
            die("dpkg-deb -x %s failed:\n%s" % (deb, r.stderr.strip()))
        rdx, rdb = find_db(x)
        db = LazyLoadDB(rdx, rdb)
        texts = {}
        for fname, books in SPLITS:
            pars = []
            for book in books:
                obj = db.fetch(book)
                if obj is None or obj.sexptype != STRSXP:
                    raise RDataError("%s is a %s, not a character vector"
                                     % (book, obj.type_name if obj else "NULL"))
                check_lines(book, obj.value)
                pars.extend(paragraphs(obj.value))
            texts[fname] = ("\n".join(pars) + "\n").encode("utf-8")
    return texts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deb", help="the %s .deb to use instead of apt-get download" % PACKAGE)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(here), "data", "austen"),
                    help="output folder (default: data/austen in the repository)")
    ap.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = ap.parse_args(argv)
    out_dir = os.path.abspath(args.out)
    stamp = None if args.force else read_stamp(out_dir)

    with tempfile.TemporaryDirectory(prefix="austen-") as tmp:
        if args.deb:
            deb = os.path.abspath(args.deb)
            if not os.path.isfile(deb):
                die("no such file: %s" % args.deb)
        else:
            uri = apt_print_uri(tmp) if stamp else None
            if uri and stamp_current(out_dir, stamp, uri[1]):
                print("%s is up to date (%s, script version %s)" % (out_dir, uri[0],
                                                                      SCRIPT_VERSION))
                print_summary(out_dir, stamp)
                return 0
            deb = apt_download(tmp)
        deb_sha = sha256_file(deb)
        if stamp_current(out_dir, stamp, deb_sha):
            print("%s is up to date (%s, script version %s)" % (out_dir, os.path.basename(deb),
                                                                  SCRIPT_VERSION))
            print_summary(out_dir, stamp)
            return 0
        version = deb_version(deb)
        try:
            texts = build(deb)
        except RDataError as e:
            die(str(e))

    os.makedirs(out_dir, exist_ok=True)
    # the old stamp goes first, so that an interrupted run is never taken as up to date
    try:
        os.unlink(os.path.join(out_dir, STAMP_NAME))
    except FileNotFoundError:
        pass
    new = {"script_version": SCRIPT_VERSION, "package": PACKAGE, "deb_version": version,
           "deb_file": os.path.basename(deb), "deb_sha256": deb_sha, "files": {}}
    for fname, books in SPLITS:
        data = texts[fname]
        write_atomic(os.path.join(out_dir, fname), data)
        text = data.decode("utf-8")
        new["files"][fname] = {
            "books": books, "sha256": hashlib.sha256(data).hexdigest(),
            "paragraphs": text.count("\n"), "words": len(text.split()), "bytes": len(data)}
    write_atomic(os.path.join(out_dir, STAMP_NAME),
                 (json.dumps(new, indent=1, sort_keys=True) + "\n").encode("utf-8"))
    print_summary(out_dir, new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
