"""Redactor: known values, sensitive keys, URLs, nested documents, streams, findings."""

from __future__ import annotations

import base64
import itertools
import json
import random
import re
import string
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import checksummed_token
from redactkey import Finding, Redactor, RunSecrets, UsageError
from redactkey.scan._engine import Scanner
from redactkey.scan._names import Names, norm

TOKEN = "sk-proj-" + "A1b2" * 12
GH = checksummed_token("gh" + "p_", "Z9y8" * 7 + "Z9")


def _secrets(**values: str) -> RunSecrets:
    secrets = RunSecrets({})
    for slot, value in values.items():
        secrets.add(slot, value)
    return secrets


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(_secrets(OPENAI_API_KEY=TOKEN))


class TestKnownValues:
    """Collected values are found anywhere inside strings."""

    def test_value_inside_prose(self, redactor: Redactor) -> None:
        """A value in a sentence is replaced; the rest of the sentence stays."""
        assert redactor.redact(f"my key is {TOKEN}, ok") == "my key is [REDACTED], ok"

    def test_value_added_after_redactor_was_built(self) -> None:
        """A value registered after the Redactor exists is covered from then on."""
        secrets = _secrets(OPENAI_API_KEY=TOKEN)
        redactor = Redactor(secrets, detectors=False)
        assert redactor.redact("plain-value-1234") == "plain-value-1234"
        secrets.add("LATE_TOKEN", "plain-value-1234")
        assert redactor.redact("x plain-value-1234 y") == "x [REDACTED] y"

    def test_longest_variant_wins(self) -> None:
        """A secret that contains another is replaced whole, not piecewise."""
        secrets = _secrets(SHORT_TOKEN="abcdefgh1234", LONG_TOKEN="abcdefgh1234-more-stuff")
        redacted = Redactor(secrets, detectors=False).redact("[abcdefgh1234-more-stuff]")
        assert redacted == "[[REDACTED]]"

    def test_redacting_one_key_frees_its_glued_neighbour(self, redactor: Redactor) -> None:
        """A detector key glued to a known value is found once the value is taken out."""
        secrets = _secrets(DB_PASSWORD="hunter2-password")
        glued = "hunter2-password" + GH
        assert Redactor(secrets).redact(glued) == "[REDACTED][REDACTED]"
        assert redactor.redact(TOKEN + GH) == "[REDACTED]"  # one key shape swallows both

    def test_keys_under_a_sensitive_field_are_scanned(self, redactor: Redactor) -> None:
        """Inside a credential-named object, keys are scanned and values go whole."""
        assert redactor.redact({"cookie": {TOKEN: "v"}}) == {"cookie": {"[REDACTED]": "[REDACTED]"}}

    def test_keys_of_mappings_are_redacted(self, redactor: Redactor) -> None:
        """A secret used as a dict key is replaced too."""
        assert redactor.redact({TOKEN: 1, "b": TOKEN}) == {"[REDACTED]": 1, "b": "[REDACTED]"}

    def test_bytes_stay_bytes(self, redactor: Redactor) -> None:
        """bytes in, bytes out."""
        assert redactor.redact(b"k=" + TOKEN.encode()) == b"k=[REDACTED]"

    def test_tuples_and_numbers_pass_through(self, redactor: Redactor) -> None:
        """Containers keep their type; numbers, bools and None are untouched."""
        assert redactor.redact((1, 2.5, True, None, TOKEN)) == (1, 2.5, True, None, "[REDACTED]")

    def test_unknown_objects_are_a_usage_error(self, redactor: Redactor) -> None:
        """An arbitrary object is refused with a message naming its type and pointer."""
        with pytest.raises(UsageError, match="object at /a/0"):
            redactor.redact({"a": [object()]})


