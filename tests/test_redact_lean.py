"""The lean redaction the record layer keys with (`redact_kept`, `redact_lean`) against
`redact`: the same redaction and the same keys, and orjson's bytes only where they are the
canonical bytes."""

from __future__ import annotations

import copy
import functools
import gzip
import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import SHARED, need_shared
from helpers import checksummed_token
from redactkey import KeySpec, Redactor, RunSecrets, canonicalize
from redactkey.keys._canonical import ORJSON_CANONICAL
from redactkey.keys._keys import counted_part, material_and_key, redacted_material_and_key

TOKEN = "sk-proj-" + "A1b2" * 12
GH = checksummed_token("gh" + "p_", "Z9y8" * 7 + "Z9")


def _redactors() -> list[Redactor]:
    """No secrets; secrets long and short; a secret added after the automaton was built;
    labelled placeholders and an extra credential name."""
    bare = Redactor()
    secrets = RunSecrets({})
    secrets.add("OPENAI_API_KEY", TOKEN)
    secrets.add("SHORT", "pw-1234567")
    with_secrets = Redactor(secrets)
    grown_secrets = RunSecrets({})
    grown_secrets.add("OPENAI_API_KEY", TOKEN)
    grown = Redactor(grown_secrets)
    grown.redact_text("built before the next secret")
    grown_secrets.add("LATER", "later-secret-" + "Q9" * 8)
    labelled = Redactor(RunSecrets({}), labelled=True, sensitive_keys=["x-tenant-key"])
    return [bare, with_secrets, grown, labelled]


REDACTORS = _redactors()
IDS = ["bare", "secrets", "grown", "labelled"]

# Pieces that each can make a text change or hold a credential, and pieces of ordinary text.
PIECES = [
    TOKEN, GH, "sk-", "ghp_", "AKIA", "Bearer ", "Basic ", "://", "@", "user:pw@", "%41",
    "%2F", "%", "data:", "\ndata:", "data: x", "{", "[", "{\"a\": 1}", "[1]", " ", "\t", "\n",
    "...", "…", "****", "xxxx", "api_key", "API-KEY", "Authorization", "token", "token=",
    "key=", "sig=", "password: ", "\"api_key\": \"", "'secret': '", "\\\"token\\\": \\\"",
    "Cookie", "x-tenant-key=", ":", "=", "\"", "'", "\\", "\x00", "\u0130", "\u212a",
    "\U0001f600", "é", "later-secret-" + "Q9" * 8, "pw-1234567", "QUJDREVGR0hJSktMTU5PUA==",
    "c2stcHJvai1BMWIyQTFiMkExYjJBMWIy", "hello world ", "the quarterly report ", "gpt-4o-mini",
    "2024-07-18", "abcdefgh", "ordinary", "text", "-", "_", "?", "&", "#",
    "api%5Fkey=", "%61pi_key: ", "tok%65n=", "sk%2Dproj%2D" + "A1b2" * 12,
    '{"my_token": "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9"}', '["x-api-key", "k9Xb2Lm4Qp7Rt1Vw"]',
    "x-api-key=", " my_token: aB3dE5fG7hJ9kL1mN3pQ5rS7tU9", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9",
]

texts = st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("".join)
plain_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(texts | st.sampled_from(
        ["model", "messages", "content", "role", "my_token", "api_key", "Cookie"]),
                      inner, max_size=4),
    max_leaves=12,
)


def _check_value(redactor: Redactor, value: Any) -> None:
    """`redact_lean` equals `redact` (and leaves `value` as it was); keys through the lean
    redactor equal keys through the redactor; `redact_kept` says "canonical" only where
    orjson's sorted bytes are the RFC 8785 bytes."""
    before = copy.deepcopy(value)
    assert _outcome(redactor.redact_lean, value) == _outcome(redactor.redact, value)
    assert value == before
    kept = _outcome(redactor.redact_kept, value)
    if kept[0] == "value" and kept[1][1]:
        assert kept[1][0] is value
        try:  # (orjson refuses an integer past 2**53, as the canonical form does)
            written = orjson.dumps(value, option=ORJSON_CANONICAL)
        except orjson.JSONEncodeError:
            written = None
        if written is not None:
            assert written == canonicalize(value)
    if isinstance(value, dict):
        for kind, spec in (("text", KeySpec.model()), ("tool:t", KeySpec.whole())):
            exact = _keyed(kind, spec, redactor, value)
            lean = _keyed(kind, spec, _LeanOf(redactor), value)
            assert lean == exact
            assert _keyed_kept(kind, spec, redactor, value) == exact


