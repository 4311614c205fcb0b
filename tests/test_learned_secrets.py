"""Secrets learned from the wire: a key that no environment variable names is still redacted.

The real `mistralai` SDK gets its key as a constructor argument (no environment variable,
no prefix to recognise it by) and talks, through `FixtureTransport`, to a local fake
server that echoes the key from the `Authorization` header into its answer, whole and
cut across stream events. The fixtures keep no 8-character piece of the key, and
`redact audit` finds nothing.
"""

from __future__ import annotations

import json
import secrets
import string
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mistralai.client import Mistral

from redactkey import FixtureDir, FixtureTransport, Redactor, RunSecrets
from redactkey.commands._cli import main

ALNUM = string.ascii_letters + string.digits


def _key() -> str:
    return "".join(secrets.choice(ALNUM) for _ in range(32))


class _EchoHandler(BaseHTTPRequestHandler):
    """Answers Mistral chat completions with the caller's own key in the text."""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        key = self.headers.get("authorization", "").removeprefix("Bearer ")
        text = f"You called me with {key}; its last part is …{key[-8:]}."
        common = {"id": "cmpl-" + "0" * 24, "model": body.get("model", "x"), "created": 1}
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for start in range(0, len(text), 5):
                chunk = {**common, "object": "chat.completion.chunk", "choices": [
                    {"index": 0, "delta": {"content": text[start:start + 5]},
                     "finish_reason": None}]}
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n")
            return
        answer = {**common, "object": "chat.completion",
                  "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": text}}],
                  "usage": {"prompt_tokens": 3, "completion_tokens": 9, "total_tokens": 12}}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _client(store: Path, url: str, key: str, mode: str) -> Mistral:
    # An empty RunSecrets: the key is in no environment variable and no declared slot.
    transport = FixtureTransport(FixtureDir(store), mode=mode,
                                 redactor=Redactor(RunSecrets({})))
    return Mistral(api_key=key, server_url=url, client=httpx.Client(transport=transport))


def _pieces(key: str) -> list[str]:
    return [key[i:i + 8] for i in range(len(key) - 7)]


