"""The one search over all the texts of a request (docs/performance.md) against the walk that reads
each text: the same credentials learned, the same redaction, the same keys."""

from __future__ import annotations

import copy
import functools
import gzip
import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import SHARED, need_shared
from helpers import checksummed_token
from redactkey import KeySpec, Redactor, RunSecrets
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


def _exact_found(redactor: Redactor, value: Any) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    redactor._credentials(value, found, 0)
    return found


def _check_texts(redactor: Redactor, batch: list[str]) -> None:
    """A text left out of the suspects is one `_str` leaves alone; a batch said to hold no
    credential is one in which the walk finds none."""
    suspects = redactor._suspect_texts(batch)
    for text in batch:
        if text not in suspects and len(text) >= 8:
            assert redactor._str(text, "", None, 0) == text, repr(text)
    if redactor._texts_hold_no_credentials([t for t in batch if len(t) >= 8]):
        for text in batch:
            if len(text) >= 8:
                found: list[tuple[str, str]] = []
                redactor._text_credentials(text, found, 0)
                assert found == [], repr(text)


def _check_value(redactor: Redactor, value: Any) -> None:
    """`redact_lean` equals `redact`; learning through the gate finds what the walk finds;
    keys through the lean redactor equal keys through the redactor."""
    before = copy.deepcopy(value)
    assert _outcome(redactor.redact_lean, value) == _outcome(redactor.redact, value)
    assert value == before
    found: list[tuple[str, str]] = []
    gathered: list[str] = []
    redactor._credentials(value, found, 0, gathered)
    if redactor._texts_hold_no_credentials(gathered) or not gathered:
        assert found == _exact_found(redactor, value)
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
@pytest.mark.slow  # hundreds of generated values, each walked both ways
class TestGateAgainstWalk:
    """Property: the gate never passes over what the walk would change or learn."""

    @settings(max_examples=300, deadline=None)
    @given(batch=st.lists(texts, min_size=1, max_size=6))
    def test_texts(self, redactor: Redactor, batch: list[str]) -> None:
        """Texts the search clears are unchanged by `_str` and hold no credential."""
        _check_texts(redactor, batch)

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
        """Plain JSON values: same redaction, same credentials, same keys."""
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
    """Every container of every recording under ../shared/realworld*: the gate agrees with
    the walk; every string of them, alone and in batches, too."""
    need_shared()
    documents = list(_corpus_documents())
    assert documents
    strings: list[str] = []
    for document in documents:
        for container in _containers(document):
            _check_value(redactor, container)
        strings.extend(_strings(document))
    for start in range(0, len(strings), 7):
        _check_texts(redactor, strings[start : start + 7])


def test_corpora_exercise_the_gate() -> None:
    """The corpora hold texts the gate sends to the walk and texts it clears, and values whose
    redaction it proves unchanged: the comparison above is not vacuous."""
    redactor = REDACTORS[1]
    need_shared()
    documents = list(_corpus_documents())
    strings = [s for d in documents for s in _strings(d) if len(s) >= 8]
    suspects = redactor._suspect_texts(strings)
    assert 0 < len(suspects) < len(strings)
    kept = sum(
        1 for d in documents for c in _containers(d) if redactor.redact_lean(c) is c
    )
    assert kept > 100


class TestConditionalKeywords:
    """A keyword whose rules all need another literal (`Rule.also`) sends a text to be
    read alone only when that literal is there too."""

    def test_a_url_without_userinfo_is_not_read_alone(self) -> None:
        """Every URL holds `://`; only one with an `@` can hold a password."""
        redactor = Redactor(RunSecrets({}))
        url = "https://api.example.test:8443/v1/chat/completions"
        assert redactor._suspect_texts([url, "ordinary words here"]) == []
        userinfo = "https://app:" + "pw-" + "s3cr3tW0rd" * 2 + "@db.example.test/x"
        assert redactor._suspect_texts([url, userinfo]) == [userinfo]
        assert redactor.redact_lean({"u": userinfo}) == {
            "u": "https://app:[REDACTED]@db.example.test/x"}

    def test_hits_whose_literal_is_nowhere_are_dropped_at_once(self) -> None:
        """A hit is dropped before the texts are told apart only when what it needs is in
        none of them; where it is in any text, every hit is kept for `_hit_texts`."""
        from redactkey.redact._redactor import _unmet_dropped

        conditions = {0: (("@",),), 1: (("x", "y"), ("z",))}
        hits = [(0, 1, 4), (1, 9, 11)]
        assert _unmet_dropped(hits, conditions, "\0https://a\0b:c") == []
        assert _unmet_dropped(hits, conditions, "\0https://a\0me@b") == hits
        assert _unmet_dropped(hits, conditions, "\0https://a\0x alone") == []
        assert _unmet_dropped(hits, conditions, "\0https://a\0x and y") == hits
        assert _unmet_dropped(hits, conditions, "\0https://a\0z") == hits
        assert _unmet_dropped([*hits, (2, 0, 1)], conditions, "\0plain") == [*hits, (2, 0, 1)]
        # the `@` in another text than the URL's: the URL is still not read alone
        redactor = Redactor(RunSecrets({}))
        url = "https://api.example.test/v1/chat/completions"
        assert redactor._suspect_texts([url, "write to me@example.test"]) == []

    def test_a_keyword_that_is_also_a_secret_s_spelling_counts_everywhere(self) -> None:
        """A literal of the search that is both a conditional keyword and another of its
        literals (a secret spelled the same, say) counts in every text."""
        from redactkey.redact._redactor import _gate_conditions
        from redactkey.scan._detectors import DeferredPattern, Detectors, Literals, Rule

        rule = Rule("r", DeferredPattern(r"::x@"), ("::",), also=("@",))
        detectors = Detectors((rule,))
        assert detectors.conditions == {0: (("@",),)}
        plain = Literals((*detectors.keywords, "other"))
        clash = Literals((*detectors.keywords, "::"))
        assert _gate_conditions(plain, detectors) == {0: (("@",),)}
        assert _gate_conditions(clash, detectors) == {}
