"""No leaks, no false alarms: the leak matrix, a no-leak property, the benign corpus,
determinism across processes, detect-secrets isolation and the real-world traps."""

from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import _leakmatrix
from conftest import ROOT
from helpers import detector_spans
from redactkey import Redactor, RunSecrets, request_key
from redactkey.secrets._run_secrets import value_variants

CASES = _leakmatrix.cases()
BENIGN = sorted((ROOT / "corpus" / "benign").iterdir())


def _collected() -> RunSecrets:
    secrets = RunSecrets({})
    for name, token in _leakmatrix.tokens().items():
        secrets.add(name.upper().replace("-", "_"), token)
    return secrets


def _run(redactor: Redactor, case: _leakmatrix.Case) -> Any:
    if case.how == "stream":
        return redactor.redact_stream(case.value)
    return redactor.redact(case.value)


class TestLeakMatrix:
    """Every token type x every context: zero survivors."""

    @pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
    def test_no_survivor_with_secrets_collected(self, case: _leakmatrix.Case) -> None:
        """With the token collected as a run secret, no 12-character slice of it survives."""
        assert _leakmatrix.survivors(case.token, _run(Redactor(_collected()), case)) == []

    @pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
    def test_no_survivor_with_detectors_only(self, case: _leakmatrix.Case) -> None:
        """Nobody told us the token: the detectors still leave no slice of it."""
        assert _leakmatrix.survivors(case.token, _run(Redactor(), case)) == []

    def test_matrix_covers_every_type_and_context(self) -> None:
        """The matrix holds every token type of the issue in every context."""
        assert len(CASES) == len(_leakmatrix.TOKEN_BUILDERS) * len(_leakmatrix.CONTEXTS)
        assert len(_leakmatrix.TOKEN_BUILDERS) >= 21

    def test_survivor_check_can_fail(self) -> None:
        """The survivor check finds a token left in plain and in base64 form."""
        token = _leakmatrix.tokens()["groq"]
        assert _leakmatrix.survivors(token, {"a": f"x {token} y"})
        assert _leakmatrix.survivors(token, base64.b64encode(f"k={token}".encode()).decode())

    @pytest.mark.parametrize("follow", ["&", ".", ",", "<", '"', ")", "\n"])
    @pytest.mark.parametrize("name", sorted(_leakmatrix.TOKEN_BUILDERS))
    def test_followed_by_punctuation(self, name: str, follow: str) -> None:
        """A key followed by `&`, `.`, `,`, `<` (and friends) is still matched whole."""
        token = _leakmatrix.tokens()[name]
        out = Redactor().redact(f"<b>{token}{follow}</b>")
        assert out == f"<b>[REDACTED]{follow}</b>"


_SECRET = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="[]"),
    min_size=8,
    max_size=40,
).filter(lambda s: s.strip() == s and "REDACTED" not in s)


def _encode(secret: str, how: int, lead: bytes, tail: bytes) -> str:
    raw = secret.encode()
    if how == 0:
        return secret
    if how == 1:
        return json.dumps(secret)[1:-1]
    if how == 2:
        return quote(secret, safe="")
    if how == 3:
        return quote_plus(secret).lower()
    if how == 4:
        return base64.b64encode(lead + raw + tail).decode()
    if how == 5:
        return base64.urlsafe_b64encode(lead + raw + tail).decode().rstrip("=")
    return "Basic " + base64.b64encode(b"user:" + raw).decode()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


class TestNoLeakProperty:
    """Random secret, random JSON, random encoding: no encoded form survives."""

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        secret=_SECRET,
        doc=_JSON,
        how=st.integers(0, 6),
        lead=st.binary(max_size=3),
        tail=st.binary(max_size=3),
        before=st.text(max_size=10),
        after=st.text(max_size=10),
    )
    def test_no_encoded_form_survives(
        self, secret: str, doc: Any, how: int, lead: bytes, tail: bytes, before: str, after: str
    ) -> None:
        """Plant one encoded form anywhere in random JSON; no variant of the secret is left."""
        secrets = RunSecrets({}, skip_short=False)
        secrets.add("RANDOM_SECRET", secret)
        redactor = Redactor(secrets)
        planted = {"doc": doc, "carrier": before + _encode(secret, how, lead, tail) + after}
        out = redactor.redact(planted)
        texts = _leakmatrix._strings(out)
        variants = value_variants(secret)
        assert not [v for v in variants for t in texts if v in t]
        assert redactor.redact(out) == out


_ADVERSARIAL_TOKENS = [*list(_leakmatrix.tokens().values())[:6], "hunter2-password"]
_PIECES = st.sampled_from(
    [
        *_ADVERSARIAL_TOKENS,
        "Bearer ",
        "Basic ",
        "api_key=",
        "?token=",
        "&",
        '"authorization": "',
        "data: ",
        "\n",
        "{",
        "}",
        "[REDACTED]",
        "%3D",
        "\\n",
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
        "://u:",
        "@h",
    ]
)
_ADVERSARIAL_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=12)), max_size=8).map("".join)
_ADVERSARIAL = st.recursive(
    st.none() | st.integers() | _ADVERSARIAL_TEXT,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.one_of(_ADVERSARIAL_TEXT, st.sampled_from(["authorization", "api_key", "db_token"])),
            inner,
            max_size=4,
        )
    ),
    max_leaves=10,
)


