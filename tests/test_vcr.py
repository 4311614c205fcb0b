"""vcrpy interop: the redactkey matcher and record hooks, with real vcrpy and the openai SDK."""

from __future__ import annotations

import gzip
import json
import secrets
from pathlib import Path

import httpx2
import openai
import pytest
import vcr
from vcr.request import Request

from fakeprovider import FakeProvider
from redactkey import UsageError, use_redactkey
from redactkey.clients._vcr import VcrHooks
from sdk_scenarios import redactor_for


def _key() -> str:
    return "sk-proj-" + secrets.token_hex(4) + "A1b2" * 12


def _request(uri: str, body: bytes | None, **headers: str) -> Request:
    return Request("POST", uri, body, {"content-type": "application/json", **headers})


class TestMatcher:
    """The redactkey key as a vcrpy matcher."""

    def test_credentials_and_client_headers_do_not_count(self) -> None:
        """Requests differing only in API key, SDK headers and a key query parameter match."""
        hooks = VcrHooks()
        first = _request("https://api.test/v1/x?key=" + "a" * 24, b'{"b":1,"a":2}',
                         authorization="Bearer " + _key(), **{"x-stainless-retry-count": "0"})
        second = _request("https://api.test/v1/x?key=" + "b" * 24, b'{"a": 2, "b": 1}',
                          authorization="Bearer " + _key(), **{"x-stainless-retry-count": "2"})
        assert hooks.match(first, second) is None
        assert hooks.key(first) == hooks.key(second)

    def test_a_different_body_does_not_match(self) -> None:
        """A different JSON body fails the matcher with an AssertionError naming the field."""
        hooks = VcrHooks()
        with pytest.raises(AssertionError, match="body"):
            hooks.match(_request("https://api.test/v1/x", b'{"a":1}'),
                        _request("https://api.test/v1/x", b'{"a":2}'))


class TestHooks:
    """before_record_request and before_record_response on plain vcrpy data."""

    def test_request_is_redacted(self) -> None:
        """URL credentials, credential headers and a known secret in the body are removed."""
        token = "tooltok-" + secrets.token_hex(10)
        api_key = _key()
        request = _request("https://api.test/v1/x?api_key=" + api_key,
                           json.dumps({"prompt": f"use {token}"}).encode(),
                           authorization="Bearer " + api_key)
        redacted = VcrHooks(redactor_for(token)).before_record_request(request)
        text = f"{redacted.uri} {dict(redacted.headers)} {redacted.body!r}"
        assert api_key not in text
        assert token not in text
        assert "[REDACTED]" in text

    def test_response_keeps_allowlisted_headers_and_redacts_split_events(self) -> None:
        """Identifying headers go; a secret split across SSE events is redacted."""
        token = "tooltok-" + secrets.token_hex(10)
        events = "".join(
            f'data: {json.dumps({"delta": token[i:i + 5]})}\n\n' for i in range(0, len(token), 5)
        )
        response = {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["text/event-stream"], "Set-Cookie": ["a=b"],
                        "openai-organization": ["org-x"], "x-request-id": ["req_1"]},
            "body": {"string": events.encode()},
        }
        out = VcrHooks(redactor_for(token)).before_record_response(response)
        assert set(out["headers"]) == {"Content-Type"}
        body = out["body"]["string"].decode()
        joined = "".join(json.loads(line[6:])["delta"] for line in body.splitlines() if line)
        assert token not in joined
        assert "[REDACTED]" in joined

    def test_gzip_body_is_decoded_before_redaction(self) -> None:
        """A gzip body is decoded, redacted and stored without its content-encoding."""
        token = "tooltok-" + secrets.token_hex(10)
        response = {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"], "content-encoding": ["gzip"]},
            "body": {"string": gzip.compress(json.dumps({"echo": token}).encode())},
        }
        out = VcrHooks(redactor_for(token)).before_record_response(response)
        assert json.loads(out["body"]["string"]) == {"echo": "[REDACTED]"}
        assert "content-encoding" not in out["headers"]

    def test_unknown_encoding_is_refused(self) -> None:
        """A body the hook cannot decode is an error, never stored unredacted."""
        response = {"status": {"code": 200, "message": "OK"},
                    "headers": {"content-encoding": ["zstd"]}, "body": {"string": b"\x28\xb5"}}
        with pytest.raises(UsageError, match="zstd"):
            VcrHooks().before_record_response(response)


class TestWithVcrpy:
    """Two-line setup with real vcrpy recording and replaying the openai SDK."""

    def test_record_then_replay(self, tmp_path: Path) -> None:
        """The cassette holds no secret, and replays offline with another API key."""
        token = "tooltok-" + secrets.token_hex(10)
        cassette = tmp_path / "chat.yaml"
        messages = [{"role": "user", "content": f"ECHO:{token}"}]
        with FakeProvider() as fake:
            url = fake.url
            leaks = [*fake.secrets_sent(), token]
            recorder = use_redactkey(vcr.VCR(record_mode="once"), redactor_for(token))
            with recorder.use_cassette(str(cassette)), openai.OpenAI(
                api_key=_key(), base_url=f"{url}/v1", http_client=httpx2.Client()
            ) as client:
                live = client.chat.completions.create(model="m", messages=messages)
                streamed = list(client.chat.completions.create(
                    model="m", messages=messages, stream=True))
            sent = fake.attempts()
        text = cassette.read_text(encoding="utf-8")
        for leak in leaks:
            assert leak not in text
        assert live.choices[0].message.content == f"Your token is {token} as requested."

        other = "tooltok-" + secrets.token_hex(10)
        player = use_redactkey(vcr.VCR(record_mode="none"), redactor_for(other))
        with player.use_cassette(str(cassette)), openai.OpenAI(
            api_key=_key(), base_url=f"{url}/v1", http_client=httpx2.Client()
        ) as client:
            messages = [{"role": "user", "content": f"ECHO:{other}"}]
            replayed = client.chat.completions.create(model="m", messages=messages)
            restreamed = list(client.chat.completions.create(
                model="m", messages=messages, stream=True))
        assert sent == 2
        assert replayed.choices[0].message.content == "Your token is [REDACTED] as requested."
        assert len(restreamed) == len(streamed)