class TestMistralSDK:
    """A constructor-argument key echoed by the server never reaches a fixture."""

    def test_echoed_key_is_redacted_and_audit_is_clean(
        self, tmp_path: Path, echo_server: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Whole answer and stream: no 8-character piece of the key; audit exit 0."""
        monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
        key = _key()
        client = _client(tmp_path, echo_server, key, "record")
        messages = [{"role": "user", "content": "hello"}]
        answer = client.chat.complete(model="mistral-small-latest", messages=messages)
        assert key in str(answer.choices[0].message.content)  # the program sees it live
        streamed = "".join(
            str(event.data.choices[0].delta.content or "")
            for event in client.chat.stream(model="mistral-small-latest", messages=messages)
        )
        assert key in streamed
        files = sorted(tmp_path.rglob("*.json"))
        assert len(files) == 2
        for path in files:
            text = path.read_text(encoding="utf-8")
            assert not [p for p in _pieces(key) if p in text], path.name
        assert main(["audit", str(tmp_path)]) == 0, capsys.readouterr().out

    def test_replay_with_another_key_hits_the_recording(
        self, tmp_path: Path, echo_server: str,
    ) -> None:
        """The learned key never enters the request key: replay with a new key hits."""
        recorded = _client(tmp_path, echo_server, _key(), "record")
        messages = [{"role": "user", "content": "hello"}]
        recorded.chat.complete(model="mistral-small-latest", messages=messages)
        replayed = _client(tmp_path, echo_server, _key(), "replay")
        answer = replayed.chat.complete(model="mistral-small-latest", messages=messages)
        assert "[REDACTED]" in str(answer.choices[0].message.content)


# Header names a client sends, credential names among them, and values that may hold a
# credential in text (a pair, a JSON document, a URL with a password, a percent escape).
_HEADER_NAMES = st.sampled_from([
    "host", "accept", "user-agent", "x-stainless-os", "content-length", "authorization",
    "x-api-key", "api-key", "cookie", "x-debug", "x-meta", "X-Trace",
])
_PIECES = st.sampled_from([
    "api_key=", "token: ", "password=", '{"api_key": "', "https://u:", "@h.example/",
    "%41", "[", "{", "Bearer ", "=", ":", " ", "gzip, deflate", "application/json",
])


@st.composite
def _header_values(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(_PIECES, max_size=4))
    return "".join(pieces) + draw(st.sampled_from(["", _key()[:12], "q7Zx" * 5]))


class TestHeadersLearnedAtOnce:
    """`learn` proves ordinary headers hold no credential in one look at all their values;
    what it learns is what walking every header learns."""

    @settings(max_examples=300, deadline=None)
    @given(headers=st.dictionaries(_HEADER_NAMES, _header_values(), max_size=8),
           body=_header_values())
    def test_what_is_learned_is_what_the_full_walk_learns(
        self, headers: dict[str, str], body: str
    ) -> None:
        request = {"method": "POST", "url": "https://api.example.com/v1?x=1",
                   "headers": headers, "json": {"prompt": body}}
        ours, theirs = RunSecrets({}), RunSecrets({})
        at_once, walked = Redactor(ours), Redactor(theirs)
        walked._named_headers_only = lambda request: request  # type: ignore[method-assign]
        assert at_once.learn(request) == walked.learn(request)
        assert ours.values() == theirs.values()

    @settings(max_examples=100, deadline=None)
    @given(calls=st.lists(st.tuples(
        st.dictionaries(_HEADER_NAMES, _header_values(), max_size=5),
        st.sampled_from(["127.0.0.1:8080", "h.example", "api-key:4d9Q7zXw2LmP", "h:1:2"]),
        st.sampled_from(["https://h.example:8443/v1", "https://h.example/v1?token=a1b2c3d4e5f6",
                         "http://127.0.0.1:9/x", _key()[:12]]),
    ), min_size=1, max_size=6))
    def test_what_is_learned_call_after_call_is_what_the_full_walk_learns(
        self, calls: list[tuple[dict[str, str], str, str]]
    ) -> None:
        """One redactor over a run's calls remembers the hosts and URLs it searched; what
        it learns after each call is what walking every text of every call learns."""
        ours, theirs = RunSecrets({}), RunSecrets({})
        at_once, walked = Redactor(ours), Redactor(theirs)
        walked._named_headers_only = lambda request: request  # type: ignore[method-assign]
        walked._texts_hold_no_credentials = lambda texts: False  # type: ignore[method-assign]
        for headers, host, url in calls:
            request = {"method": "POST", "url": url, "headers": {**headers, "host": host},
                       "json": {"prompt": url}}
            assert at_once.learn(request) == walked.learn(request)
            assert ours.values() == theirs.values()

    def test_a_client_s_host_and_url_are_searched_once(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A host with a port and a URL holding ':' are searched for credential names on
        the first call only; a host that does name one is searched on every call."""
        from redactkey.redact import _redactor as _redact

        redactor = Redactor(RunSecrets({}))
        searched: list[str] = []
        find = _redact.Literals.find

        def counted(self: Any, text: str) -> Any:
            searched.append(text)
            return find(self, text)

        monkeypatch.setattr(_redact.Literals, "find", counted)
        marks = redactor._name_marks()
        headers = {"host": "127.0.0.1:8080", "accept": "*/*",
                   "authorization": f"Bearer {_key()}"}
        request = {"method": "POST", "url": "http://127.0.0.1:8080/v1", "headers": headers}
        for _ in range(3):
            redactor.learn(request)
        by_marks = [t for t in searched if marks is not None and t.startswith("\x00")]
        assert len([t for t in by_marks if "8080" in t]) == 2  # the headers, the URL: once
        named = {**headers, "host": "api-key:8080"}
        per_call = []
        for _ in range(3):
            searched.clear()
            redactor.learn({**request, "headers": named})
            per_call.append(len([t for t in searched if "api-key:8080" in t]))
        assert per_call[0] >= 1
        assert per_call == [per_call[0]] * 3
        # what one redactor remembers, another over other secrets shares: only the
        # texts that name no credential, so the other learns this one's all the same
        keyed = {**headers, "host": "h.example", "x-debug": f"api_key={_key()}"}
        redactor.learn({**request, "headers": keyed})
        assert redactor.over(RunSecrets({})).learn({**request, "headers": keyed}) >= 1

    @pytest.mark.parametrize("value", [
        "api_key={key}", '{{"api_key": "{key}"}}', "https://user:{key}@h.example/x",
        "x; secret={key}", "[1, {{\"password\": \"{key}\"}}]",
    ])
    def test_a_credential_in_an_ordinary_header_is_learned(self, value: str) -> None:
        key = _key()
        redactor = Redactor(RunSecrets({}))
        headers = {"host": "h.example", "accept": "*/*", "x-debug": value.format(key=key)}
        assert redactor.learn({"method": "GET", "url": "https://h.example/",
                               "headers": headers}) >= 1
        assert key not in redactor.redact_text(f"echo {key}")

    def test_the_header_names_are_classed_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A client's header names are classed on its first call; a new name later is."""
        classed: list[str] = []
        redactor = Redactor(RunSecrets({}))
        key_class = redactor._key_class

        def counted(name: str) -> int:
            classed.append(name)
            return key_class(name)

        monkeypatch.setattr(redactor, "_key_class", counted)
        headers = {"host": "h.example", "accept": "*/*", "authorization": f"Bearer {_key()}"}
        request = {"method": "GET", "url": "https://h.example/", "headers": headers}
        for _ in range(3):
            redactor.learn(request)
        assert sorted(n for n in classed if n in headers) == sorted(headers)
        redactor.learn({**request, "headers": {**headers, "x-new": "v"}})
        assert "x-new" in classed


_MEMBER_NAMES = st.sampled_from([
    "prompt", "messages", "content", "model", "api_key", "token", "x-meta", "longer_name",
    "{x", "a@b.example", "caf\u00e9", "role",
])
_JSON_VALUES = st.recursive(
    st.one_of(_header_values(), st.integers(-5, 2**60), st.floats(allow_nan=False),
              st.booleans(), st.none()),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(st.sampled_from(["api-key", "role", "password"]), _header_values()).map(list),
        st.dictionaries(_MEMBER_NAMES, children, max_size=3),
    ),
    max_leaves=8,
)