def _adversarial_redactors() -> list[Redactor]:
    secrets = _collected()
    secrets.add("PASSWORD", "hunter2-password")
    return [Redactor(secrets), Redactor(secrets, labelled=True)]


class TestIdempotenceProperty:
    """Redacting twice changes nothing, even on glued keys, placeholders and escapes."""

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    @given(doc=_ADVERSARIAL)
    def test_redact_is_idempotent(self, doc: Any) -> None:
        """redact(redact(x)) == redact(x) for plain and labelled placeholders; no key is left."""
        for redactor in _adversarial_redactors():
            once = redactor.redact(doc)
            assert redactor.redact(once) == once
            texts = _leakmatrix._strings(once)
            assert not [t for t in texts for token in _ADVERSARIAL_TOKENS if token in t]

    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
    @given(chunks=st.lists(_ADVERSARIAL_TEXT, min_size=1, max_size=5))
    def test_redact_stream_is_idempotent(self, chunks: list[str]) -> None:
        """The same for text chunks and for the same field of chunk objects."""
        for redactor in _adversarial_redactors():
            for stream in (chunks, [{"delta": c} for c in chunks]):
                once = redactor.redact_stream(stream)
                assert redactor.redact_stream(once) == once


class TestBenignCorpus:
    """Realistic traffic with ids, digests, images and usage comes through byte-identical."""

    @pytest.mark.parametrize("path", BENIGN, ids=[p.name for p in BENIGN])
    def test_text_is_byte_identical(self, path: Path) -> None:
        """The file's text redacts to itself, byte for byte."""
        text = path.read_text(encoding="utf-8")
        assert Redactor(_collected()).redact_text(text) == text
        assert Redactor().redact(path.read_bytes()) == path.read_bytes()

    @pytest.mark.parametrize(
        "path", [p for p in BENIGN if p.suffix == ".json"], ids=lambda p: p.name
    )
    def test_data_is_unchanged_and_finds_nothing(self, path: Path) -> None:
        """The parsed document redacts to an equal document, with no findings."""
        doc = json.loads(path.read_text(encoding="utf-8"))
        redactor = Redactor(_collected())
        assert redactor.redact(doc) == doc
        assert redactor.findings(doc) == []
        if "chunks" in doc:
            assert redactor.redact_stream(doc["chunks"]) == doc["chunks"]

    @pytest.mark.parametrize(
        "path", [p for p in BENIGN if p.suffix == ".sse"], ids=lambda p: p.name
    )
    def test_sse_events_as_chunks_are_unchanged(self, path: Path) -> None:
        """An SSE stream recorded event by event comes back identical."""
        events = [e + "\n\n" for e in path.read_text(encoding="utf-8").split("\n\n") if e]
        assert Redactor().redact_stream(events) == events

    def test_corpus_holds_the_traps(self) -> None:
        """The corpus really carries the look-alikes it claims to survive."""
        text = "".join(p.read_text(encoding="utf-8") for p in BENIGN)
        for needle in (
            "chatcmpl-",
            "call_",
            "toolu_",
            "fp_",
            "msg_",
            "req_",
            "sha256:",
            "data:image/png;base64,",
            "encrypted_content",
            "sk-",
            "gsk-boosts",
            "prompt_tokens",
            "session_id",
            "max_tokens",
            "signature",
        ):
            assert needle in text, needle