class TestSensitiveKeys:
    """Credential-named fields are redacted whole; look-alikes survive."""

    @pytest.mark.parametrize(
        "name",
        [
            "authorization",
            "Authorization",
            "PROXY-AUTHORIZATION",
            "x-api-key",
            "api-key",
            "x-goog-api-key",
            "ocp-apim-subscription-key",
            "cookie",
            "Set-Cookie",
            "password",
            "client_secret",
            "access_token",
            "refresh_token",
            "id_token",
            "api_key",
            "x-amz-security-token",
        ],
    )
    def test_sensitive_names(self, redactor: Redactor, name: str) -> None:
        """Each listed name is sensitive, case-insensitively."""
        assert redactor.is_sensitive_key(name)
        assert redactor.redact({name: "anything at all"}) == {name: "[REDACTED]"}

    @pytest.mark.parametrize(
        "name", ["max_tokens", "prompt_tokens", "session_id", "key", "token_type", "author"]
    )
    def test_lookalikes_survive(self, redactor: Redactor, name: str) -> None:
        """Names that merely contain a credential word are not redacted whole."""
        assert not redactor.is_sensitive_key(name)
        assert redactor.redact({name: "kept value"}) == {name: "kept value"}

    def test_list_valued_headers(self, redactor: Redactor) -> None:
        """vcrpy-style list values under a sensitive key are redacted element-wise."""
        data = {"Set-Cookie": ["a=1; Path=/", "b=2"], "Cookie": {"sid": "abc"}}
        assert redactor.redact(data) == {
            "Set-Cookie": ["[REDACTED]", "[REDACTED]"],
            "Cookie": {"sid": "[REDACTED]"},
        }

    def test_header_pairs(self, redactor: Redactor) -> None:
        """A list of [name, value] pairs redacts the value of a sensitive name."""
        pairs = [["authorization", "Token opaque"], ["accept", "text/plain"]]
        assert redactor.redact(pairs) == [["authorization", "[REDACTED]"], ["accept", "text/plain"]]

    def test_empty_and_null_values_are_kept(self, redactor: Redactor) -> None:
        """Nothing to hide in an empty string or null."""
        assert redactor.redact({"password": "", "api_key": None}) == {
            "password": "",
            "api_key": None,
        }

    def test_configurable_names(self) -> None:
        """`sensitive_keys` adds names, `safe_keys` removes them."""
        redactor = Redactor(sensitive_keys=["X-Internal"], safe_keys=["cookie"])
        assert redactor.redact({"x_internal": "v", "cookie": "c"}) == {
            "x_internal": "[REDACTED]",
            "cookie": "c",
        }

    def test_redact_headers(self, redactor: Redactor) -> None:
        """redact_headers masks credential headers and scans the others."""
        headers = {"Authorization": "Bearer x", "X-Echo": f"{TOKEN}", "Accept": "*/*"}
        assert redactor.redact_headers(headers) == {
            "Authorization": "[REDACTED]",
            "X-Echo": "[REDACTED]",
            "Accept": "*/*",
        }

    def test_entropy_only_under_credential_names(self) -> None:
        """A random token under `github_token` goes; the same under `note` stays."""
        value = "Qx7Lm2Pz9Rt4Vb8Nc3Hd6Jf1Kg5"
        redactor = Redactor()
        assert redactor.redact({"github_token": value}) == {"github_token": "[REDACTED]"}
        assert redactor.redact({"note": value}) == {"note": value}
        assert redactor.redact({"next_token": "plain words"}) == {"next_token": "plain words"}


_PIECES = [*'ab_-.:= \t\n\r"\'\\?&;#%[]<>/xyzAPI', "api_key", "token", "password",
           "\u00a0", "\u2028", "\x0b", "\x1c", "\x85", "é", '\\\\\\"', '"a": "b"',
           "key=val", "Authorization: Bearer x", "\n- secret: v  \n", "Cookie: a=b; c=d",
           '"ab": "c"de": "v"', "a=b=c", "x=y?k=v", "k: v\nk2: v2", "'s'"]


# The pair shapes as whole-text patterns: what trying each credential name's own places must
# find (and the scan may find more: a pair inside another pair's value).
_QUOTED_KV = re.compile(
    r"(?P<kq>\\{0,7}[\"'])(?P<key>[A-Za-z0-9_.\-]{2,64})(?P=kq)\s*(?::|=>?)\s*"
    r"(?P<vq>\\{0,7}[\"'])(?P<val>[^\"'\\\r\n]{1,8192})(?P=vq)")
