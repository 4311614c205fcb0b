"""Credential names: the header, field and parameter names whose value is a credential.

`Names` holds one configuration of them (the built-in `SENSITIVE_KEYS`, a user's extra
names, the names declared safe) and answers two questions: what class a name is
(`key_class`), and, at a place in a text where the scan met a credential name followed
by what can end a key, whether a name-value pair stands there (`pair_at`): a quoted pair
(`"api_key": "…"`, `'token' => '…'`, `\\"password\\": \\"…\\"`), a header or YAML line
(`Authorization: Bearer …`), or a query or form pair (`?access_token=…&`).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple
from urllib.parse import unquote

__all__ = ["SENSITIVE_KEYS", "SENSITIVE_QUERY_KEYS", "Names", "Pair", "norm"]

#: Names whose value is a credential, compared case-insensitively with `_` and `-` alike.
SENSITIVE_KEYS: frozenset[str] = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "apikey", "x-goog-api-key",
    "ocp-apim-subscription-key", "cookie", "set-cookie", "password", "passwd", "client-secret",
    "access-token", "refresh-token", "id-token", "api-token", "auth-token", "x-auth-token",
    "x-access-token", "x-api-token", "private-token", "x-subscription-token",
    "x-functions-key", "x-amz-security-token", "x-amz-signature", "x-amz-credential",
    "aws-secret-access-key", "secret-access-key", "session-token", "secret", "secret-key",
    "private-key", "client-assertion", "x-vault-token", "x-goog-iam-authorization-token",
    "bearer-token", "cf-access-client-secret", "webhook-secret", "signing-secret",
    "x-csrf-token", "x-xsrf-token", "openai-api-key", "anthropic-api-key",
})
#: Extra names that are credentials only as URL query parameters (`?key=AIza...`).
SENSITIVE_QUERY_KEYS: frozenset[str] = frozenset(
    {"key", "token", "sig", "signature", "auth", "access-key", "code-verifier"}
)

_FUZZY_CREDENTIAL = re.compile(
    r"(?:^|-)(?:secret|token|password|passwd|pwd|api-?key|access-?key|private-?key"
    r"|credentials?|auth)(?:-|$)"
)
_FUZZY_PARTS = ("secret", "token", "password", "passwd", "pwd", "apikey", "api-key", "api_key",
                "accesskey", "access-key", "access_key", "privatekey", "private-key",
                "private_key", "credential", "credentials", "auth")
# What can end a key in text: its closing quote (or the backslash escaping it), a space or
# tab before the separator, or the separator itself.
KEY_ENDS = ("\"", "'", "\\", " ", "\t", ":", "=")
KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-%[]")
_MAX_KEY = 64

# "key": "value" (also 'key': 'value', key=>value, and \"key\": \"value\")
_QUOTED = re.compile(
    r"(?P<kq>\\{0,7}[\"'])(?P<key>[A-Za-z0-9_.\-]{2,64})(?P=kq)\s{0,64}(?::|=>?)\s{0,64}"
    r"(?P<vq>\\{0,7}[\"'])(?P<val>[^\"'\\\r\n]{1,8192})(?P=vq)"
)
# Authorization: Bearer ... (a header line, a YAML line; a line may end in CRLF)
_LINE = re.compile(
    r"[ \t]{0,64}(?:-[ \t]{1,8})?(?P<key>[A-Za-z0-9_\-]{2,64})[ \t]{0,64}:[ \t]{1,64}"
    r"(?P<val>[^\r\n]*?)[ \t]*(?:\r?\n|\r?\Z)"
)
# key=value in a query string or a form body
_QUERY = re.compile(r"(?P<key>[A-Za-z0-9_.\-%\[\]]{1,64})=(?P<val>[^&\s#;\"'<>]+)")


def norm(name: str) -> str:
    """A name as compared: lower case, `_` and `-` alike, no surrounding spaces."""
    return name.strip().lower().replace("_", "-")


class Pair(NamedTuple):
    """A credential-named pair found in a text: the value's span and the (normalised) name."""

    start: int
    end: int
    name: str


