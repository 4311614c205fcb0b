"""Bounds on the work one file may cause, shared by `check`, `audit` and `scrub`.

Every decompression and decode of recorded data goes through `bounded_decompress`,
so a gzip bomb (1 KB that inflates to 1 GB) costs at most `MAX_DECODED_BYTES` of
memory in every command; a file larger than `MAX_FILE_BYTES` on disk is not read.
Anything over a cap is reported as an `unreadable-file` finding, never a crash.
"""

from __future__ import annotations

import gzip
import io
import zlib

__all__ = [
    "MAX_DECODED_BYTES",
    "MAX_FILE_BYTES",
    "MAX_NESTING",
    "MAX_NODES",
    "OverCap",
    "bounded_decompress",
    "bounded_gunzip",
]

# Real recordings are far below these (the largest LLM cassette we have met is a few
# hundred KB); the caps keep the memory of one file's work well under 100 MB.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_DECODED_BYTES = 16 * 1024 * 1024
# JSON/YAML nesting and YAML node counts (alias expansion, "billion laughs").
MAX_NESTING = 100
MAX_NODES = 2_000_000
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
        if out[:2] == b"\x1f\x8b":
            out = bounded_gunzip(out, limit)
            continue
        break
    if out is data:
        if "deflate" in enc:
            out = _inflate(data, limit)
        elif enc.strip() in ("br", "brotli"):
            out = _unbrotli(data, limit)
    return out