_LINE_KV = re.compile(
    r"(?m)^[ \t]*(?:-[ \t]+)?(?P<key>[A-Za-z0-9_\-]{2,64})[ \t]*:[ \t]+"
    r"(?P<val>[^\r\n]*?)[ \t]*\r?$")
_QUERY_KV = re.compile(
    r"(?:(?<=^)|(?<=[?&;\s]))(?P<key>[A-Za-z0-9_.\-%\[\]]{1,64})=(?P<val>[^&\s#;\"'<>]+)")
_PIECES = [*'ab_-.:= \t\n\r"\'\\?&;#%[]<>/xyzAPI', "api_key", "token", "password",
           "\u00a0", "\u2028", "\x0b", "\x1c", "\x85", "é", '\\\\\\"', '"a": "b"',
           "key=val", "Authorization: Bearer x", "\n- secret: v  \n", "Cookie: a=b; c=d",
           '"ab": "c"de": "v"', "a=b=c", "x=y?k=v", "k: v\nk2: v2", "'s'"]


def _whole_text_pairs(text: str) -> set[tuple[int, int]]:
    names = Names()
    out = set()
    for m in _QUOTED_KV.finditer(text):
        if names.key_class(m.group("key")) == 1:
            out.add(m.span("val"))
    for m in _LINE_KV.finditer(text):
        if names.key_class(m.group("key")) == 1 and m.group("val"):
            out.add(m.span("val"))
    for m in _QUERY_KV.finditer(text):
        key = norm(unquote(m.group("key")))
        in_query = m.start() > 0 and text[m.start() - 1] in "?&;"
        if key in (names.query if in_query else names.sensitive):
            out.add(m.span("val"))
    return {span for span in out if span[1] > span[0]}


class TestKeyValuePlaces:
    """Name-value pairs in text are found by trying each credential name's own places."""

    @pytest.mark.parametrize("seed", range(4))
    def test_every_pair_the_whole_text_patterns_find(self, seed: int) -> None:
        """Quoted pairs, header lines and query pairs: every one the whole-text patterns
        find (the scan may find more: a pair inside another pair's value)."""
        scanner = Scanner((), Names())
        rng = random.Random(seed)
        for _ in range(1500):
            text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 120)))
            found = {(s.start, s.end) for s in scanner.scan(text) if s.rule == "sensitive-key"}
            assert _whole_text_pairs(text) <= found, text

    def test_pairs_in_long_prose(self) -> None:
        """A credential-named pair deep in long prose with colons and quotes is redacted."""
        words = [f"word{n}" + (":" if n % 40 == 0 else "'s" if n % 31 == 0 else "")
                 for n in range(6000)]
        words[3000] = ('\n"api_key": "abc123def456ghi"\npassword: hunter2hunter2\n'
                       "access_token=zzzyyyxxx111")
        out = Redactor().redact_text(" ".join(words))
        assert "abc123def456ghi" not in out
        assert "hunter2hunter2" not in out
        assert "zzzyyyxxx111" not in out
        assert out.count("[REDACTED]") == 3

    @pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["lf", "crlf"])
    def test_header_lines_any_line_ending(self, newline: str) -> None:
        """A credential header line is redacted whether the text's lines end in LF or CRLF,
        and the line ending is kept."""
        secret = "hunter2" * 3
        text = newline.join(["GET / HTTP/1.1", f"Password: {secret}", "X: y"])
        out = Redactor(detectors=False).redact_text(text)
        assert out == newline.join(["GET / HTTP/1.1", "Password: [REDACTED]", "X: y"])