class Names:
    """One configuration of credential names: built-in, extra and safe ones."""

    def __init__(self, extra: Iterable[str] = (), safe: Iterable[str] = ()) -> None:
        self.safe = frozenset(norm(k) for k in safe)
        self.sensitive = (SENSITIVE_KEYS | {norm(k) for k in extra}) - self.safe
        self.query = (SENSITIVE_QUERY_KEYS | self.sensitive) - self.safe
        self.classes: dict[str, int] = {}  # every name classed so far

    def key_class(self, name: str) -> int:
        """0: an ordinary name, 1: a credential by name, 2: credential-ish (entropy applies)."""
        cached = self.classes.get(name)
        if cached is None:
            n = norm(name)
            if n in self.sensitive:
                cached = 1
            elif n not in self.safe and _FUZZY_CREDENTIAL.search(n):
                cached = 2
            else:
                cached = 0
            if len(self.classes) < 65536:
                self.classes[name] = cached
        return cached

    def marks(self) -> list[tuple[str, bool]]:
        """The literals that announce a pair: every spelling of every name (caseless, `-` or
        `_` between its parts) followed by what can end a key; `(literal, query_only)`."""
        out: list[tuple[str, bool]] = []
        for names, ends, only in ((self.sensitive, KEY_ENDS, False),
                                  (self.query - self.sensitive, ("=",), True)):
            for name in sorted(names):
                parts = name.split("-")
                gaps = len(parts) - 1
                # (a name of many parts is spelled with one separator throughout)
                every = (itertools.product("-_", repeat=gaps) if gaps <= 8
                         else ("-" * gaps, "_" * gaps))
                for seps in every:
                    spelled = parts[0] + "".join(map("".join, zip(seps, parts[1:], strict=True)))
                    out.extend((spelled + end, only) for end in ends)
        return out

    def hints(self) -> list[str]:
        """Literals that announce a credential-ish member name (class 2): each part of
        `_FUZZY_CREDENTIAL` as the end or the head of a name (`github_token"`, `token_`)."""
        return [part + end for part in _FUZZY_PARTS for end in ('"', "'", "_", "-", ":", "\\")]

    def pairs_at(self, text: str, at: int, query: bool, tried: dict[tuple[str, int], int]
                 ) -> Iterator[Pair]:
        """The credential-named pairs whose name ends at `at` (where the scan met a name
        and what ends it), the places taken in order. `tried` holds the places already
        tried in this text, and under ("end", 0) where the last query pair ended: each place
        is tried once and none inside a query pair's value, so the work stays linear."""
        start = at
        while start > 0 and at - start < _MAX_KEY and text[start - 1] in KEY_CHARS:
            start -= 1
        if start < at:
            yield from self._quoted(text, start, tried)
            yield from self._line(text, start, tried)
            yield from self._query(text, start, query, tried)

    def _quoted(self, text: str, start: int, tried: dict[tuple[str, int], int]
                ) -> Iterator[Pair]:
        quote = start - 1
        if quote < 0 or text[quote] not in "\"'":
            return
        while quote > 0 and start - quote < 8 and text[quote - 1] == "\\":
            quote -= 1
        for begin in range(quote, start):  # fewer backslashes may open it too
            if ("quoted", begin) in tried:
                continue
            tried["quoted", begin] = 0
            match = _QUOTED.match(text, begin)
            if match is not None and match.start("key") == start:
                if self.key_class(match.group("key")) == 1:
                    yield Pair(*match.span("val"), norm(match.group("key")))
                return

    def _line(self, text: str, start: int, tried: dict[tuple[str, int], int]) -> Iterator[Pair]:
        # (a line is looked for only in the 80 characters before the name: a text of one
        # long line must not be searched back to its start at every name in it)
        line = text.rfind("\n", max(0, start - 81), start) + 1
        if (line == 0 and start > 80) or start - line > 80 or ("line", line) in tried:
            return
        tried["line", line] = 0
        match = _LINE.match(text, line)
        if (match is not None and match.start("key") == start and match.group("val")
                and self.key_class(match.group("key")) == 1):
            yield Pair(*match.span("val"), norm(match.group("key")))

    def _query(self, text: str, start: int, query: bool, tried: dict[tuple[str, int], int]
               ) -> Iterator[Pair]:
        before = text[start - 1] if start > 0 else ""
        if ((before and before not in "?&;" and not before.isspace())
                or ("query", start) in tried or start < tried.get(("end", 0), 0)):
            return
        tried["query", start] = 0
        match = _QUERY.match(text, start)
        if match is None:
            return
        tried["end", 0] = match.end()
        key = norm(unquote(match.group("key")) if "%" in match.group("key") else match.group("key"))
        names = self.query if (before in ("?", "&", ";") or query) else self.sensitive
        if key in names:
            yield Pair(*match.span("val"), key)
