"""Detectors: every rule finds its shape; look-alikes and known ids are left alone."""

from __future__ import annotations

import base64
import json
import random
import re
import string
import subprocess
import sys
from typing import Any

import pytest

from helpers import checksummed_token, detector_spans
from redactkey import Redactor
from redactkey.scan import _rules
from redactkey.scan._rules import DEFAULT_RULES, custom_rules
from redactkey.scan._validators import (
    base62_crc32,
    fake,
    is_known_id,
    looks_high_entropy,
    shannon_entropy,
)

A = "A1b2C3d4"  # filler; every vector is assembled at run time
HEX = "0123456789abcdef"

POSITIVE = {
    "openai-api-key": "sk-" + "proj-" + A * 10,
    "openai-api-key-legacy": "sk-" + A * 6,
    "openai-t3blbkfj": "sk-" + "abcdefghij" * 2 + "T3BlbkFJ" + "klmnopqrst" * 2,
    "anthropic-api-key": "sk-" + "ant-api03-" + A * 12,
    "openrouter-api-key": "sk-" + "or-v1-" + HEX * 4,
    "google-api-key": "AI" + "za" + "Sy" + A * 4 + "x",
    "google-oauth-token": "ya" + "29.a0Af" + A * 8,
    "huggingface-token": "hf" + "_" + "abcdefghijklmnopqrstuvwxyzABCDEFGH",
    "groq-api-key": "gs" + "k_" + A * 7,
    "replicate-token": "r8" + "_" + A * 5,
    "xai-api-key": "xa" + "i-" + A * 10,
    "perplexity-api-key": "pp" + "lx-" + A * 6,
    "langsmith-api-key": "ls" + "v2_pt_" + HEX * 2 + "_" + HEX[:10],
    "tavily-api-key": "tv" + "ly-" + A * 4,
    "github-token": checksummed_token("gh" + "p_", A * 3 + "xyzzyx"),
    "github-fine-grained": "github" + "_pat_" + A * 4,
    "gitlab-token": "gl" + "pat-" + A * 3,
    "aws-access-key-id": "AK" + "IA" + "Q" * 4 + "2345678901WX",
    "slack-token": "xo" + "xb-" + "1234567890-" + A * 3,
    "slack-webhook": "https://hooks.slack.com/services/" + "T0123ABC/B0123ABC/" + A * 3,
    "stripe-key": "sk" + "_live_" + A * 4,
    "sendgrid-key": "SG." + "a" * 22 + "." + "b" * 43,
    "pypi-token": "pypi-" + "AgEIcHlwaS5vcmc" + A * 10,
    "square-oauth-secret": "sq0csp-" + "a" * 43,
    "mailchimp-key": "abcdef0123456789" * 2 + "-us12",
    "twilio-key": "SK" + "0123456789abcdef" * 2,
    "azure-storage-key": "AccountKey=" + "Ab1+" * 22,
    "npm-token": "//registry.npmjs.org/:_authToken=" + checksummed_token("npm_", A * 3 + "xyzzyx"),
}


class TestRules:
    """Each rule matches its shape, standing alone and inside text."""

    @pytest.mark.parametrize(("name", "token"), sorted(POSITIVE.items()))
    def test_positive(self, name: str, token: str) -> None:
        """The shape is found and the whole secret is covered."""
        text = f"value: {token} (end)"
        out = Redactor().redact(text)
        assert out != text, name
        assert token not in out

    @pytest.mark.parametrize(
        "text",
        [
            "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012",
            "call_AbCdEfGhIjKlMnOpQrStUvWx",
            "toolu_01AbCdEfGhIjKlMnOpQrStUv",
            "msg_01AbCdEfGhIjKlMnOpQrStUv",
            "req_0123456789abcdef0123456789abcdef",
            "fp_0123456789",
            "resp_0123456789abcdef0123456789abcdef0123456789abcdef",
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301",
            "sha256:" + HEX * 4,
            "a task-management desk-lamp with basic information",
            "https://news.example.com/gsk-boosts-lung-cancer-survival-in-trial",
            "the bearer bonds matured; Bearer authentication is described in RFC 6750",
            "Tokens per minute: 30000; max_tokens=512&prompt_tokens=10",
            "xAIzaSy" + A * 4 + "xyz",  # glued to a letter
            "mask-proj-" + A * 10,  # glued to a letter
        ],
    )
    def test_negative(self, text: str) -> None:
        """Ids, digests, slugs and prose survive untouched."""
        assert Redactor().redact(text) == text

    def test_rules_without_keywords_run_on_every_text(self) -> None:
        """A rule with no keyword (a user's own pattern) cannot be prefiltered: it always runs."""
        rules = custom_rules({"acme-token": r"acme_[0-9a-f]{16}"})
        text = "deploy with acme_" + "0123456789abcdef" + " today"
        assert [(s.rule, text[s.start:s.end]) for s in detector_spans(text, rules)] == [
            ("acme-token", "acme_0123456789abcdef")
        ]

    def test_jwt_header_must_decode_to_json(self) -> None:
        """Three dotted base64url parts are a JWT only if the header is JSON."""
        head = base64.urlsafe_b64encode(json.dumps({"alg": "HS256"}).encode()).decode().rstrip("=")
        body = base64.urlsafe_b64encode(json.dumps({"sub": "1"}).encode()).decode().rstrip("=")
        jwt = f"{head}.{body}.{A * 4}"
        assert Redactor().redact(f"t={jwt}") == "t=[REDACTED]"
        fake = "eyJ" + "zzzzzzzzzz" + ".eyJ" + "zzzzzzzzzz" + "." + A
        assert Redactor().redact(fake) == fake

    def test_basic_auth_must_decode_to_user_and_password(self) -> None:
        """`Basic <b64>` is redacted only when it decodes to `user:password`."""
        creds = base64.b64encode(b"admin:" + A.encode() * 2).decode()
        assert Redactor().redact(f"Basic {creds}") == "Basic [REDACTED]"
        assert Redactor().redact("Basic information here") == "Basic information here"