class TestUrls:
    """Userinfo, credential query parameters, SigV4 and path segments."""

    @pytest.mark.parametrize(
        ("url", "expected"),
        [
            ("https://user:hunter2pass@example.com/x", "https://user:[REDACTED]@example.com/x"),
            (
                "https://example.com/v1?key=AIzaFake&alt=json",
                "https://example.com/v1?key=[REDACTED]&alt=json",
            ),
            (
                "https://example.com/?a=1&access_token=tok.en&b=2",
                "https://example.com/?a=1&access_token=[REDACTED]&b=2",
            ),
            (
                "https://b.s3.amazonaws.com/o?X-Amz-Credential=AKIDEXAMPLE%2F2024&X-Amz-Signature=abc123&X-Amz-Date=1",
                "https://b.s3.amazonaws.com/o?X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]&X-Amz-Date=1",
            ),
        ],
    )
    def test_url_parts(self, url: str, expected: str) -> None:
        """Each credential part of a URL is replaced; the rest of the URL is kept."""
        assert Redactor().redact_url(url) == expected

    def test_known_value_in_path_segment(self, redactor: Redactor) -> None:
        """A collected value inside a path is replaced."""
        url = f"https://api.example.com/keys/{TOKEN}/usage"
        assert redactor.redact_url(url) == "https://api.example.com/keys/[REDACTED]/usage"

    def test_plain_urls_survive(self) -> None:
        """A URL with no credential comes through unchanged."""
        url = "https://api.openai.com/v1/chat/completions?model=gpt-4o&max_tokens=5"
        assert Redactor().redact_url(url) == url


class TestEmbedded:
    """Form bodies, JSON inside strings, PEM blocks, base64 text bodies."""

    def test_form_body(self) -> None:
        """A credential parameter in a form body is replaced."""
        body = "grant_type=client_credentials&client_secret=abcdefgh1234&scope=read"
        expected = "grant_type=client_credentials&client_secret=[REDACTED]&scope=read"
        assert Redactor().redact(body) == expected

    def test_json_inside_a_string(self) -> None:
        """A JSON document held in a string is opened, redacted and re-serialised."""
        inner = json.dumps({"api_key": "abcdefgh1234", "n": 1})
        out = Redactor().redact({"body": inner})
        assert json.loads(out["body"]) == {"api_key": "[REDACTED]", "n": 1}

    def test_clean_json_string_is_byte_identical(self) -> None:
        """A JSON string with nothing to redact keeps its exact bytes."""
        inner = '{ "a" :1,\n "b": [1, 2]}'
        assert Redactor().redact(inner) == inner

    @pytest.mark.parametrize("newline", ["\n", "\\n"])
    def test_pem_private_key(self, newline: str) -> None:
        """A PEM private-key body is removed, raw or with escaped newlines."""
        body = newline.join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "BKcwggSjAgEAAoIBAQC7"])
        pem = f"-----BEGIN PRIVATE KEY-----{newline}{body}{newline}-----END PRIVATE KEY-----"
        out = Redactor().redact({"private_key_pem": pem})["private_key_pem"]
        assert "MIIE" not in out
        assert out == "-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----"

    def test_base64_text_body(self, redactor: Redactor) -> None:
        """A base64 body holding text is decoded, redacted and re-encoded."""
        body = base64.b64encode(json.dumps({"note": f"key {TOKEN}"}).encode()).decode()
        out = Redactor().redact({"base64": body})["base64"]
        assert TOKEN not in base64.b64decode(out).decode()


