"""A small Thrift binary-protocol (TBinaryProtocol) reader and writer of our own.

No IDL is needed: :func:`read_struct` decodes any struct generically into ``{field_id:
(type, value)}`` and callers pick the fields they know, so unknown fields (newer Storm
versions add some) are skipped by construction. Every read is bounds-checked: a truncated
buffer, an unknown type byte, a negative or impossible size, or nesting deeper than
:data:`MAX_DEPTH` raises :class:`ThriftError` with the byte offset, never an IndexError
or a MemoryError.

Encoding (Apache Thrift, binary protocol, non-strict struct payload as Nimbus writes it):
a struct is a sequence of fields ``type:i8 id:i16 value`` ended by a STOP byte (0); a
string/binary is ``length:i32 bytes``; a list or set is ``elem_type:i8 size:i32
elems``; a map is ``key_type:i8 value_type:i8 size:i32 (k, v)*``; integers are
big-endian two's complement; a double is an IEEE-754 big-endian 8-byte value; a bool is
one byte.

Decoded values: STRING -> ``bytes`` (Thrift does not distinguish string from binary; use
:func:`text` to decode), STRUCT -> ``dict[int, tuple[int, Any]]``, LIST/SET -> ``list``,
MAP -> ``list[tuple[key, value]]`` (keys may be structs, which are not hashable).
"""

from __future__ import annotations

import struct as _struct
from typing import Any

# Thrift type ids (TType).
STOP, VOID, BOOL, BYTE, DOUBLE, I16, I32, I64, STRING, STRUCT, MAP, SET, LIST = 0, 1, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 15
TYPE_NAMES = {
    STOP: "stop", VOID: "void", BOOL: "bool", BYTE: "byte", DOUBLE: "double", I16: "i16", I32: "i32",
    I64: "i64", STRING: "string", STRUCT: "struct", MAP: "map", SET: "set", LIST: "list",
}
MAX_DEPTH = 64  # StormTopology nests about 6 deep; anything deeper is corrupt input

_I16 = _struct.Struct(">h")
_I32 = _struct.Struct(">i")
_I64 = _struct.Struct(">q")
_DBL = _struct.Struct(">d")
_FIXED = {BOOL: 1, BYTE: 1, I16: 2, I32: 4, I64: 8, DOUBLE: 8}


class ThriftError(ValueError):
    """Malformed Thrift binary data; ``offset`` is the byte where decoding failed."""

    def __init__(self, message: str, offset: int):
        super().__init__(f"{message} (at byte {offset})")
        self.offset = offset


