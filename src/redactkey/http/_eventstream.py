"""AWS event-stream frames (``application/vnd.amazon.eventstream``): the binary codec.

Bedrock's streamed answers (``converse_stream``, ``invoke_model_with_response_stream``)
are binary frames: a prelude (total and header lengths and their CRC32), typed
headers, a payload and a CRC32 of the whole message. `FrameDecoder` turns bytes cut
anywhere into ``(headers, payload)`` pairs and `encode_frame` turns a pair back into
the same bytes. Headers are ``[name, value]`` pairs in wire order: a string value as
itself, any other type as ``{"type": "integer", "value": 5}`` so that it encodes back
to the same type. The JSON documents a fixture stores are `redactkey.http._documents`'s.
"""

from __future__ import annotations

import base64
import struct
import uuid
import zlib
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["EVENT_STREAM", "FrameDecoder", "FrameError", "encode_frame"]

EVENT_STREAM: Final = "application/vnd.amazon.eventstream"

JSON = Any
Frame = tuple[list[list[JSON]], bytes]
_PRELUDE: Final = struct.Struct(">III")
# Header value types of the wire format, by their code (the names are the AWS ones).
_TYPES: Final = {
    0: "boolean", 1: "boolean", 2: "byte", 3: "short", 4: "integer", 5: "long",
    6: "bytes", 7: "string", 8: "timestamp", 9: "uuid",
}
_INTS: Final = {"byte": (2, ">b"), "short": (3, ">h"), "integer": (4, ">i"), "long": (5, ">q"),
                "timestamp": (8, ">q")}


class FrameError(ValueError):
    """Bytes that are not a valid event-stream frame (bad length or CRC)."""


def _crc(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _header_value(code: int, data: bytes, at: int) -> tuple[JSON, int]:
    kind = _TYPES.get(code)
    if kind is None:
        raise FrameError(f"unknown header value type {code}")
    if code in (0, 1):
        return {"type": "boolean", "value": code == 0}, at
    if kind in _INTS:
        fmt = _INTS[kind][1]
        size = struct.calcsize(fmt)
        (number,) = struct.unpack_from(fmt, data, at)
        return {"type": kind, "value": number}, at + size
    if kind == "uuid":
        return {"type": "uuid", "value": str(uuid.UUID(bytes=data[at : at + 16]))}, at + 16
    (length,) = struct.unpack_from(">H", data, at)
    raw = data[at + 2 : at + 2 + length]
    if kind == "string":
        return raw.decode("utf-8"), at + 2 + length
    return {"type": "bytes", "value": base64.b64encode(raw).decode("ascii")}, at + 2 + length


def _parse_headers(data: bytes) -> list[list[JSON]]:
    headers: list[list[JSON]] = []
    at = 0
    while at < len(data):
        size = data[at]
        name = data[at + 1 : at + 1 + size].decode("utf-8")
        value, at = _header_value(data[at + 1 + size], data, at + 2 + size)
        headers.append([name, value])
    return headers


class FrameDecoder:
    """Incremental decoder: feed byte chunks cut anywhere, get whole ``(headers, payload)``
    frames; a bad length or CRC is a `FrameError`."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[Frame]:
        """The frames this chunk completes."""
        self._buffer += chunk
        frames: list[Frame] = []
        while len(self._buffer) >= _PRELUDE.size:
            total, headers_length, prelude_crc = _PRELUDE.unpack_from(self._buffer)
            if _crc(self._buffer[:8]) != prelude_crc:
                raise FrameError("prelude CRC mismatch")
            if total < _PRELUDE.size + 4 + headers_length:
                raise FrameError(f"frame length {total} is shorter than its headers")
            if len(self._buffer) < total:
                break
            frame, self._buffer = self._buffer[:total], self._buffer[total:]
            (message_crc,) = struct.unpack_from(">I", frame, total - 4)
            if _crc(frame[: total - 4]) != message_crc:
                raise FrameError("message CRC mismatch")
            start = _PRELUDE.size
            headers = _parse_headers(frame[start : start + headers_length])
            frames.append((headers, frame[start + headers_length : total - 4]))
        return frames

    def finish(self) -> None:
        """Raise when the stream ended inside a frame."""
        if self._buffer:
            raise FrameError(f"the stream ended inside a frame ({len(self._buffer)} bytes left)")


def _encode_header(name: str, value: JSON) -> bytes:
    raw_name = name.encode("utf-8")
    head = struct.pack(">B", len(raw_name)) + raw_name
    if isinstance(value, str):
        raw = value.encode("utf-8")
        return head + struct.pack(">BH", 7, len(raw)) + raw
    if not isinstance(value, Mapping) or "type" not in value or "value" not in value:
        raise ValueError(f"header {name!r}: a string or {{'type', 'value'}}")
    kind, data = value["type"], value["value"]
    if kind == "boolean":
        return head + struct.pack(">B", 0 if data else 1)
    if kind in _INTS:
        code, fmt = _INTS[kind]
        return head + struct.pack(">B", code) + struct.pack(fmt, int(data))
    if kind == "uuid":
        return head + struct.pack(">B", 9) + uuid.UUID(str(data)).bytes
    if kind == "bytes":
        raw = base64.b64decode(str(data))
        return head + struct.pack(">BH", 6, len(raw)) + raw
    raise ValueError(f"header {name!r}: unknown type {kind!r}")


def encode_frame(headers: JSON, payload: bytes) -> bytes:
    """One frame on the wire (the inverse of `FrameDecoder`); a malformed header list is a
    `ValueError` saying what is wrong."""
    if not isinstance(headers, list) or not all(
        isinstance(h, list) and len(h) == 2 for h in headers
    ):
        raise ValueError("'headers' must be a list of [name, value] pairs")
    try:
        encoded = b"".join(_encode_header(str(name), value) for name, value in headers)
    except struct.error as exc:
        raise ValueError(f"a header value does not fit its type: {exc}") from None
    total = _PRELUDE.size + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    prelude += struct.pack(">I", _crc(prelude))
    message = prelude + encoded + payload
    return message + struct.pack(">I", _crc(message))