class TestStreams:
    """Secrets split across consecutive chunks."""

    def test_split_across_delta_content(self, redactor: Redactor) -> None:
        """The same field of consecutive chunk objects is read as one text."""
        chunks = [
            {"choices": [{"delta": {"content": "key: " + TOKEN[:11]}}]},
            {"choices": [{"delta": {"content": TOKEN[11:] + " end"}}]},
        ]
        out = redactor.redact_stream(chunks)
        assert out == [
            {"choices": [{"delta": {"content": "key: [REDACTED]"}}]},
            {"choices": [{"delta": {"content": " end"}}]},
        ]

    @pytest.mark.parametrize("cuts", [(3,), (5, 9), (1, 2, 3, 4), (2, 20)])
    def test_joined_deltas_equal_the_whole_answer_redacted(
        self, redactor: Redactor, cuts: tuple[int, ...]
    ) -> None:
        """One placeholder, in the delta where the secret starts: joined deltas read as the
        whole answer redacted, however the secret is cut."""
        whole = f"Your token is {TOKEN} as requested."
        start = whole.index(TOKEN)
        bounds = [0, *(start + c for c in cuts), len(whole)]
        deltas = [{"delta": whole[a:b]} for a, b in itertools.pairwise(bounds)]
        out = redactor.redact_stream(deltas)
        assert "".join(d["delta"] for d in out) == redactor.redact(whole)
        assert redactor.redact_stream(out) == out

    def test_split_across_sse_events(self) -> None:
        """Consecutive SSE `data:` events are read as one stream, even without known values."""
        events = [
            "data: " + json.dumps({"delta": "token " + GH[:9]}) + "\n\n",
            "data: " + json.dumps({"delta": GH[9:] + " done"}) + "\n\n",
        ]
        out = Redactor().redact_stream(events)
        assert GH[:9] not in "".join(out)
        assert GH[9:] not in "".join(out)
        assert Redactor().redact_text("".join(events)) == "".join(out)

    @pytest.mark.parametrize("known", [False, True], ids=["no-secrets", "run-secrets"])
    @pytest.mark.parametrize("head", ["", "event: delta\n", ": keep-alive\n\n"])
    def test_sse_body_found_wherever_its_data_lines_start(self, known: bool, head: str) -> None:
        """A body whose `data:` lines start after other lines is read as a stream too, with
        or without run secrets (then the one search of the text finds the line starts)."""
        secrets = RunSecrets()
        if known:
            secrets.add("OPENAI_API_KEY", TOKEN)
        body = head + "".join(
            "data: " + json.dumps({"delta": part}) + "\n\n"
            for part in ("use " + GH[:9], GH[9:] + " now")
        )
        out = Redactor(secrets).redact_text(body)
        assert GH[:9] not in out
        assert GH[9:] not in out
        assert out.startswith(head)

    def test_clean_stream_is_unchanged(self, redactor: Redactor) -> None:
        """A stream with nothing to redact comes back equal."""
        chunks = [{"choices": [{"delta": {"content": "Hello"}}]}, {"choices": [{"delta": {}}]}]
        assert redactor.redact_stream(chunks) == chunks


class TestLabels:
    """Labelled placeholders name the slot or field, never a secret."""

    def test_a_member_name_that_is_a_secret_does_not_label_its_value(self) -> None:
        """`{"<secret>-password": "sk-..."}` labelled: neither the key nor the label keeps it."""
        secrets = RunSecrets()
        secrets.add("PASSWORD", "hunter2-password")
        value = "sk-proj-" + "c2LufYNuydk9sgEWl2agE4aE-Yhc3a" * 4
        out = Redactor(secrets, labelled=True).redact({"hunter2-password": value})
        assert "hunter2" not in json.dumps(out)
        assert list(out.values()) == ["[REDACTED:secret]"]

    def test_ordinary_labels_stay(self) -> None:
        """A credential-named field still labels its value with its name."""
        out = Redactor(labelled=True).redact({"authorization": "Bearer " + TOKEN})
        assert out == {"authorization": "[REDACTED:authorization]"}


class TestFindings:
    """Findings name where and what, never the value."""

    def test_findings_name_pointer_rule_and_slot(self, redactor: Redactor) -> None:
        """A known value is reported with its pointer, slot and a masked preview."""
        found = redactor.findings({"messages": [{"content": f"k {TOKEN}"}]})
        assert found == [
            Finding("/messages/0/content", "known-value", "OPENAI_API_KEY", "sk-p…", 2, 58)
        ]

    def test_split_secret_in_an_sse_body_is_a_finding(self) -> None:
        """A key split across two SSE events of one body is reported, masked."""
        body = (
            "data: " + json.dumps({"delta": "use " + GH[:9]}) + "\n\n"
            "data: " + json.dumps({"delta": GH[9:] + " now"}) + "\n\n"
        )
        found = Redactor().findings({"body": body})
        assert [(f.pointer, f.rule) for f in found] == [("/body", "github-token")] * 2
        assert all(GH not in repr(f) for f in found)
        first = body.index("{")
        assert (found[0].start, found[0].end) == (first, body.index("\n", first))

    def test_findings_never_hold_the_value(self, redactor: Redactor) -> None:
        """No field of any finding contains the secret."""
        data = {"authorization": f"Bearer {TOKEN}", "x": f"{TOKEN} {GH}"}
        found = redactor.findings(data)
        assert {f.rule for f in found} >= {"sensitive-key", "known-value", "github-token"}
        assert all(TOKEN not in repr(f) and GH not in repr(f) for f in found)


