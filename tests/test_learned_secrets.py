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


class TestHeadersLearned:
    """Credentials in ordinary headers are learned too."""

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
    """`learn_and_redact_kept(request, part)` learns and hands back what `learn(request)`
    then `redact_kept(part)` do, walking the members in `part` only when they may send
    something."""

    @settings(max_examples=300, deadline=None)
    @given(headers=st.dictionaries(_HEADER_NAMES, _header_values(), max_size=5),
           body=_JSON_VALUES, echo=st.booleans(),
           url=st.sampled_from(["https://api.example.com/v1?x=1", "https://h.example/a",
                                "https://u:{key}@h.example/", "https://h.example/?key={key}"]),
           counted=st.sampled_from([("method", "url", "json"), ("url", "json", "headers"),
                                    ("json",), ()]))
    def test_what_is_learned_and_kept_is_what_the_two_walks_give(
        self, headers: dict[str, str], body: Any, echo: bool, url: str,
        counted: tuple[str, ...],
    ) -> None:
        key = _key()
        if echo:  # the key sent by name is echoed in the part that counts
            headers = {**headers, "authorization": f"Bearer {key}"}
            body = {"prompt": f"my key is {key}", "rest": body}
        request = {"method": "POST", "url": url.format(key=key), "headers": headers,
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
        if echo and "json" in counted:
            assert key not in json.dumps(kept)

    def test_a_quiet_part_is_not_walked_to_learn(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A part whose structure and texts send nothing is not walked for credentials;
        the headers left out of it are, and their key is learned."""
        from redactkey.redact import _learn

        walked: list[Any] = []
        credentials_of = _learn.credentials_of

        def counted(redactor: Redactor, value: Any, *args: Any) -> Any:
            walked.append(value)
            return credentials_of(redactor, value, *args)

        monkeypatch.setattr(_learn, "credentials_of", counted)
        key = _key()
        body = {"model": "m", "messages": [{"role": "user", "content": "a prompt of words"}]}
        request = {"method": "POST", "url": "https://h.example/v1", "json": body,
                   "headers": {"host": "h.example", "authorization": f"Bearer {key}"}}
        part = {name: request[name] for name in ("method", "url", "json")}
        redactor = Redactor(RunSecrets({}))
        assert redactor.learn_and_redact_kept(request, part) == (part, True)
        assert walked == [{"headers": request["headers"]}]
        assert key not in redactor.redact_text(f"echo {key}")

    @pytest.mark.parametrize("part", [
        {None: "a text of words"}, {"messages": [{None: "a text of words"}]},
        {"n": [None, "a text of words"]},
    ])
    def test_a_member_that_is_no_name_is_judged_as_the_walk_judges_it(
        self, part: dict[Any, Any],
    ) -> None:
        """A member named by no string (None, say) is not mistaken for an item of a list:
        the part comes back as `redact_kept` gives it, plain or not."""
        request = {"headers": {"host": "h.example"}, **part}
        at_once = Redactor(RunSecrets({})).learn_and_redact_kept(request, part)
        assert at_once == Redactor(RunSecrets({})).redact_kept(part)


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

    def test_a_stand_in_key_is_passed_over(self) -> None:
        """A client sends its stand-in key on every call: it is never learned; a real key
        sent later is."""
        redactor = Redactor()
        stand_in = {"headers": {"authorization": "Bearer sk-test-xxxxxxxxxxxxxxxxxxxx"}}
        assert [redactor.learn(stand_in) for _ in range(3)] == [0, 0, 0]
        real = _key()
        assert redactor.learn({"headers": {"authorization": f"Bearer {real}"}}) == 1
        assert real not in redactor.redact_text(f"echo {real}")

    def test_a_key_sent_again_is_learned_once(self) -> None:
        """The same credential sent on every call is learned on the first call only;
        another value under the same name is learned on its own."""
        redactor = Redactor()
        first, second = _key(), _key()
        request = {"headers": {"authorization": f"Bearer {first}"}}
        assert [redactor.learn(request) for _ in range(3)] == [1, 0, 0]
        assert redactor.learn({"headers": {"authorization": f"Bearer {second}"}}) == 1
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

    def test_what_a_value_takes_is_remembered_within_a_bound(
        self, monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """What learning a sent value takes is worked out once and remembered, for at most
        `_JUDGED` values; past the bound a new value is still learned."""
        from redactkey.redact import _learn

        monkeypatch.setattr(_learn, "_JUDGED", 4)  # (each key learned compiles a scan)
        redactor = Redactor(RunSecrets({}))
        keys = [_key() for _ in range(7)]
        learned = sum(redactor.learn({"headers": {"x-api-key": key}}) for key in keys)
        assert learned == len(keys)
        assert 0 < len(redactor._learnable) <= 4
        assert all(key not in redactor.redact_text(f"echo {key}") for key in keys)

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
