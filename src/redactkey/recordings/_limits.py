"""Bounds on the work one file may cause, shared by every command that reads files.

Every decompression and decode of recorded data goes through `bounded_decompress`,
so a gzip bomb (1 KB that inflates to 1 GB) costs at most `MAX_DECODED_BYTES` of
memory in every command. A file larger than `MAX_FILE_BYTES` on disk is not held
whole: `check` and `audit` read it in pieces (`_pieces`), the commands that rewrite
files refuse it. A YAML document whose aliases would build more than it spells out
is refused before anything is built (`alias_problem`). Anything over a cap is
reported as an `unreadable-file` or `unparsable-file` finding, never a crash.
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import Any

__all__ = [
    "MAX_ALIASES",
    "MAX_ALIAS_NODES",
    "MAX_DECODED_BYTES",
    "MAX_FILE_BYTES",
    "MAX_NESTING",
    "MAX_NODES",
    "OverCap",
    "alias_problem",
    "bounded_decompress",
    "bounded_gunzip",
]

# A file up to this size is read whole (every per-format check needs the whole document,
# about 13 bytes of memory per byte of file); a larger one is read in pieces.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_DECODED_BYTES = 16 * 1024 * 1024
# JSON/YAML nesting and YAML node counts.
MAX_NESTING = 100
MAX_NODES = 2_000_000
# YAML aliases ("billion laughs"): how many a document may use, and how many nodes they
# may add to those it spells out. Recorders write none, or a few for a shared object.
MAX_ALIASES = 1000
MAX_ALIAS_NODES = 100_000
_CHUNK = 64 * 1024


class OverCap(ValueError):
    """Decoding would exceed `MAX_DECODED_BYTES` (or the data is not what it claims)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def bounded_gunzip(data: bytes, limit: int = MAX_DECODED_BYTES) -> bytes:
    """The gunzipped bytes of `data`, reading at most `limit` bytes; `OverCap` beyond it
    or when `data` is not valid gzip."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as handle:
            out = handle.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise OverCap(f"gzip data that cannot be decompressed ({exc})") from None
    if len(out) > limit:
        raise OverCap(f"decompresses to more than {limit // (1024 * 1024)} MB")
    return out


def _inflate(data: bytes, limit: int) -> bytes:
    for wbits in (zlib.MAX_WBITS, -zlib.MAX_WBITS):
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(data, limit + 1)
        except zlib.error:
            continue
        if len(out) > limit:
            raise OverCap(f"decompresses to more than {limit // (1024 * 1024)} MB")
        return out
    raise OverCap("deflate data that cannot be decompressed")


def _unbrotli(data: bytes, limit: int) -> bytes:
    try:
        import brotli  # type: ignore[import-untyped,unused-ignore]  # optional extra
    except ImportError:
        raise OverCap("brotli body (install `brotli` to read it)") from None
    decompressor = brotli.Decompressor()
    out = bytearray()
    try:
        for start in range(0, len(data), _CHUNK):
            room = limit + 1 - len(out)
            out += decompressor.process(data[start:start + _CHUNK], output_buffer_limit=room)
            if len(out) > limit:
                raise OverCap(f"decompresses to more than {limit // (1024 * 1024)} MB")
    except brotli.error as exc:
        raise OverCap(f"brotli data that cannot be decompressed ({exc})") from None
    return bytes(out)


def bounded_decompress(data: bytes, encoding: str = "", limit: int = MAX_DECODED_BYTES) -> bytes:
    """`data` decompressed by its gzip magic or its `Content-Encoding` (`gzip`, `deflate`,
    `br`), else unchanged; nested gzip layers are opened too, each within `limit`."""
    enc = encoding.lower()
    out = data
    for _layer in range(4):
        if out[:2] != b"\x1f\x8b":
            break
        out = bounded_gunzip(out, limit)
    if out is data:
        if "deflate" in enc:
            out = _inflate(data, limit)
        elif enc.strip() in ("br", "brotli"):
            out = _unbrotli(data, limit)
    return out


def alias_problem(root: Any) -> str | None:
    """Why a composed YAML node graph must not be built, or None: more than `MAX_ALIASES`
    alias uses, or aliases that would add more than `MAX_ALIAS_NODES` nodes once built.

    Composing shares an aliased node rather than copying it, so the graph is as small as
    the text; this walk visits each node once and adds up what building would make of
    it, so a billion laughs is refused before anything is built. Nodes are PyYAML's or
    ruamel.yaml's (a scalar's `value` is its text, a sequence's a list of nodes, a
    mapping's a list of (key, value) pairs)."""
    built: dict[int, int] = {}  # node -> how many nodes building it makes
    uses = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        value = getattr(node, "value", None)  # a list of nodes, or of (key, value) pairs
        children = [part for item in value for part in (
            item if isinstance(item, tuple) else (item,))] if isinstance(value, list) else []
        if done:
            built[id(node)] = 1 + sum(built.get(id(child), 1) for child in children)
            continue
        if id(node) in built:
            uses += 1  # met again: an alias (or a cycle, built as null)
            if uses > MAX_ALIASES:
                return f"more than {MAX_ALIASES} YAML aliases; aliases are not expanded here"
            continue
        built[id(node)] = 1
        stack.append((node, True))
        stack.extend((child, False) for child in children)
    extra = built.get(id(root), 1) - len(built)
    if extra > MAX_ALIAS_NODES:
        return (f"its YAML aliases would build {extra} nodes more than the file holds (a "
                f"billion laughs?); at most {MAX_ALIAS_NODES} are built")
    return None