class _Reader:
    """Cursor over a bytes buffer with bounds-checked primitive reads."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes):
        self.buf = memoryview(buf)
        self.pos = 0
        self.end = len(buf)

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.end:
            raise ThriftError(f"truncated input: {what} needs {n} bytes, {self.end - self.pos} left", self.pos)

    def byte(self) -> int:
        self.need(1, "a type byte")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def i16(self) -> int:
        self.need(2, "an i16")
        v = _I16.unpack_from(self.buf, self.pos)[0]
        self.pos += 2
        return v

    def i32(self) -> int:
        self.need(4, "an i32")
        v = _I32.unpack_from(self.buf, self.pos)[0]
        self.pos += 4
        return v

    def size(self, elem_min_bytes: int, what: str) -> int:
        at = self.pos
        n = self.i32()
        if n < 0:
            raise ThriftError(f"negative {what} size {n}", at)
        # every element takes at least elem_min_bytes; refuse sizes the buffer cannot hold
        if n * elem_min_bytes > self.end - self.pos:
            unit = "bytes" if what == "string" else "elements"
            raise ThriftError(f"truncated input: {what} claims {n} {unit} but only {self.end - self.pos} bytes remain", at)
        return n

    def value(self, ttype: int, depth: int) -> Any:
        if ttype == STRING:
            n = self.size(1, "string")
            v = bytes(self.buf[self.pos:self.pos + n])
            self.pos += n
            return v
        if ttype == I32:
            return self.i32()
        if ttype == STRUCT:
            return self.struct(depth + 1)
        if ttype == BOOL:
            return self.byte() != 0
        if ttype == BYTE:
            b = self.byte()
            return b - 256 if b > 127 else b
        if ttype == I16:
            return self.i16()
        if ttype == I64:
            self.need(8, "an i64")
            v = _I64.unpack_from(self.buf, self.pos)[0]
            self.pos += 8
            return v
        if ttype == DOUBLE:
            self.need(8, "a double")
            v = _DBL.unpack_from(self.buf, self.pos)[0]
            self.pos += 8
            return v
        if ttype in (LIST, SET):
            if depth >= MAX_DEPTH:
                raise ThriftError(f"nesting deeper than {MAX_DEPTH}", self.pos)
            et = self.elem_type()
            n = self.size(_min_bytes(et), TYPE_NAMES[ttype])
            return [self.value(et, depth + 1) for _ in range(n)]
        if ttype == MAP:
            if depth >= MAX_DEPTH:
                raise ThriftError(f"nesting deeper than {MAX_DEPTH}", self.pos)
            kt = self.elem_type()
            vt = self.elem_type()
            n = self.size(_min_bytes(kt) + _min_bytes(vt), "map")
            out = []
            for _ in range(n):
                k = self.value(kt, depth + 1)
                out.append((k, self.value(vt, depth + 1)))
            return out
        raise ThriftError(f"unknown thrift type {ttype}", self.pos - 1)

    def elem_type(self) -> int:
        at = self.pos
        t = self.byte()
        if t not in TYPE_NAMES or t in (STOP, VOID):
            raise ThriftError(f"unknown thrift element type {t}", at)
        return t

    def struct(self, depth: int) -> dict[int, tuple[int, Any]]:
        if depth > MAX_DEPTH:
            raise ThriftError(f"nesting deeper than {MAX_DEPTH}", self.pos)
        fields: dict[int, tuple[int, Any]] = {}
        while True:
            at = self.pos
            t = self.byte()
            if t == STOP:
                return fields
            if t not in TYPE_NAMES or t == VOID:
                raise ThriftError(f"unknown thrift field type {t}", at)
            fid = self.i16()
            fields[fid] = (t, self.value(t, depth))


def _min_bytes(ttype: int) -> int:
    """The fewest bytes one value of this type can occupy (sizes are checked against it)."""
    if ttype in _FIXED:
        return _FIXED[ttype]
    if ttype == STRUCT:
        return 1  # the STOP byte
    if ttype == MAP:
        return 6
    if ttype in (LIST, SET):
        return 5
    return 4  # string: its length


def read_struct(buf: bytes, *, exact: bool = True) -> dict[int, tuple[int, Any]]:
    """Decode one struct from ``buf``; with ``exact``, trailing bytes are an error."""
    r = _Reader(buf)
    out = r.struct(0)
    if exact and r.pos != r.end:
        raise ThriftError(f"{r.end - r.pos} unexpected bytes after the struct", r.pos)
    return out


def text(value: bytes, where: str) -> str:
    """A Thrift string as text (UTF-8); ``where`` names the field for the error."""
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ThriftError(f"{where} is not valid UTF-8", e.start) from None


# ----------------------------------------------------------------------------- writing
class Writer:
    """Build Thrift binary bytes; values are given with their types (see :func:`write_struct`)."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def value(self, ttype: int, v: Any) -> None:
        p = self.parts
        if ttype == STRING:
            b = v.encode("utf-8") if isinstance(v, str) else bytes(v)
            p.append(_I32.pack(len(b)))
            p.append(b)
        elif ttype == I32:
            p.append(_I32.pack(v))
        elif ttype == I16:
            p.append(_I16.pack(v))
        elif ttype == I64:
            p.append(_I64.pack(v))
        elif ttype == DOUBLE:
            p.append(_DBL.pack(v))
        elif ttype == BOOL:
            p.append(b"\x01" if v else b"\x00")
        elif ttype == BYTE:
            p.append(_struct.pack(">b", v))
        elif ttype == STRUCT:
            self.struct(v)
        elif ttype in (LIST, SET):
            et, items = v
            p.append(bytes([et]))
            p.append(_I32.pack(len(items)))
            for x in items:
                self.value(et, x)
        elif ttype == MAP:
            kt, vt, items = v
            p.append(bytes([kt, vt]))
            p.append(_I32.pack(len(items)))
            for k, x in items:
                self.value(kt, k)
                self.value(vt, x)
        else:
            raise ValueError(f"cannot write thrift type {ttype}")

    def struct(self, fields: dict[int, tuple[int, Any]]) -> None:
        for fid in sorted(fields):
            t, v = fields[fid]
            self.parts.append(bytes([t]) + _I16.pack(fid))
            self.value(t, v)
        self.parts.append(b"\x00")

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


def write_struct(fields: dict[int, tuple[int, Any]]) -> bytes:
    """Encode ``{field_id: (type, value)}``; a LIST/SET value is ``(elem_type, items)``, a
    MAP value ``(key_type, value_type, [(k, v), ...])``, a STRUCT value another such dict."""
    w = Writer()
    w.struct(fields)
    return w.getvalue()