class TestLearnedAndKeptAtOnce:
    """`learn_and_redact_kept(request, part)` walks the members in `part` once for both;
    what it learns and hands back is what `learn(request)` then `redact_kept(part)` do."""

    @settings(max_examples=300, deadline=None)
    @given(headers=st.dictionaries(_HEADER_NAMES, _header_values(), max_size=5),
           body=_JSON_VALUES,
           url=st.sampled_from(["https://api.example.com/v1?x=1", "https://h.example/a",
                                "https://u:{key}@h.example/", "https://h.example/?key={key}"]),
           counted=st.sampled_from([("method", "url", "json"), ("url", "json", "headers"),
                                    ("json",), ()]))
    def test_what_is_learned_and_kept_is_what_the_two_walks_give(
        self, headers: dict[str, str], body: Any, url: str, counted: tuple[str, ...]
    ) -> None:
        request = {"method": "POST", "url": url.format(key=_key()), "headers": headers,
                   "json": body}
        part = {name: item for name, item in request.items() if name in counted}
        ours, theirs = RunSecrets({}), RunSecrets({})
        at_once, apart = Redactor(ours), Redactor(theirs)
        kept, canonical = at_once.learn_and_redact_kept(request, part)
        apart.learn(request)
        kept_apart, canonical_apart = apart.redact_kept(part)
        assert ours.values() == theirs.values()
        assert json.dumps(kept) == json.dumps(kept_apart)
        assert canonical == canonical_apart
        assert (kept is part) == (kept_apart is part)

    def test_the_counted_members_are_walked_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        redactor = Redactor(RunSecrets({}))
        body = {"messages": [{"role": "user", "content": "a prompt of some words"}]}
        request = {"method": "POST", "url": "https://h.example/v1",
                   "headers": {"host": "h.example", "authorization": f"Bearer {_key()}"},
                   "json": body}
        walked: list[Any] = []
        credentials = redactor._credentials

        def counted(value: Any, *args: Any) -> None:
            walked.append(value)
            credentials(value, *args)

        monkeypatch.setattr(redactor, "_credentials", counted)
        part = {name: request[name] for name in ("method", "url", "json")}
        assert redactor.learn_and_redact_kept(request, part) == (part, True)
        assert not any(value is body for value in walked)
        assert redactor.redact_text(str(request["headers"]["authorization"])) != (
            request["headers"]["authorization"])  # the key was learned all the same


