"""What test_crossversion.py compares between interpreters: golden keys and canonical bytes.

Run as a script (`python tests/_crossversion_probe.py`) by every interpreter under test,
against the redactkey installed there, it prints one JSON object on stdout; the test
imports `probe` to compute the same object in its own interpreter. Standard library and
redactkey only, so it runs in a venv that holds nothing else.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

from _golden_requests import GOLDEN_REQUESTS

# Values whose canonical bytes depend on number formatting, UTF-16 key order or string
# escaping: the places where interpreters or the orjson/reference split could differ.
# Each maps to its RFC 8785 text, or to "error at <pointer>" where JSON cannot hold it.
TRICKY_VALUES: list[tuple[str, Any, str]] = [
    ("float-1e-7", 1e-7, "1e-7"),
    ("float-1e-6", 1e-6, "0.000001"),
    ("float-in-1e-6-to-1e-5", 4.5e-6, "0.0000045"),
    ("float-smallest-subnormal", 5e-324, "5e-324"),
    ("float-negative-zero", -0.0, "0"),
    ("float-0.1+0.2", 0.1 + 0.2, "0.30000000000000004"),
    ("float-largest-integer-below-2**53", 9007199254740991.0, "9007199254740991"),
    # 2**53 + 1 is not a double: the literal rounds to 2**53.
    ("float-2**53+1-literal", 9007199254740993.0, "9007199254740992"),
    ("float-2**60", 2.0**60, "1152921504606847000"),
    ("float-1e20", 1e20, "100000000000000000000"),
    ("float-just-below-1e21", 999999999999999900000.0, "999999999999999900000"),
    ("float-1e21", 1e21, "1e+21"),
    ("float-largest", 1.7976931348623157e308, "1.7976931348623157e+308"),
    ("float-list", [-1e-7, 1.5, -2.0, 123456789.125],
     "[-1e-7,1.5,-2,123456789.125]"),
    ("int-largest-safe", -(2**53 - 1), "-9007199254740991"),
    ("int-beyond-2**53", {"n": [2**53]}, "error at /n/0"),
    ("keys-non-bmp-vs-private-use",
     {"\U0001f600": 1, "\ue000": 2, "\uffff": 3, "\U00010000": 4, "a": 5, "\u00e9": 6},
     '{"a":5,"\u00e9":6,"\U00010000":4,"\U0001f600":1,"\ue000":2,"\uffff":3}'),
    ("keys-non-bmp-nested", {"z": [{"\U00010000": 1, "\uffff": 2, "z": 3}]},
     '{"z":[{"z":3,"\U00010000":1,"\uffff":2}]}'),
    ("string-control-characters", "\x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f\"\\/\u2028\u2029",
     '"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\x7f\\"\\\\/\u2028\u2029"'),
    ("keys-control-characters", {"\x1f": 1, "\x00": 2, "\t": 3, " ": 4},
     '{"\\u0000":2,"\\t":3,"\\u001f":1," ":4}'),
    ("string-lone-surrogate", {"s": "\ud800"}, "error at /s"),
    ("keys-many", {f"k{i:03d}": i for i in range(200, 0, -1)},
     "{" + ",".join(f'"k{i:03d}":{i}' for i in range(1, 201)) + "}"),
]


def probe() -> dict[str, Any]:
    """The golden keys and tricky canonical texts as computed by the redactkey importable here."""
    import redactkey
    from redactkey import CanonicalizationError, canonicalize, request_key

    canonical: dict[str, str] = {}
    for name, value, _ in TRICKY_VALUES:
        try:
            canonical[name] = canonicalize(value).decode("utf-8")
        except CanonicalizationError as exc:
            canonical[name] = f"error at {exc.pointer}"
    return {
        "python": platform.python_version(),
        "package": os.path.realpath(redactkey.__file__),
        "hash_seed": os.environ.get("PYTHONHASHSEED"),
        "str_hash": hash("redactkey"),  # differs between seeds only if the seed took effect
        "keys": {name: request_key(kind, request) for name, kind, request in GOLDEN_REQUESTS},
        "canonical": canonical,
    }


if __name__ == "__main__":
    sys.stdout.write(json.dumps(probe(), ensure_ascii=True) + "\n")
