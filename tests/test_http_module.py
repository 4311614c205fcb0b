"""The HTTP document model stands apart from the HTTP client libraries."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

_PROBE = """
import json, sys
import {module}
print(json.dumps(sorted(m for m in ("httpx", "httpx2") if m in sys.modules)))
"""


def _loaded_clients(module: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE.format(module=module)],
        capture_output=True, text=True, check=True, timeout=120,
    )
    loaded: list[str] = json.loads(result.stdout)
    return loaded


class TestImports:
    @pytest.mark.parametrize(
        "module", ["redactkey.clients._vcr", "redactkey.http._documents",
                   "redactkey.record._exchange", "redactkey.commands._audit"]
    )
    def test_loads_neither_httpx_nor_httpx2(self, module: str) -> None:
        """Importing the document model, the record/replay step, the vcrpy hooks or the
        audit loads no HTTP client library."""
        assert _loaded_clients(module) == []

    def test_the_probe_sees_a_client_library_when_one_is_loaded(self) -> None:
        """The probe would notice: the httpx transport does load its libraries."""
        assert _loaded_clients("redactkey.clients._httpx") == ["httpx", "httpx2"]
