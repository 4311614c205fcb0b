"""Go `httprr` traces (golang.org/x/oscar, rsc.io/httprr): a line `httprr trace v1`,
then per call a line `<n1> <n2>` and the n1 bytes of the request and n2 bytes of the
response as Go wrote them on the wire (HTTP/1.1 text; a chunked body is de-chunked).

The document is `{"calls": [{"request": {method, url, headers, body}, "response":
{status, headers, body}}]}`, each value mapped to its line of the trace.
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


class _Trace:
    """Reads the wire bytes of one trace, noting each value's line."""

    def __init__(self, data: bytes, lines: LineMap) -> None:
        self.data = data
        self.lines = lines

    def line(self, at: int) -> int:
        return self.data.count(b"\n", 0, at) + 1

    def message(self, start: int, end: int, pointer: str, out: dict[str, Any]) -> Message:
        """Read one request or response at data[start:end] into `out`."""
        head, _, body = self.data[start:end].partition(b"\r\n\r\n")
        first, *fields = head.decode("latin-1").split("\r\n")
        out["line"] = first
        headers: dict[str, list[str]] = {}
        pointers: dict[str, list[str]] = {}
        at = start + len(first) + 2
        for field in fields:
            name, _, value = field.partition(":")
            where = pointer_join(pointer_join(pointer_join(pointer, "headers"), name),
                                 len(headers.get(name, [])))
            headers.setdefault(name, []).append(value.strip())
            pointers.setdefault(name, []).append(where)
            self.lines.set(where, self.line(at))
            at += len(field) + 2
        out["headers"] = headers
        wanted = {k.lower(): v[0] for k, v in headers.items() if v}
        if "chunked" in wanted.get("transfer-encoding", ""):
            body = _dechunk(body)
        out["body"] = body_of_bytes(body, wanted.get("content-encoding", "")) if body else None
        body_pointer = pointer_join(pointer, "body")
        self.lines.set(body_pointer, self.line(end - len(body)))
        self.lines.set(pointer, self.line(start))
        return Message(pointer, headers, out["body"], body_pointer if body else None, pointers)


def parse(text: str, name: str) -> tuple[JSONValue, LineMap, list[Interaction]]:
    try:
        return _parse(text.encode("utf-8"))
    except (ValueError, IndexError, UnicodeEncodeError):
        pass
    try:  # a trace of bytes that are not UTF-8, read as Latin-1
        return _parse(text.encode("latin-1"))
    except (ValueError, IndexError, UnicodeEncodeError):
        raise FixtureFormatError(name, "a corrupt httprr trace: a call's lengths do not "
                                       "match its bytes") from None


def _parse(data: bytes) -> tuple[JSONValue, LineMap, list[Interaction]]:
    lines = LineMap()
    trace = _Trace(data, lines)
    at = len(MAGIC)
    records: list[Any] = []
    calls: list[Interaction] = []
    while at < len(data):
        sizes, _, _ = data[at:at + 64].partition(b"\n")
        n1, n2 = (int(n) for n in sizes.split(b" "))
        start = at + len(sizes) + 1
        if start + n1 + n2 > len(data) or n1 < 0 or n2 < 0:
            raise ValueError("lengths beyond the trace")
        pointer = pointer_join("/calls", len(records))
        request: dict[str, Any] = {}
        response: dict[str, Any] = {}
        records.append({"request": request, "response": response})
        sent = trace.message(start, start + n1, pointer_join(pointer, "request"), request)
        got = trace.message(start + n1, start + n1 + n2, pointer_join(pointer, "response"),
                            response)
        method, url, _version = request.pop("line").split(" ", 2)
        request.update(method=method, url=url)
        status = int(response.pop("line").split(" ", 2)[1])
        response["status"] = status
        calls.append(call(len(calls), pointer, method, url, sent, status, got))
        at = start + n1 + n2
    return {"calls": records}, lines, calls