def _keyed_kept(kind: str, spec: KeySpec, redactor: Redactor, value: Any) -> tuple[str, Any]:
    """Keyed as ModelFixtures keys: `redact_kept`, and orjson's bytes when it says so."""
    def keyed(v: Any) -> Any:
        redacted, canonical = redactor.redact_kept(counted_part(v, spec))
        return redacted_material_and_key(kind, redacted, spec, orjson_canonical=canonical)

    return _outcome(keyed, value)


def _keyed(kind: str, spec: KeySpec, redactor: Any, value: Any) -> tuple[str, Any]:
    return _outcome(lambda v: material_and_key(kind, v, spec=spec, redactor=redactor), value)


def _outcome(fn: Any, value: Any) -> tuple[str, Any]:
    try:
        return "value", fn(value)
    except Exception as exc:  # the same failure, named the same way, is the same outcome
        return type(exc).__name__, str(exc)


class _LeanOf:
    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def redact(self, value: Any) -> Any:
        return self.redactor.redact_lean(value)


@pytest.mark.parametrize("redactor", REDACTORS, ids=IDS)
@pytest.mark.slow  # hundreds of generated values, each redacted and keyed both ways
class TestLeanAgainstWhole:
    """Property: the lean redaction is the redaction, and keys through it are the keys."""

    @settings(max_examples=200, deadline=None)
    @given(value=plain_json)
    @example(value={"my_token": "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9"})  # credential-ish name
    @example(value={"headers": {"Authorization": "Bearer " + "k9Xb2Lm4Qp7Rt1Vw" * 2}})
    @example(value=[["x-api-key", "k9Xb2Lm4Qp7Rt1Vw"]])  # a name-value pair
    @example(value={"u": "https://user:pw-secret-1@example.com/x"})  # userinfo
    @example(value={"q": "a=1&api%5Fkey=k9Xb2Lm4Qp7Rt1Vw"})  # an escaped name
    @example(value={"b": "eyJteV90b2tlbiI6ICJhQjNkRTVmRzdoSjlrTDFtTjNwUTVyUzd0VTkifQ=="})
    @example(value={"j": '{"my_token": "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9"}'})  # JSON in a string
    @example(value={"s": "data: " + "later-secret-" + "Q9" * 4 + "\ndata: " + "Q9" * 4})
    @example(value={"n": 2**60, "m": [1, 2.5]})  # an integer orjson refuses, a float
    @example(value={"\U0001f600": 1, "\uffff": 2})  # names that sort apart by UTF-16
    def test_values(self, redactor: Redactor, value: Any) -> None:
        """Plain JSON values: same redaction, same keys."""
        _check_value(redactor, value)


@functools.cache
def _corpus_documents() -> tuple[Any, ...]:
    return tuple(_read_corpora())


def _read_corpora() -> Iterator[Any]:
    for root in sorted(SHARED.glob("realworld*")):
        for path in sorted(root.rglob("*")):
            if not path.is_file():
                continue
            try:
                raw = path.read_bytes()
                if path.suffix == ".gz":
                    raw = gzip.decompress(raw)
                text = raw.decode("utf-8")
                if path.suffix in (".yaml", ".yml"):
                    yield yaml.safe_load(text)
                elif path.suffix in (".json", ".har", ".gz"):
                    yield json.loads(text)
            except (ValueError, yaml.YAMLError, OSError):
                continue


def _containers(value: Any) -> Iterator[Any]:
    if isinstance(value, (dict, list)):
        yield value
        for item in value.values() if isinstance(value, dict) else value:
            yield from _containers(item)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@pytest.mark.parametrize("redactor", REDACTORS[1:3], ids=IDS[1:3])
@pytest.mark.slow  # every container and string of ../shared/realworld*
def test_realworld_corpora(redactor: Redactor) -> None:
    """Every container of every recording under ../shared/realworld*: lean and whole agree."""
    need_shared()
    documents = list(_corpus_documents())
    assert documents
    for document in documents:
        for container in _containers(document):
            _check_value(redactor, container)


def test_corpora_exercise_both_paths() -> None:
    """The corpora hold containers the lean redaction hands back as they are and containers
    it changes: the comparison above is not vacuous."""
    redactor = REDACTORS[1]
    need_shared()
    documents = list(_corpus_documents())
    assert documents
    containers = [c for d in documents for c in _containers(d)]
    kept = sum(1 for c in containers if redactor.redact_lean(c) is c)
    assert 100 < kept < len(containers)
