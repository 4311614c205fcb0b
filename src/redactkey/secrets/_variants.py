"""The forms in which a secret value travels, each of which is searched for.

Raw, JSON-escaped (once and twice, also `\\/`), percent-encoded (quote and quote_plus,
upper- and lower-case hex), and base64 (standard and url-safe, padded or not) at every
alignment inside a larger base64 blob.
"""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote, quote_plus

__all__ = ["value_variants"]


def _b64_fragments(data: bytes) -> set[str]:
    """Base64 text of `data` that does not depend on the bytes around it, at all 3 alignments.

    Inside a larger base64 blob the value can start at any byte offset modulo 3;
    only the characters whose 6 bits come wholly from `data` are fixed.
    """
    out: set[str] = set()
    n = len(data)
    for lead in range(3):
        encoded = base64.b64encode(b"\0" * lead + data + b"\0\0").decode("ascii")
        first = -(-8 * lead // 6)  # ceil
        last = (8 * (lead + n)) // 6  # exclusive
        fragment = encoded[first:last]
        if fragment:
            out.add(fragment)
    standalone = base64.b64encode(data).decode("ascii")
    out.add(standalone)
    out.add(standalone.rstrip("="))
    return out


def _percent_forms(value: str) -> set[str]:
    forms = {quote(value, safe=""), quote(value), quote_plus(value, safe=""), quote_plus(value)}
    lowered = {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), f) for f in forms}
    return forms | lowered


def _json_forms(value: str) -> set[str]:
    once = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    twice = {json.dumps(f)[1:-1] for f in once}
    return once | twice


def value_variants(value: str) -> set[str]:
    """Every non-empty form in which `value` can travel (the module docstring lists them)."""
    forms: set[str] = {value}
    forms |= _json_forms(value)
    forms |= _percent_forms(value)
    raw = value.encode("utf-8", "surrogateescape")
    for fragment in _b64_fragments(raw):
        forms.add(fragment)
        forms.add(fragment.replace("+", "-").replace("/", "_"))
    # JSON writers may escape "/" as "\/"; percent forms may themselves be JSON-escaped.
    forms |= {f.replace("/", "\\/") for f in forms if "/" in f}
    return {f for f in forms if f}
