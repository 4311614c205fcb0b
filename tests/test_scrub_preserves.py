"""`scrub --write` changes nothing but the secrets, on every dialect's examples.

Copies of the third-party recordings (`../shared/realworld*`) and of the hand-made ones
(`tests/data/formats`, `tests/data/dialects`) are scrubbed as they are, then fake keys
made up at run time are planted into the scrubbed copies (in text and in binary and
gzip bodies) and the copies are scrubbed again. Each file is read before and after by
plain PyYAML / json / tomli (not the product's readers): the documents must have the
same shape and the same types everywhere (a timestamp stays a timestamp), and each value
that differs must differ only where a placeholder took the place of a secret; in the
second pass every such place holds a planted key, every planted key that `redact check`
reports is gone, and every line of the file that changed lies in a value that did.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import difflib
import gzip
import io
import itertools
import json
import random
import re
import shutil
import string
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import tomli
import yaml

from conftest import ROOT
from helpers import checksummed_token
from redactkey.commands._cli import main

_SUFFIXES = (".yaml", ".yml", ".json", ".har", ".toml")
_PLACEHOLDERS = re.compile(r"(?:\[REDACTED(?::[A-Za-z0-9_.:\-]*)?\])+")
_WORD = re.compile(r"(?<![\w\-+/=.%])[a-z]{5,12}(?![\w\-+/=%])")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader with every foreign tag read as plain data (`!binary` as bytes,
    aiohttp's `istr` header names as their text)."""


def _foreign(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        return base64.b64decode(value) if suffix.endswith("binary") else value
    if isinstance(node, yaml.SequenceNode):
        items = loader.construct_sequence(node, deep=True)
        return items[0] if suffix.endswith("istr") and len(items) == 1 else tuple(items)
    return loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]


_Loader.add_multi_constructor("!", _foreign)
_Loader.add_multi_constructor("tag:yaml.org,2002:python/", _foreign)


def _text(path: Path) -> str:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8-sig")


def _kind(path: Path) -> str:
    name = path.name.removesuffix(".gz")
    return "toml" if name.endswith(".toml") else \
        "json" if name.endswith((".json", ".har")) else "yaml"


def _load(kind: str, text: str) -> Any:
    if kind == "toml":
        return tomli.loads(text)
    if kind == "json":
        return json.loads(text)
    return yaml.load(text, Loader=_Loader)