class TestDeterminism:
    """Same input, same output, in any process and under any hash seed."""

    SCRIPT = (
        "import json, sys; sys.path.insert(0, 'tests');"
        "import _leakmatrix as m; from redactkey import Redactor, RunSecrets;"
        "s = RunSecrets({});"
        "[s.add(k.upper().replace('-', '_'), v) for k, v in m.tokens().items()];"
        "r = Redactor(s, labelled=True);"
        "out = [r.redact_stream(c.value) if c.how == 'stream' else r.redact(c.value)"
        " for c in m.cases()];"
        "print(json.dumps(out, sort_keys=True))"
    )

    def test_same_bytes_across_hash_seeds(self) -> None:
        """Two processes with different PYTHONHASHSEED produce identical output."""
        outputs = []
        for seed in ("0", "12345"):
            env = {**os.environ, "PYTHONHASHSEED": seed}
            result = subprocess.run(
                [sys.executable, "-c", self.SCRIPT],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            outputs.append(result.stdout)
        assert outputs[0] == outputs[1]
        assert "[REDACTED:" in outputs[0]

    def test_dict_order_does_not_matter(self) -> None:
        """Reordering keys gives an equal result."""
        token = _leakmatrix.tokens()["xai"]
        data = {"a": f"k {token}", "authorization": "x" * 9, "z": [1, token]}
        shuffled = dict(reversed(list(data.items())))
        redactor = Redactor()
        assert redactor.redact(data) == redactor.redact(shuffled)

    def test_idempotent_on_the_whole_matrix(self) -> None:
        """redact(redact(x)) == redact(x) for every matrix case."""
        redactor = Redactor(_collected())
        for case in CASES:
            once = _run(redactor, case)
            again = redactor.redact_stream(once) if case.how == "stream" else redactor.redact(once)
            assert again == once, case.id


class TestDetectSecretsIsolation:
    """detect-secrets' global settings neither leak into nor out of redaction."""

    def test_global_settings_untouched(self) -> None:
        """Redacting does not change detect-secrets' global settings."""
        from detect_secrets.settings import get_settings

        before = json.dumps(get_settings().json(), sort_keys=True)
        Redactor().redact({"a": _leakmatrix.tokens()["github-classic"], "b": "AKIA" + "Q" * 16})
        assert json.dumps(get_settings().json(), sort_keys=True) == before

    def test_user_settings_do_not_change_results(self) -> None:
        """A caller's transient_settings (all plugins off) does not weaken our detectors."""
        from detect_secrets.settings import transient_settings

        text = (
            f"key {_leakmatrix.tokens()['github-classic']} and {_leakmatrix.tokens()['aws-akia']}"
        )
        expected = Redactor().redact(text)
        with transient_settings({"plugins_used": []}):
            assert Redactor().redact(text) == expected
        assert expected == "key [REDACTED] and [REDACTED]"


class TestRealWorldTraps:
    """Known false-positive traps in third-party cassettes are left alone."""

    @pytest.mark.parametrize(
        "needle",
        [
            "gsk-boosts-lung-cancer",
        ],
    )
    def test_url_slug_survives(self, shared_dir: Path, needle: str) -> None:
        """A news URL slug that looks like a Groq key prefix survives."""
        path = next((shared_dir / "realworld").rglob("*wire_contract[[]openai-responses[]].yaml"))
        text = path.read_text(encoding="utf-8")
        assert needle in text
        assert needle in Redactor().redact_text(text)

    def test_sk_inside_encrypted_content_survives(self, shared_dir: Path) -> None:
        """`sk-` inside a base64url encrypted_content blob is not a key."""
        path = next(
            (shared_dir / "realworld").rglob("test_openai_responses_model_thinking_part.yaml")
        )
        line = path.read_text(encoding="utf-8").splitlines()[311]
        assert "sk-" in line
        assert Redactor().redact_text(line) == line

    def test_only_credential_fields_are_found_in_real_cassettes(self, shared_dir: Path) -> None:
        """Across all real-world cassettes the only findings are credential-named fields."""
        redactor = Redactor()
        rules = set()
        for path in sorted((shared_dir / "realworld").rglob("*")):
            if path.is_file() and path.suffix in (".yaml", ".yml", ".json"):
                text = path.read_text(encoding="utf-8", errors="replace")
                rules |= {f.rule for f in redactor.findings(text)}
        assert rules == {"sensitive-key"}

    def test_key_shape_inside_wrapped_base64_is_not_a_key(self) -> None:
        """detect-secrets' unbounded AWS pattern inside a base64 line is dropped."""
        line = "AAAAAABAAAAoGF2YzEAAAAAAAAAAQAAAAAAAAAAAAAAAAAAAAACgAFoAEgAAABIAAAAAAAAAAEUTGF2YzYx"
        assert detector_spans(line) == []

    def test_short_blob_with_sk_is_not_a_key(self) -> None:
        """Even a short base64url blob (no blob skip) does not yield an `sk-` match."""
        rng = random.Random(3)
        blob = "".join(rng.choice(_leakmatrix.ALNUM) for _ in range(40))
        blob += "sk-" + "".join(rng.choice(_leakmatrix.ALNUM) for _ in range(30))
        assert detector_spans(blob) == []


class TestRequestKey:
    """`request_key(..., redactor=r)`: a replay machine with dummy keys gets the same key."""

    def test_dummy_and_live_keys_give_the_same_request_key(self) -> None:
        """Recording with the live key and replaying with a dummy compute one key."""
        live, dummy = _leakmatrix.tokens()["openai-project"], "dummy-openai-key-000"

        def request(key: str) -> dict[str, Any]:
            return {
                "method": "POST",
                "url": f"https://api.example.com/v1/chat?api_key={key}",
                "headers": {"authorization": f"Bearer {key}", "content-type": "application/json"},
                "json": {"model": "m", "messages": [{"role": "user", "content": f"echo {key}"}]},
            }

        keys = []
        for value in (live, dummy):
            secrets = RunSecrets({})
            secrets.add("OPENAI_API_KEY", value)
            keys.append(request_key("http", request(value), redactor=Redactor(secrets)))
        assert keys[0] == keys[1]
        assert request_key("http", request(live)) != request_key("http", request(dummy))
