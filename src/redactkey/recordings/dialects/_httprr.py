"""Go `httprr` traces (golang.org/x/oscar, rsc.io/httprr): a line `httprr trace v1`,
then per call a line `<n1> <n2>` and the n1 bytes of the request and n2 bytes of the
response as Go wrote them on the wire (HTTP/1.1 text; a chunked body is de-chunked).

The document is `{"calls": [{"request": {headers, body, method, url}, "response":
{headers, body, status}}]}`, each value mapped to its line of the trace.
"""

from __future__ import annotations

from typing import Any

from ..._errors import FixtureFormatError
from ...keys._canonical import JSONValue, pointer_join
from .._cassettes import Interaction, LineMap, Message
from ._common import body_of_bytes, call

__all__ = ["FORMAT", "parse", "sniff"]

FORMAT = "httprr"
MAGIC = "httprr trace v1\n"


def sniff(text: str) -> bool:
    return text.startswith(MAGIC)


def _dechunk(data: bytes) -> bytes:
    out = bytearray()
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2:]
    return bytes(out)


def _message(data: bytes, start: int, end: int, pointer: str, lines: LineMap,
             out: dict[str, Any]) -> tuple[str, Message]:
    """(first line, message) of the request or response at data[start:end], read into
    `out` with each header's and the body's line noted in `lines`."""
    head, _, body = data[start:end].partition(b"\r\n\r\n")
    first, *fields = head.decode("latin-1").split("\r\n")
    headers: dict[str, list[str]] = {}
    line = data.count(b"\n", 0, start) + 2
    for offset, field in enumerate(fields):
        name, _, value = field.partition(":")
        values = headers.setdefault(name, [])
        where = pointer_join(pointer_join(pointer_join(pointer, "headers"), name), len(values))
        values.append(value.strip())
        lines.set(where, line + offset)
    wanted = {k.lower(): v[0] for k, v in headers.items()}
    if "chunked" in wanted.get("transfer-encoding", ""):
        body = _dechunk(body)
    out.update(headers=headers, body=body_of_bytes(body, wanted.get("content-encoding", ""))
               if body else None)
    lines.set(pointer, line - 1)
    lines.set(pointer_join(pointer, "body"), line + len(fields) + 1)
    return first, Message(pointer, headers, out["body"],
                          pointer_join(pointer, "body") if body else None)


def parse(text: str, name: str) -> tuple[JSONValue, LineMap, list[Interaction]]:
    for encoding in ("utf-8", "latin-1"):  # a trace of bytes that are not UTF-8: Latin-1
        try:
            return _parse(text.encode(encoding))
        except (ValueError, IndexError, UnicodeEncodeError):
            pass
    raise FixtureFormatError(name, "a corrupt httprr trace: a call's lengths do not match "
                                   "its bytes")


def _parse(data: bytes) -> tuple[JSONValue, LineMap, list[Interaction]]:
    lines = LineMap()
    at = len(MAGIC)
    calls: list[Interaction] = []
    records: list[Any] = []
    while at < len(data):
        sizes = data[at:at + 64].partition(b"\n")[0]
        n1, n2 = (int(n) for n in sizes.split(b" "))
        start = at + len(sizes) + 1
        if n1 < 0 or n2 < 0 or start + n1 + n2 > len(data):
            raise ValueError("lengths beyond the trace")
        pointer = pointer_join("/calls", len(records))
        record: dict[str, Any] = {"request": {}, "response": {}}
        records.append(record)
        first, sent = _message(data, start, start + n1, pointer_join(pointer, "request"),
                               lines, record["request"])
        status_line, got = _message(data, start + n1, start + n1 + n2,
                                    pointer_join(pointer, "response"), lines,
                                    record["response"])
        method, url, _version = first.split(" ", 2)
        record["request"].update(method=method, url=url)
        record["response"]["status"] = status = int(status_line.split(" ", 2)[1])
        calls.append(call(len(calls), pointer, method, url, sent, status, got))
        at = start + n1 + n2
    return {"calls": records}, lines, calls