class TestExtraPatterns:
    """A user's own detectors redact like the built-in ones."""

    def test_extra_pattern_is_redacted_and_reported(self) -> None:
        """The whole match is replaced, and the finding carries the rule's name."""
        token = "acme_" + "0123456789abcdef"
        redactor = Redactor(extra_patterns={"acme-token": r"acme_[0-9a-f]{16}"})
        assert redactor.redact({"note": f"use {token}."}) == {"note": "use [REDACTED]."}
        assert [f.rule for f in redactor.findings({"note": token})] == ["acme-token"]
        assert Redactor().redact(token) == token

    @pytest.mark.parametrize("with_secrets", [False, True], ids=["no-secrets", "secrets"])
    def test_extra_pattern_without_keywords_reads_every_text(self, with_secrets: bool) -> None:
        """A pattern with no literal to gate it on runs on a text in which no keyword or
        known value occurs, with run secrets or without."""
        secrets = RunSecrets()
        if with_secrets:
            secrets.add("SLOT", "run-" + "q" * 16)
        redactor = Redactor(secrets, extra_patterns={
            "card": r"(?<![0-9])[0-9]{4}-[0-9]{4}-[0-9]{4}(?![0-9])"})
        assert redactor.redact({"note": "paid with 4111-2222-3333 today"}) == {
            "note": "paid with [REDACTED] today"}

    @pytest.mark.parametrize("pattern", ["(", "x*"])
    def test_bad_extra_pattern_is_a_usage_error(self, pattern: str) -> None:
        """An invalid or empty-matching pattern fails when the Redactor is built."""
        with pytest.raises(UsageError, match="extra pattern 'p'"):
            Redactor(extra_patterns={"p": pattern})


class TestPlaceholder:
    """The placeholder never depends on the value; a labelled form is an option."""

    def test_labelled_placeholder(self) -> None:
        """`labelled=True` names the slot, detector rule or field."""
        redactor = Redactor(_secrets(OPENAI_API_KEY=TOKEN), labelled=True)
        out = redactor.redact({"t": f"{TOKEN} {GH}", "password": "x" * 9})
        assert out == {
            "t": "[REDACTED:OPENAI_API_KEY] [REDACTED:github-token]",
            "password": "[REDACTED:password]",
        }

    def test_same_placeholder_for_different_values(self) -> None:
        """Two machines with different values of a slot redact to the same text."""
        one = Redactor(_secrets(OPENAI_API_KEY=TOKEN), detectors=False)
        two = Redactor(_secrets(OPENAI_API_KEY="dummy-key-for-replay"), detectors=False)
        assert one.redact(f"k={TOKEN}") == two.redact("k=dummy-key-for-replay")

    def test_is_placeholder(self) -> None:
        """Our placeholders (plain and labelled) are recognised; other text is not."""
        redactor = Redactor()
        assert redactor.is_placeholder("[REDACTED]")
        assert redactor.is_placeholder("[REDACTED:OPENAI_API_KEY]")
        assert not redactor.is_placeholder("REDACTED")

    def test_placeholder_that_looks_secret_is_refused(self) -> None:
        """A placeholder that a detector would flag would break idempotence; refused."""
        with pytest.raises(UsageError, match="placeholder"):
            Redactor(placeholder="gh" + "p_" + "A" * 36)

    def test_idempotent(self, redactor: Redactor) -> None:
        """redact(redact(x)) == redact(x) on a mixed document."""
        data = {
            "authorization": f"Bearer {TOKEN}",
            "url": f"https://h/x?api_key={TOKEN}&b=1",
            "text": f"see {GH} and {TOKEN}",
        }
        once = redactor.redact(data)
        assert redactor.redact(once) == once