class TestLearn:
    """`Redactor.learn` takes credentials by name from a request."""

    @pytest.mark.parametrize(
        ("request_document", "value"),
        [
            ({"headers": {"authorization": "Bearer {v}"}}, "{v}"),
            ({"headers": {"x-api-key": "{v}"}}, "{v}"),
            ({"headers": [["api-key", "{v}"]]}, "{v}"),
            ({"headers": {"x-goog-api-key": ["{v}"]}}, "{v}"),
            ({"url": "https://api.example.com/v1/models?key={v}&alt=json"}, "{v}"),
            ({"url": "postgres://app:{v}@db.internal/app"}, "{v}"),
            ({"json": {"api_key": "{v}", "model": "m"}}, "{v}"),
            ({"text": '{{"client_secret": "{v}"}}'}, "{v}"),
            ({"text": "grant_type=password&password={v}"}, "{v}"),
            ({"headers": {"authorization": "Token {v}"}}, "{v}"),
            ({"headers": {"authorization": "AWS4-HMAC-SHA256 Credential={v}/20261201/us-east-1/"
                                           "bedrock/aws4_request, SignedHeaders=host;x-amz-date, "
                                           "Signature=" + "0f" * 32}}, "{v}"),
        ],
    )
    def test_learned_value_is_redacted_in_answers(
        self, request_document: dict[str, Any], value: str,
    ) -> None:
        """After learning, the value is redacted wherever it appears, in any encoding."""
        secret = _key()
        document = json.loads(json.dumps(request_document).replace("{v}", secret))
        redactor = Redactor()
        assert redactor.learn(document) >= 1
        out = redactor.redact({"echo": f"seen {secret} and {secret[:4]}…{secret[-10:]}"})
        assert secret not in json.dumps(out)
        assert secret[-10:] not in json.dumps(out)

    def test_basic_credential_is_decoded(self) -> None:
        """A `Basic` credential's password is learned (and found base64-encoded)."""
        import base64

        password = _key()
        encoded = base64.b64encode(f"user:{password}".encode()).decode()
        redactor = Redactor()
        redactor.learn({"headers": {"authorization": f"Basic {encoded}"}})
        assert redactor.redact_text(f"the password was {password}") == (
            "the password was [REDACTED]"
        )

    @pytest.mark.parametrize(
        "value", ["[REDACTED]", "Bearer <TOKEN>", "short", "Bearer test", "your-api-key"]
    )
    def test_placeholders_and_short_values_are_not_learned(self, value: str) -> None:
        """Nothing short or placeholder-like joins the secrets."""
        redactor = Redactor()
        assert redactor.learn({"headers": {"authorization": value}}) == 0
        assert "slots=0" in repr(redactor)

    def test_a_stand_in_key_is_judged_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A client sends its stand-in key on every call: it is judged on the first and
        passed over after; a real key sent later is still learned."""
        import redactkey.redact._redactor as redact_module

        judged: list[str] = []
        looks_redacted = redact_module._looks_redacted

        def counted(value: str, is_placeholder: Any) -> bool:
            judged.append(value)
            return looks_redacted(value, is_placeholder)

        monkeypatch.setattr(redact_module, "_looks_redacted", counted)
        redactor = Redactor()
        stand_in = {"headers": {"authorization": "Bearer sk-test-xxxxxxxxxxxxxxxxxxxx"}}
        assert [redactor.learn(stand_in) for _ in range(3)] == [0, 0, 0]
        assert len(judged) == 1
        real = _key()
        assert redactor.learn({"headers": {"authorization": f"Bearer {real}"}}) == 1
        assert real not in redactor.redact_text(f"echo {real}")

    def test_a_key_sent_again_is_judged_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The same credential sent on every call is taken apart and looked up on the
        first call only; another value under the same name is judged on its own."""
        import redactkey.redact._redactor as redact_module

        taken_apart: list[str] = []
        credential_values = redact_module._credential_values

        def counted(value: str) -> list[str]:
            taken_apart.append(value)
            return credential_values(value)

        monkeypatch.setattr(redact_module, "_credential_values", counted)
        redactor = Redactor()
        first, second = _key(), _key()
        request = {"headers": {"authorization": f"Bearer {first}"}}
        assert [redactor.learn(request) for _ in range(3)] == [1, 0, 0]
        assert len(taken_apart) == 1
        assert redactor.learn({"headers": {"authorization": f"Bearer {second}"}}) == 1
        assert len(taken_apart) == 2
        assert second not in redactor.redact_text(f"echo {second}")

    def test_a_redactor_over_other_secrets_learns_for_itself(self) -> None:
        """A key one redactor has learned is learned again by a redactor made `over` other
        secrets: what its own secrets hold is judged anew."""
        redactor = Redactor(RunSecrets({}))
        key = _key()
        request = {"headers": {"x-api-key": key}}
        assert redactor.learn(request) == 1
        other = redactor.over(RunSecrets({}))
        assert other.learn(request) == 1
        assert key not in other.redact_text(f"echo {key}")

    def test_known_secret_preview_is_redacted(self) -> None:
        """First or last 8+ characters next to an ellipsis or a mask are taken out."""
        secret = "sk-" + _key()
        collected = RunSecrets({})
        collected.add("OPENAI_API_KEY", secret)
        redactor = Redactor(collected)
        for text in (f"sk-…{secret[-8:]}", f"****{secret[-12:]}", f"{secret[:14]}…"):
            out = redactor.redact_text(f"key {text} here")
            assert secret[-8:] not in out
            assert secret[3:14] not in out
