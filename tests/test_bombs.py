"""A gzip bomb (1 MB that inflates to 1 GB) costs every command less than 100 MB.

Memory is measured with tracemalloc around one in-process run of the command;
the bomb is an `unreadable-file` finding, never a crash or exit 2.
"""

from __future__ import annotations

import base64
import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

from redactkey.commands._cli import main

_MB = 1024 * 1024


def _bomb() -> bytes:
    """1 GB of text as 1024 gzip members of 1 MB each (a reader sees one stream)."""
    member = gzip.compress(b"A" * _MB, compresslevel=9, mtime=0)
    return member * 1024


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three shapes: a gzip'd file, a gzip in a gzip, base64 of a gzip body in a
    JSON cassette that is itself gzip'd."""
    root = tmp_path_factory.mktemp("bombs")
    bomb = _bomb()
    plain = root / "plain"
    plain.mkdir()
    (plain / "cassette.json.gz").write_bytes(bomb)
    nested = root / "nested"
    nested.mkdir()
    (nested / "cassette.yaml.gz").write_bytes(gzip.compress(bomb, mtime=0))
    inner = root / "inner"
    inner.mkdir()
    cassette = {"interactions": [{
        "request": {"method": "GET", "uri": "https://api.example.com/", "headers": {},
                    "body": None},
        "response": {"status": {"code": 200, "message": "OK"},
                     "headers": {"Content-Encoding": ["gzip"]},
                     "body": {"base64_string": base64.b64encode(bomb).decode("ascii")}},
    }], "version": 1}
    (inner / "cassette.json.gz").write_bytes(
        gzip.compress(json.dumps(cassette).encode("utf-8"), mtime=0))
    return {"plain": plain, "nested": nested, "inner": inner}


@pytest.mark.parametrize("shape", ["plain", "nested", "inner"])
@pytest.mark.parametrize("command", ["check", "audit", "scrub"])
def test_bomb_is_bounded(bombs: dict[str, Path], shape: str, command: str,
                         capsys: pytest.CaptureFixture[str]) -> None:
    """Under 100 MB of memory, an `unreadable-file` warning, exit 1."""
    tracemalloc.start()
    try:
        code = main([command, str(bombs[shape])])
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    out = capsys.readouterr().out
    assert peak < 100 * _MB, f"{command} {shape}: {peak / _MB:.0f} MB"
    assert code == 1, out
    if command != "scrub":
        assert "unreadable-file" in out
