"""Credentials a request sends by name, learned into the run's secrets under the slot
`learned:<name>` (docs/redaction.md, "Secrets learned from the wire").
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..scan._names import norm
from ..scan._placeholders import looks_redacted
from ._walk import MAX_DEPTH

if TYPE_CHECKING:
    from ._redactor import Redactor

__all__ = ["credential_values", "credentials_of", "learn"]

# Credential names whose value is read as a text of pairs, not taken whole as one value.
_READ_AS_TEXT = ("cookie", "set-cookie")
_SCHEMED = re.compile(r"^\s*(?P<scheme>[A-Za-z][A-Za-z0-9_\-]{0,20})\s+(?P<cred>\S+)\s*$")
# AWS SigV4: `AWS4-HMAC-SHA256 Credential=<access key id>/<date>/<region>/<service>/…`
_SIGV4 = re.compile(r"^\s*AWS4-[A-Z0-9\-]{1,32}\s+Credential=(?P<cred>[^/,\s]{1,256})/")
# Sent values whose judgement (`_learnable`) a redactor remembers, at most.
_JUDGED = 1024


def credentials_of(redactor: Redactor, request: Any,
                   also: Sequence[str] = ()) -> list[tuple[str, str]] | None:
    """(name, value) of every credential `request` sends by name, in order. The texts
    `also` are searched in the same search: None comes back when any of them holds a span."""
    found: list[tuple[str, str]] = []
    texts: list[str] = []
    stack: list[tuple[Any, int]] = [(request, 0)]
    key_class = redactor._names.key_class
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            _text(redactor, value, depth, found, texts, stack)
        elif type(value) is dict or isinstance(value, Mapping):
            for key, item in reversed(list(value.items())):
                if (isinstance(key, str) and key_class(key) == 1
                        and norm(key) not in _READ_AS_TEXT):
                    found.extend((key, leaf) for leaf in _string_leaves(item))
                elif type(item) is not str or _may_hold(item):  # (`_text` passes the rest)
                    stack.append((item, depth + 1))
        elif isinstance(value, (list, tuple)):
            if (len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], str)
                    and key_class(value[0]) == 1):
                found.append((value[0], value[1]))
            else:
                stack.extend((item, depth + 1) for item in reversed(value))
    scans = redactor._scanner().scan_many([*texts, *also] if also else texts)
    if any(scans[len(texts):]):
        return None
    for text, spans in zip(texts, scans[:len(texts)], strict=True):
        for span in spans:
            # (a credential-named pair's span carries the name as its slot)
            name = (span.slot or "") if span.rule == "sensitive-key" else span.rule
            if name == "url-password" or (span.rule == "sensitive-key"
                                          and name not in _READ_AS_TEXT):
                value = text[span.start:span.end]
                found.append((name, unquote(value) if "%" in value else value))
    return found


def _may_hold(text: str) -> bool:
    """Whether `_text` reads `text`: a document to open, or a text with a pair in it."""
    return len(text) >= 8 and (text[:1] in ("{", "[") or "=" in text or ":" in text)


def _text(redactor: Redactor, text: str, depth: int, found: list[tuple[str, str]],
          texts: list[str], stack: list[tuple[Any, int]]) -> None:
    if not _may_hold(text):
        return
    if text[:1] in ("{", "[") and depth < MAX_DEPTH:
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, (dict, list)):
            stack.append((data, depth + 1))
            return
    if "=" in text or ":" in text:
        texts.append(text)


def _string_leaves(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _string_leaves(item)]
    return []


def credential_values(value: str) -> list[str]:
    """The secret parts of a credential as sent: without its auth scheme; a `Basic`
    credential decoded to its password (its base64 forms are among the variants); the
    access key id of an AWS SigV4 `Authorization`."""
    value = value.strip()
    signed = _SIGV4.match(value)
    if signed is not None:
        return [signed.group("cred")]
    match = _SCHEMED.match(value)
    if match is None:
        return [value] if value and not any(c.isspace() for c in value) else []
    scheme, credential = match.group("scheme"), match.group("cred")
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credential + "=" * (-len(credential) % 4), validate=True)
        except (binascii.Error, ValueError):
            return [credential]
        _user, colon, password = decoded.decode("utf-8", "surrogateescape").partition(":")
        return [password, credential] if colon and password else [credential]
    return [credential]


def learn(redactor: Redactor, found: list[tuple[str, str]]) -> int:
    """Take credentials `found` (`credentials_of`) into the redactor's run secrets; how
    many new values were learned."""
    if not found:
        return 0
    secrets = redactor._own_secrets()
    before = secrets.version
    judged = redactor._learnable
    for pair in found:
        learnable = judged.get(pair)
        if learnable is None:
            learnable = _learnable(redactor, *pair)
            if len(judged) >= _JUDGED:
                judged.clear()
            judged[pair] = learnable
        for slot, credential in learnable:
            if not secrets.holds(slot, credential) and len(credential) >= secrets.min_length:
                secrets.learn(slot, credential)
    return secrets.version - before


def _learnable(redactor: Redactor, name: str, value: str) -> tuple[tuple[str, str], ...]:
    """(slot, credential) of each part of `value` that is no placeholder: what learning it
    takes, as far as the configuration decides (a request sends the same few credentials
    on every call, so this is worked out once per value)."""
    slot = f"learned:{norm(name)}"
    return tuple((slot, credential) for credential in credential_values(value)
                 if not looks_redacted(credential, redactor.is_placeholder)
                 and not redactor._redacted(credential))