def _differing(old: Any, new: Any, where: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(pointer, old, new) of every value that differs; the shapes and types must agree."""
    assert type(old) is type(new), f"{where}: {type(old).__name__} -> {type(new).__name__}"
    if isinstance(old, dict):
        assert list(old) == list(new), f"{where}: member names changed"
        for key, value in old.items():
            yield from _differing(value, new[key], f"{where}/{key}")
    elif isinstance(old, (list, tuple)):
        assert len(old) == len(new), f"{where}: length changed"
        for index, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from _differing(a, b, f"{where}/{index}")
    elif old != new:
        yield where, old, new


def _opened(value: str | bytes) -> str | None:
    """The text a value holds: bytes gunzipped and decoded, base64 decoded; None for
    binary data."""
    if isinstance(value, str):
        if len(value) < 16 or not _BASE64.fullmatch(value):
            return value
        try:
            value = base64.b64decode("".join(value.split()), validate=True)
        except (binascii.Error, ValueError):
            return value
    if value[:2] == b"\x1f\x8b":
        value = gzip.decompress(value)
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _container(text: str) -> Any:
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _structure(value: str | bytes) -> Any:
    """What a value holds: a JSON document, the lines of a stream (SSE or NDJSON: its
    JSON events parsed), its text, or None for binary data."""
    text = _opened(value)
    if text is None:
        return None
    inner = _container(text)
    if inner is not None:
        return inner
    lines = text.split("\n")
    events = [_container(line.removeprefix("data:").strip()) for line in lines]
    if sum(event is not None for event in events) < 2 and not any(
            event is not None and line.startswith("data:")
            for line, event in zip(lines, events, strict=True)):
        return text
    return [line if event is None else event for line, event in zip(lines, events, strict=True)]


def _gaps(where: str, old: Any, new: Any) -> Iterator[tuple[str, str, int, int]]:
    """(pointer, the text, start, end) of each span of a value that scrub took out: a span
    replaced by a placeholder, or the head of a value that held the rest of a key split
    across stream events; fails where the new value is anything else."""
    inner_old, inner_new = _structure(old), _structure(new)
    if inner_old is None or inner_new is None:  # an event stream's frames: binary
        yield where, "", 0, 0
        return
    if not isinstance(inner_old, str) or not isinstance(inner_new, str):
        for pointer, a, b in _differing(inner_old, inner_new, where):
            yield from _gaps(pointer, a, b)
        return
    runs = list(_PLACEHOLDERS.finditer(inner_new))
    if not runs and inner_old.endswith(inner_new):
        yield where, inner_old, 0, len(inner_old) - len(inner_new)
        return
    assert runs, f"{where}: rewritten, not redacted"
    pieces = [inner_new[:runs[0].start()]]
    pieces += [inner_new[a.end():b.start()] for a, b in itertools.pairwise(runs)]
    pieces.append(inner_new[runs[-1].end():])
    pattern = "(.+?)".join(re.escape(piece) for piece in pieces)
    match = re.fullmatch(pattern, inner_old, re.DOTALL)
    assert match is not None, f"{where}: more than a secret's span changed"
    for index in range(1, len(runs) + 1):
        if match.group(index) != runs[index - 1].group():
            yield where, inner_old, match.start(index), match.end(index)


def _plantable(old: Any, new: Any) -> bool:
    """Whether a value with a key planted in it holds it in one string of its own (not
    in a member name, a base64 run or a JSON text it breaks)."""
    if not isinstance(old, str) or _BASE64.fullmatch(old):
        return False
    inner_old, inner_new = _structure(old), _structure(new)
    if isinstance(inner_old, str):
        return isinstance(inner_new, str)
    try:
        changed = list(_differing(inner_old, inner_new))
    except AssertionError:
        return False
    return len(changed) == 1 and _plantable(changed[0][1], changed[0][2])


def _fake_keys(rng: random.Random) -> list[str]:
    """Keys of two shapes the detectors know, made up at run time."""
    alphabet = string.ascii_letters + string.digits
    return ["sk-" + "proj-" + "".join(rng.choice(alphabet) for _ in range(48)),
            checksummed_token("gh" + "p_", "".join(rng.choice(alphabet) for _ in range(30)))]


def _plant_in_text(kind: str, text: str, keys: list[str], rng: random.Random) -> str:
    """`text` with each key written after a word inside a string value (one value each):
    never in a member name, a base64 run or a JSON text it would break."""
    document = _load(kind, text)
    words = list(_WORD.finditer(text))
    rng.shuffle(words)
    for key in keys:
        for word in words[:300]:
            planted = text[:word.end()] + " " + key + text[word.end():]
            try:
                changed = list(_differing(document, _load(kind, planted)))
            except (AssertionError, ValueError, yaml.YAMLError, tomli.TOMLDecodeError):
                continue
            if len(changed) != 1 or not _plantable(changed[0][1], changed[0][2]):
                continue
            text, document = planted, _load(kind, planted)
            words = list(_WORD.finditer(text))
            rng.shuffle(words)
            break
    return text


def _plant_in_binary(text: str, key: str) -> str:
    """`text` with `key` written into the first binary YAML block whose body is UTF-8
    text (gzip'd or not), encoded again the same way at the same line width."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return text
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            stack.extend(value for _, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif node.tag.endswith("binary") and node.style == "|":
            data = base64.b64decode(node.value)
            zipped = data[:2] == b"\x1f\x8b"
            body = _opened(data)
            if body is None or "event" in body[:200]:
                continue
            words = [w for w in list(_WORD.finditer(body))[:50] if _plantable(
                body, body[:w.end()] + " " + key + body[w.end():])]
            if not words:
                continue
            planted = (body[:words[0].end()] + " " + key + body[words[0].end():]).encode()
            encoded = base64.b64encode(gzip.compress(planted, mtime=0) if zipped else planted)
            lines = text[node.start_mark.index:node.end_mark.index].splitlines(keepends=True)
            first = lines[1]
            indent, width = first[:len(first) - len(first.lstrip())], len(first.strip())
            chunks = [encoded[i:i + width].decode() for i in range(0, len(encoded), width)]
            block = lines[0] + "".join(f"{indent}{chunk}\n" for chunk in chunks)
            return text[:node.start_mark.index] + block + text[node.end_mark.index:]
    return text


def _lines_of(text: str, pointers: set[str]) -> set[int]:
    """The lines (0-based) of the scalars at `pointers` in a YAML or JSON text."""
    root = yaml.compose(text, Loader=_Loader)
    out: set[int] = set()
    for pointer in pointers:
        node = root
        for raw in pointer.split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, yaml.MappingNode):
                node = next(v for k, v in node.value if getattr(k, "value", None) == token
                            or (isinstance(k, yaml.SequenceNode) and k.value[0].value == token))
            else:
                node = node.value[int(token)]
        out.update(range(node.start_mark.line, node.end_mark.line + 1))
    return out


@dataclass
class _Pass:
    """One `scrub --write` over a tree: each file's text before and after."""

    before: dict[Path, str] = field(default_factory=dict)
    after: dict[Path, str] = field(default_factory=dict)
    planted: dict[Path, list[str]] = field(default_factory=dict)
    reported: dict[Path, list[str]] = field(default_factory=dict)  # by `redact check`


def _recordings(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()
                  and p.name.removesuffix(".gz").endswith(_SUFFIXES))


def _scrub(root: Path, state: _Pass) -> None:
    files = _recordings(root)
    state.before = {path: _text(path) for path in files}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["scrub", "--write", "--format", "json", str(root)])
    report = json.loads(out.getvalue())
    # a text dialect (PyGithub's ReplayData, httprr) is read, not rewritten: named, exit 2
    refused = [e for e in report["errors"] if "read but not rewritten" in e["problem"]]
    assert (code, report["errors"], report["findings"]) == (2 if refused else 0, refused, [])
    state.after = {path: _text(path) for path in files}


@pytest.fixture(scope="module")
def passes(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory,
           ) -> tuple[_Pass, _Pass]:
    """The two passes over copies of every dialect's examples."""
    root = tmp_path_factory.mktemp("dialects")
    for name in ("realworld", "realworld2"):
        shutil.copytree(shared_dir / name, root / name)
    for name in ("formats", "dialects"):
        if (ROOT / "tests" / "data" / name).is_dir():
            shutil.copytree(ROOT / "tests" / "data" / name, root / name)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    first, second = _Pass(), _Pass()
    _scrub(root, first)
    rng = random.Random(36)
    for path, text in first.after.items():
        keys = _fake_keys(rng)
        planted = _plant_in_binary(text, keys[1]) if _kind(path) == "yaml" else text
        in_binary = keys[1:] if planted != text else []
        planted = _plant_in_text(_kind(path), planted, keys[:2 - len(in_binary)], rng)
        second.planted[path] = [key for key in keys if key in planted] + in_binary
        if planted != text:
            data = planted.encode("utf-8")
            path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", "--format", "json", str(root)])
    seen = {(Path(f["path"]), f["rule"]) for f in json.loads(out.getvalue())["findings"]}
    for path, keys in second.planted.items():
        second.reported[path] = [key for key in keys if (
            path, "openai-api-key" if key.startswith("sk-") else "github-token") in seen]
    _scrub(root, second)
    return first, second


def test_real_recordings_change_only_at_their_findings(passes: tuple[_Pass, _Pass]) -> None:
    """As they are, the recordings change only where a finding was: same shape and types,
    a replaced span never takes a cookie attribute or a placeholder already there."""
    first, _ = passes
    changed = 0
    for path, before in first.before.items():
        after = first.after[path]
        if after == before:
            continue
        changed += 1
        for pointer, old, new in _differing(_load(_kind(path), before), _load(_kind(path), after)):
            for _, text, start, end in _gaps(pointer, old, new):
                gap = text[start:end]
                assert ";" not in gap, f"{path}{pointer}: a cookie attribute was taken"
                assert "\n" not in gap, f"{path}{pointer}: more than one value was taken"
                assert not gap.startswith("<"), f"{path}{pointer}: a placeholder was replaced"
    assert changed >= 100


def test_planted_keys_are_all_that_changes(passes: tuple[_Pass, _Pass]) -> None:
    """Every value that differs differs at a planted key; every planted key is gone; every
    changed line of the text lies in a value that changed."""
    _, second = passes
    planted_files = [path for path, keys in second.planted.items() if keys]
    assert len(planted_files) >= 0.9 * len(second.planted)
    planted = sum(map(len, second.planted.values()))
    assert sum(map(len, second.reported.values())) >= 0.95 * planted
    binaries = 0
    for path in planted_files:
        keys = second.planted[path]
        before, after = second.before[path], second.after[path]
        kind = _kind(path)
        changed: set[str] = set()
        for pointer, old, new in _differing(_load(kind, before), _load(kind, after)):
            changed.add(pointer)
            binaries += isinstance(old, bytes)
            for where, text, start, end in _gaps(pointer, old, new):
                assert any(text.find(key, max(0, start - len(key)), end + len(key)) >= 0
                           for key in keys) or not text, f"{path}{where}: not a planted key"
        for key in second.reported[path]:
            assert key not in after, f"{path}: a planted key remains"
        assert changed or not second.reported[path], f"{path}: nothing was scrubbed"
        if kind == "toml":
            continue
        lines = _lines_of(before, changed)
        old_lines, new_lines = before.splitlines(), after.splitlines()
        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
            if tag != "equal":
                assert set(range(i1, max(i2, i1 + 1))) <= lines, \
                    f"{path}: line {i1 + 1} changed outside the values that held a key"
    assert binaries >= 10  # keys planted in binary and gzip bodies were found there
