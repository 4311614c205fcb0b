"""PyGithub's `ReplayData` text files: per call the lines protocol, method, host, port,
path, request headers (a Python dict literal), body (`None` for none), status, response
headers (a list of tuples), the body the client read (or, for a streamed download,
base64 lines up to a blank one), then a blank line.

The literals are read with `ast.literal_eval` (data only, never run). The document is
`{"calls": [{"request": {method, url, headers, body}, "response": {status, headers,
body}}]}`, each value mapped to its line.
"""

from __future__ import annotations

import ast
import base64
import re
from typing import Any

from ..._errors import FixtureFormatError
from ...keys._canonical import JSONValue, pointer_join
from .._cassettes import Interaction, LineMap, Message
from ._common import body_of_bytes, call, maybe_json

__all__ = ["FORMAT", "parse", "sniff"]

FORMAT = "pygithub-replay"
_START = re.compile(r"https?\n[A-Z]+\n[^\s/]+\n(?:None|[0-9]+)\n/")


def sniff(text: str) -> bool:
    return _START.match(text) is not None


def _literal(line: str, kind: type, name: str, number: int) -> Any:
    try:
        value = ast.literal_eval(line)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        value = None
    if not isinstance(value, kind):
        raise FixtureFormatError(name, f"line {number}: not a Python {kind.__name__} literal "
                                       "(PyGithub ReplayData headers)")
    return value


def _message(pointer: str, headers: dict[str, list[str]], body: JSONValue, lines: LineMap,
             at: tuple[int, int]) -> Message:
    message = Message(pointer, headers, body,
                      pointer_join(pointer, "body") if body is not None else None)
    for name, values in headers.items():
        for index in range(len(values)):
            lines.set(message.header_pointer(name, index), at[0])
    lines.set(pointer_join(pointer, "body"), at[1])
    return message


def parse(text: str, name: str) -> tuple[JSONValue, LineMap, list[Interaction]]:
    rows = text.split("\n")
    lines = LineMap()
    records: list[Any] = []
    calls: list[Interaction] = []
    at = 0
    while at + 9 < len(rows) and rows[at].strip():
        protocol, method, host, port, path = (row.strip() for row in rows[at:at + 5])
        sent = _literal(rows[at + 5].strip(), dict, name, at + 6)
        body: JSONValue = None if rows[at + 6].strip() == "None" else maybe_json(rows[at + 6])
        try:
            status = int(rows[at + 7])
        except ValueError:
            raise FixtureFormatError(name, f"line {at + 8}: not a status code") from None
        got = _literal(rows[at + 8].strip(), list, name, at + 9)
        answer: JSONValue = maybe_json(rows[at + 9].strip())
        end = at + 10
        if end < len(rows) and rows[end].strip():  # a streamed body: base64 lines
            pieces = [rows[at + 9].strip()]
            while end < len(rows) and rows[end].strip():
                pieces.append(rows[end].strip())
                end += 1
            answer = body_of_bytes(b"".join(base64.b64decode(p) for p in pieces))
            end += 1
        url = f"{protocol}://{host}{'' if port == 'None' else ':' + port}{path}"
        pointer = pointer_join("/calls", len(records))
        request_headers = {str(k): [str(v)] for k, v in sent.items()}
        response_headers: dict[str, list[str]] = {}
        for pair in got:
            if isinstance(pair, tuple) and len(pair) == 2:
                response_headers.setdefault(str(pair[0]), []).append(str(pair[1]))
        records.append({
            "request": {"method": method, "url": url, "headers": request_headers,
                        "body": body},
            "response": {"status": status, "headers": response_headers, "body": answer}})
        lines.set(pointer, at + 1)
        calls.append(call(
            len(calls), pointer, method, url,
            _message(pointer_join(pointer, "request"), request_headers, body, lines,
                     (at + 6, at + 7)),
            status,
            _message(pointer_join(pointer, "response"), response_headers, answer, lines,
                     (at + 9, at + 10))))
        at = end + 1
    if not records:
        raise FixtureFormatError(name, "no call in this PyGithub ReplayData file")
    return {"calls": records}, lines, calls