class TestQuietTextsRemembered:
    """A scanner remembers short texts it found literals in but no span; remembering
    changes no answer."""

    def test_a_remembered_text_is_still_read_as_a_query(self) -> None:
        """A text quiet as plain text is remembered for plain text only: read as a query
        its `key=` pair is still found."""
        scanner = Redactor()._scanner()
        text = "key=" + "".join(random.choices(string.ascii_letters, k=24))
        assert scanner.scan(text) == []
        assert scanner.scan(text) == []
        assert [span.rule for span in scanner.scan(text, query=True)] == ["sensitive-key"]

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.sampled_from([
        "https://example.com/v1/chat", "postgres://app:{k}@db/app", "api_key={k}",
        "Authorization: Bearer {k}", "key={k}", "tokens", "passage", "{k}", "auth: x",
        "see {gh}", "https://h/x?api_key={k}", "100%25 sure",
    ]), min_size=1, max_size=12), st.booleans())
    def test_spans_are_those_of_a_scanner_that_remembers_nothing(
        self, picked: list[str], query: bool,
    ) -> None:
        """The same texts scanned again, by a scanner that has remembered some of them,
        give the spans a fresh scanner gives."""
        texts = [text.replace("{k}", TOKEN).replace("{gh}", GH) for text in picked]
        redactor = Redactor()
        shared = redactor._scanner()
        first = shared.scan_many(texts, query=query)
        fresh = Scanner(shared.rules, shared.names)
        assert shared.scan_many(texts, query=query) == first
        assert fresh.scan_many(texts, query=query) == first
        assert shared.scan_many(list(reversed(texts)), query=not query) == (
            fresh.scan_many(list(reversed(texts)), query=not query))


class TestBuiltOnce:
    """What does not change between redactors is compiled once and shared."""

    def test_same_rules_share_the_compiled_scan(self) -> None:
        """Two redactors with the same rules and names share one scan; other rules or
        names get their own."""
        first = Redactor(RunSecrets())
        assert first._scanner() is Redactor()._scanner()
        assert Redactor(sensitive_keys=["x-tenant-secret"])._scanner() is not first._scanner()
        assert Redactor(detectors=False)._scanner() is not first._scanner()
        custom = Redactor(extra_patterns={"ours": r"ours_[a-z]{12}"})
        assert custom._scanner() is not first._scanner()
        assert custom.redact("key ours_abcdefghijkl") == "key [REDACTED]"

    def test_a_secret_added_later_is_found_by_every_redactor_over_it(self) -> None:
        """Sharing the scan never shares secrets: each redactor sees its own."""
        secrets = RunSecrets()
        mine, other = Redactor(secrets), Redactor(RunSecrets())
        value = "later-" + "q7Zx" * 5
        secrets.add("LATER", value)
        assert mine.redact(f"it is {value}") == "it is [REDACTED]"
        assert other.redact(f"it is {value}") == f"it is {value}"

    def test_a_redactor_over_a_copy_shares_the_scan(self) -> None:
        """`over(copy)` scans with the scan of the redactor it came from until a secret is
        added to the copy; copies that add the same secret share one scan again."""
        run = _secrets(OPENAI_API_KEY=TOKEN)
        base = Redactor(run)
        mine, yours = base.over(run.copy()), base.over(run.copy())
        assert mine._scanner() is base._scanner()
        for other in (mine, yours):
            assert other._secrets is not None
            other._secrets.add("LATER", "later-" + "q7Zx" * 5)
        assert mine._scanner() is not base._scanner()
        assert mine._scanner() is yours._scanner()
        assert mine.redact("later-" + "q7Zx" * 5 + " " + TOKEN) == "[REDACTED] [REDACTED]"
        assert base.redact("later-" + "q7Zx" * 5) == "later-" + "q7Zx" * 5

    @pytest.mark.parametrize("labelled", [False, True])
    @pytest.mark.parametrize("start", [{}, {"OPENAI_API_KEY": TOKEN}])
    @pytest.mark.parametrize("added", [
        {"LATER": "later-" + "q7Zx" * 5},
        {"A_FIRST": TOKEN},  # the same value under a slot that sorts first
        {"LATER": "later-" + "q7Zx" * 5, "GITHUB": GH},
    ])
    def test_added_secrets_redact_as_a_fresh_redactor_would(
        self, labelled: bool, start: dict[str, str], added: dict[str, str]
    ) -> None:
        """A redactor whose secrets grew after its automaton was built redacts exactly as
        one built over all of them at once: raw, encoded and masked forms, labels too."""
        run = _secrets(**start)
        grown = Redactor(run, labelled=labelled).over(run.copy())
        grown.redact("warm up")
        assert grown._secrets is not None
        for slot, value in added.items():
            grown._secrets.add(slot, value)
        fresh = Redactor(_secrets(**start, **added), labelled=labelled)
        values = [*start.values(), *added.values()]
        texts = [
            " and ".join(values),
            base64.b64encode(" ".join(values).encode()).decode(),
            json.dumps({"echo": values, "note": "masked " + values[-1][:3] + "…"
                        + values[-1][-10:]}),
            "key ****" + values[-1][-12:] + " end",
        ]
        for text in texts:
            assert grown.redact(text) == fresh.redact(text)
            assert grown.findings(text) == fresh.findings(text)