class TestDetectSecretsPlugins:
    """The detect-secrets patterns are read from the plugins' classes on first use."""

    def test_a_plugin_rule_uses_the_plugin_s_compiled_pattern(self) -> None:
        from detect_secrets.plugins.slack import SlackDetector

        found = [r for r in DEFAULT_RULES if r.plugin.startswith("slack.SlackDetector:")]
        assert [r.regex for r in found] == list(SlackDetector.denylist)

    def test_every_plugin_pattern_is_the_plugin_s_own(self) -> None:
        """Read from the class body without importing the module, each pattern is the one
        the imported class holds (same text, same flags)."""
        import importlib

        plugins = {rule.plugin for rule in DEFAULT_RULES if rule.plugin}
        assert len(plugins) >= 5
        for where in sorted(plugins):
            path, index = where.rsplit(":", 1)
            module, name = path.rsplit(".", 1)
            imported = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"),
                               name).denylist[int(index)]
            read = _rules._class_denylist(module, name)
            assert read is not None, where
            assert read[int(index)] == imported, where

    def test_a_plugin_pattern_imports_neither_detect_secrets_nor_requests(self) -> None:
        code = ("import sys\n"
                "from redactkey.scan._rules import DEFAULT_RULES\n"
                "[r.regex for r in DEFAULT_RULES if r.plugin]\n"
                "print(sorted({'detect_secrets', 'requests'} & set(sys.modules)))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        assert out.strip() == "[]"

    def test_plugins_load_one_thread_at_a_time(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A load saves the host's logging state, imports, and puts the state back; two
        loads at once could each save what the other's import changed."""
        import threading
        import types

        held: list[bool] = []

        def importing(name: str) -> Any:
            # Every import runs with the load lock held, so no second load can be inside.
            held.append(_rules._PLUGIN_LOAD.locked())
            return types.SimpleNamespace(Plugin=type("Plugin", (), {"denylist": [re.compile("x")]}))

        monkeypatch.setattr(_rules, "importlib", types.SimpleNamespace(import_module=importing))
        _rules._plugin_pattern.cache_clear()
        start = threading.Barrier(4)

        def load(n: int) -> None:
            start.wait()
            _rules._plugin_pattern(f"module{n}.Plugin:0")

        threads = [threading.Thread(target=load, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        _rules._plugin_pattern.cache_clear()
        assert held == [True] * 4

    @pytest.mark.parametrize("options", [{}, {"labelled": True}])
    def test_the_default_placeholders_do_not_look_like_secrets(
        self, options: dict[str, Any]
    ) -> None:
        """The default placeholders hold nothing the scan would take out."""
        redactor = Redactor(**options)
        for label in ("X", "OPENAI_API_KEY", "authorization"):
            assert redactor._spans(redactor._placeholder_for(label), query=True) == []


class TestShapes:
    """The helpers behind the false-positive policy."""

    @pytest.mark.parametrize(
        ("text", "known"),
        [
            ("chatcmpl-abc123XYZ", True),
            ("3F2504E0-4F89-11D3-9A0C-0305E82C3301", True),
            (HEX * 2, True),
            ("data:image/png;base64,iVBORw0KGgo=", True),
            ("sk-" + "proj-" + A * 4, False),
        ],
    )
    def test_known_ids(self, text: str, known: bool) -> None:
        """Ids, UUIDs, digests and data URLs are known shapes; keys are not."""
        assert is_known_id(text) is known

    def test_entropy(self) -> None:
        """Random tokens are high-entropy; words, ids and digests are not."""
        assert shannon_entropy("") == 0.0
        assert shannon_entropy("aaaa") == 0.0
        assert looks_high_entropy("Qx7Lm2Pz9Rt4Vb8Nc3Hd6Jf1Kg5")
        assert not looks_high_entropy("password-reset-link")
        assert looks_high_entropy(HEX * 4)  # a digest's shape, under a credential's name
        assert not looks_high_entropy("chatcmpl-" + HEX * 2)  # a provider's named id
        assert not looks_high_entropy("with spaces 123 abc def ghi")


class TestChecksums:
    """GitHub's and npm's token checksum: the base62 CRC32 of the 30 random characters."""

    def test_checksum_matches_an_independent_computation(self) -> None:
        """`base62_crc32` agrees with the tests' own computation on many bodies, zero
        padding included."""
        rng = random.Random(11)
        bodies = ["0" * 30, "z" * 30] + [
            "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(30))
            for _ in range(500)]
        for body in bodies:
            assert "ghp_" + body + base62_crc32(body) == checksummed_token("ghp_", body)
        padded = [body for body in bodies if base62_crc32(body).startswith("0")]
        assert padded, "no body with a checksum under 62**5 met"

    @pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "npm_"])
    def test_any_changed_character_fails(self, prefix: str) -> None:
        """Changing any one character of a valid token turns it into a near miss."""
        good = checksummed_token(prefix, "Qx7Lm2Pz9Rt4Vb8Nc3Hd6Jf1Kg5Ws0")
        family = "npm-token" if prefix == "npm_" else "github-token"
        assert [s.rule for s in detector_spans(f"t {good} .")] == [family]
        for at in range(4, len(good)):
            other = "a" if good[at] != "a" else "b"
            bad = good[:at] + other + good[at + 1:]
            assert [s.rule for s in detector_spans(f"t {bad} .")] == [family + "-near-miss"]

    @pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"])
    def test_wrong_length_is_a_near_miss(self, prefix: str) -> None:
        """30 letters and digits after a GitHub prefix (36 expected): a near miss."""
        token = prefix + "Qx7Lm2Pz9Rt4Vb8Nc3Hd6Jf1Kg5Ws0"
        assert [s.rule for s in detector_spans(f"t {token} .")] == ["github-token-near-miss"]

    def test_other_shapes_are_not_checked(self) -> None:
        """Underscores, longer tokens and `ghs_` wrapping a JWT carry no checksum."""
        for token in ("gh" + "s_" + A * 2 + "_" + A * 2 + "abc",
                      "gh" + "r_" + A * 10,
                      "github" + "_pat_" + A * 4):
            assert [s.rule for s in detector_spans(f"t {token} .")] == ["github-token"]


class TestSseLineEndings:
    """SSE streams with CRLF line endings are read the same way."""

    def test_crlf_events_split_secret(self) -> None:
        """A key split across two CRLF-separated events is found."""
        token = "gh" + "p_" + A * 5
        events = [
            "data: " + json.dumps({"delta": "use " + token[:10]}) + "\r\n\r\n",
            "data: " + json.dumps({"delta": token[10:] + " now"}) + "\r\n\r\n",
        ]
        out = "".join(Redactor().redact_stream(events))
        assert token[:10] not in out
        assert token[10:] not in out
        assert out.count("\r\n\r\n") == 2


def _examples(attribute: str) -> list[tuple[str, str]]:
    out = []
    for rule in DEFAULT_RULES:
        texts = rule.example_texts() if attribute == "examples" else rule.not_example_texts()
        out.extend((rule.name, text) for text in texts)
    return out


class TestRuleExamples:
    """Each rule's own examples fire it, and its non-examples leave it silent."""

    @pytest.mark.parametrize(("name", "text"), _examples("examples"),
                             ids=lambda v: v if len(v) < 40 else None)
    def test_example_fires_its_rule(self, name: str, text: str) -> None:
        """The named rule finds a secret in its example."""
        rules = [r for r in DEFAULT_RULES if r.name == name]
        assert any(span.rule == name for span in detector_spans(text, rules))
        assert Redactor().redact_text(text) != text

    @pytest.mark.parametrize(("name", "text"), _examples("not_examples"),
                             ids=lambda v: v if len(v) < 40 else None)
    def test_not_example_stays_silent(self, name: str, text: str) -> None:
        """The named rule finds nothing in its non-example."""
        rules = [r for r in DEFAULT_RULES if r.name == name]
        assert not [span for span in detector_spans(text, rules) if span.rule == name]

    def test_every_rule_has_an_example(self) -> None:
        """No rule is declared without an example of what it finds."""
        names = {rule.name for rule in DEFAULT_RULES}
        with_examples = {rule.name for rule in DEFAULT_RULES if rule.examples}
        assert names == with_examples
        assert all(rule.shape for rule in DEFAULT_RULES)

    def test_examples_are_the_same_on_every_run(self) -> None:
        """Example bodies are generated, deterministic and shaped by their alphabet."""
        assert fake(40, seed="x") == fake(40, seed="x")
        assert fake(40, seed="x") != fake(40, seed="y")
        assert set(fake(200, "abc", seed="z")) <= set("abc")
        assert [r.example_texts() for r in DEFAULT_RULES] == [
            r.example_texts() for r in _rules.load_rules()]

    def test_a_bad_entry_is_refused_by_name(self) -> None:
        """A rule with an unknown field or validator names itself."""
        with pytest.raises(ValueError, match="'acme'"):
            _rules._rule({"id": "acme", "keywords": ["a"], "pattern": "a", "colour": 1})
        with pytest.raises(ValueError, match=r"'acme'.*'nope'"):
            _rules._rule({"id": "acme", "keywords": ["a"], "pattern": "a", "validate": "nope"})


class TestContexts:
    """Secrets in the encodings recorded traffic puts them in."""

    @pytest.mark.parametrize(
        "text",
        [
            "https://example.com/cb?q=Bearer%20" + "Ab1" * 8,
            "next=https%3A%2F%2Fapi.example.com%2F%3Fkey%3DAI" + "za" + "Sy" + A * 4 + "x",
            "k=-----BEGIN%20PRIVATE%20KEY-----%0A" + A * 8 + "%0A-----END%20PRIVATE%20KEY-----",
        ],
    )
    def test_percent_encoded(self, text: str) -> None:
        """A credential inside a percent-encoded value is found and taken out whole."""
        out = Redactor().redact_text(text)
        assert "[REDACTED]" in out
        assert A * 2 not in out
        assert "Ab1Ab1Ab1" not in out

    def test_url_password_with_at_sign(self) -> None:
        """`scheme://user:p@ss@host` loses the whole password."""
        text = "postgres://app:p@ss" + A + "@db.internal/app"
        out = Redactor().redact_text(text)
        assert out == "postgres://app:[REDACTED]@db.internal/app"


class TestDocumentedRules:
    """docs/redaction.md lists every rule."""

    def test_rule_table_names_every_rule(self) -> None:
        """Each rule name appears in the rule table of the redaction guide."""
        from pathlib import Path


        guide = (Path(__file__).resolve().parents[1] / "docs" / "redaction.md").read_text(
            encoding="utf-8")
        missing = sorted({r.name for r in DEFAULT_RULES if f"| `{r.name}` |" not in guide})
        assert missing == []


class TestOnePass:
    """The one search: literals found in one pass, offsets in characters, and a pattern
    tried on a window at its keyword finds what it finds in any surroundings."""

    def test_offsets_count_characters(self) -> None:
        """Spans index the str, also after non-ASCII, non-BMP and lone surrogates."""
        token = "gh" + "p_" + "a1B2" * 9
        lone = b"\xff\xfe".decode("utf-8", "surrogateescape")
        for text in (f"é😀 key {token} é😀", f"{lone}{token}{lone} ", f"{token}"):
            spans = detector_spans(text)
            assert [text[s.start:s.end] for s in spans if s.rule.startswith("github")] == [token]

    def test_many_texts_in_one_search_as_one_by_one(self) -> None:
        """`scan_many` over texts gives each text's own spans (none bleed across)."""
        from redactkey.scan._engine import Scanner
        from redactkey.scan._names import Names

        scanner = Scanner(DEFAULT_RULES, Names())
        texts = [text for _, text in _examples("examples")] + [
            "api_key=abcdefgh1234", "", "é😀", "token=", "=secret-value-1"]
        assert scanner.scan_many(texts) == [scanner.scan(text) for text in texts]

    @pytest.mark.parametrize("seed", range(6))
    def test_surroundings_do_not_change_a_match(self, seed: int) -> None:
        """Every rule example, set in filler of any length that does not touch it, gives
        the same spans (shifted) as alone: the window around a keyword holds every match."""
        rng = random.Random(seed)
        alphabet = string.ascii_letters + string.digits + " -_:=\"'/.%\né😀"
        for name, sample in _examples("examples"):
            rules = [r for r in DEFAULT_RULES if r.name == name]
            alone = [(s.start, s.end, s.rule) for s in detector_spans(sample, rules)]
            head = "".join(rng.choice(alphabet) for _ in range(rng.choice((0, 5, 3000))))
            tail = "".join(rng.choice(alphabet) for _ in range(rng.choice((0, 5, 3000))))
            text = f"{head} \n {sample} \n {tail}"
            shift = len(head) + 3
            spans = [(s.start - shift, s.end - shift, s.rule) for s in detector_spans(text, rules)
                     if shift <= s.start < shift + len(sample)]
            assert spans == alone, name