class TestMaskPatterns:
    """A masked preview of a secret (`sk-…abcd1234`, `****abcd1234`, `sk-proj-abcd…`) is
    found as the whole-text mask patterns find it, reading only around the marks."""

    PLAIN_MASK = r"(?:…|\.{3,8}|\*{3,64}|•{2,64}|x{4,64}|X{4,64})"
    SHOWN = r"[A-Za-z0-9_\-+/=]"
    VALUE = "abcdefghQ9xYz12345678"

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from(
        ["…", ".", "...", "*", "***", "•", "••", "x", "xxxx", "X", "XXXX", " ", "ab", "Q9",
         "sk-", "_", "=", "abcdefgh", "é", "." * 4, "*" * 32, "•" * 32, "x" * 32, "X" * 32,
         "A" * 128, VALUE[:9], VALUE[-9:], VALUE[:14], VALUE[-12:]]), max_size=60).map("".join))
    def test_same_parts_as_the_whole_text_patterns(self, text: str) -> None:
        self._check(text)

    @pytest.mark.parametrize(("mark", "shortest", "longest"), [
        (".", 3, 8), ("*", 3, 64), ("•", 2, 64), ("x", 4, 64), ("X", 4, 64),
    ])
    def test_the_bounds_of_each_mask(self, mark: str, shortest: int, longest: int) -> None:
        for length in (shortest - 1, shortest, shortest + 1, longest - 1, longest, longest + 1):
            for shown in (self.VALUE[:9], self.VALUE[-9:], "AbCdEfGhIj"):
                self._check(mark * length + shown)
                self._check(shown + mark * length)
                self._check(f"{shown} {mark * length}{shown}")

    def _check(self, text: str) -> None:
        scanner = Scanner((), None, values=[("S", self.VALUE)])
        found = {(s.start, s.end) for s in scanner.scan(text)}
        tail = re.compile(self.PLAIN_MASK + rf"({self.SHOWN}{{8,256}})")
        head = re.compile(rf"(?<!{self.SHOWN})({self.SHOWN}{{8,256}}?)" + self.PLAIN_MASK)
        expected = set()
        for match in tail.finditer(text):
            shown, start = match.group(1), match.start(1)
            for length in range(min(len(shown), len(self.VALUE) - 1), 7, -1):
                if self.VALUE.endswith(shown[:length]):
                    expected.add((start, start + length))
                    break
        for match in head.finditer(text):
            shown, start = match.group(1), match.start(1)
            for skip in range(0, len(shown) - 7):
                if len(shown) - skip < len(self.VALUE) and self.VALUE.startswith(shown[skip:]):
                    expected.add((start + skip, match.end(1)))
                    break
        assert expected <= found, text
        for start, end in found:
            part = text[start:end]
            assert self.VALUE.startswith(part) or self.VALUE.endswith(part), text


class TestSchemePlaceholders:
    """`Bearer [REDACTED]` (what a vcrpy filter or another tool leaves) is already redacted."""

    @pytest.mark.parametrize("value", ["Bearer [REDACTED]", "Basic [REDACTED]",
                                       "token [REDACTED]"])
    def test_kept_and_not_found(self, value: str) -> None:
        assert Redactor().redact({"authorization": value}) == {"authorization": value}
        assert Redactor().findings({"authorization": [value]}) == []

    def test_a_scheme_with_a_value_still_goes(self) -> None:
        value = "Bearer " + "".join(random.choice(string.ascii_letters) for _ in range(24))
        assert Redactor().redact({"authorization": value}) == {"authorization": "[REDACTED]"}
