"""boto3 bedrock-runtime through `use_botocore`, against a local fake Bedrock.

``converse``, ``converse_stream`` (binary AWS event-stream frames) and
``invoke_model`` are recorded with fake credentials built at run time, then replayed
in a fresh process with sockets refused and other credentials.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import boto3
import pytest
from botocore.config import Config
from botocore.eventstream import EventStreamBuffer
from botocore.exceptions import ClientError

from fakebedrock import FakeBedrock, encode_frame
from redactkey import FixtureDir, MissingFixtureError, UsageError, use_botocore
from redactkey.http._documents import frame_bytes, frame_document
from redactkey.http._eventstream import FrameDecoder, FrameError
from sdk_matrix import (
    Recording,
    SdkChecks,
    miss_report,
    prompt,
    record_then_replay,
    redactor_for,
    replay_main,
)


def _client(url: str, secret_key: str, **config: Any) -> Any:
    # Fake credentials of the right shapes, new for every client.
    return boto3.client(
        "bedrock-runtime", region_name="us-east-1", endpoint_url=url,
        aws_access_key_id="AKIA" + secrets.token_hex(8).upper(),
        aws_secret_access_key=secret_key,
        aws_session_token="IQoJb3JpZ2luX2VjE" + secrets.token_urlsafe(60),
        config=Config(retries={"max_attempts": 1, "mode": "standard"}, **config),
    )


def _messages(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"text": text}]}]


def _bedrock(mode: str, store: Any, url: str, key: str) -> Any:
    return use_botocore(_client(url, key), store, mode=mode, redactor=redactor_for(key))  # type: ignore[arg-type]


def scenarios(mode: str, store: Path, url: str, key: str) -> dict[str, Any]:
    client = _bedrock(mode, FixtureDir(store), url, key)
    out: dict[str, Any] = {}
    answer = client.converse(modelId="fake-model", messages=_messages(prompt(key, "converse")))
    out["converse"] = [answer["output"], answer["stopReason"], answer["usage"]]
    streamed = client.converse_stream(
        modelId="fake-model", messages=_messages(prompt(key, "converse stream"))
    )
    events = list(streamed["stream"])
    deltas = [e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e]
    out["converse_stream"] = ["".join(deltas), [next(iter(e)) for e in events]]
    body = json.dumps({"anthropic_version": "bedrock-2023-05-31", "max_tokens": 64,
                       "messages": [{"role": "user", "content": prompt(key, "invoke")}]})
    invoked = client.invoke_model(modelId="fake-model", body=body)
    out["invoke_model"] = [json.loads(invoked["body"].read()), invoked["contentType"]]
    return out


class _Attempts:
    """Counts the requests botocore sends (registered before the replay hook)."""

    attempts = 0

    def __call__(self, **_: Any) -> None:
        self.attempts += 1


def misses(store: Path, url: str, key: str) -> list[dict[str, Any]]:
    found = []
    for operation in ("converse", "converse_stream"):
        client = _bedrock("replay", FixtureDir(store), url, key)
        counter = _Attempts()
        client.meta.events.register_first("before-send.bedrock-runtime", counter)
        call = getattr(client, operation)
        found.append(miss_report(operation, counter, lambda call=call: call(
            modelId="fake-model", messages=_messages("never recorded")
        )))
    return found


@pytest.fixture(scope="module")
def bedrock() -> Any:
    with FakeBedrock() as fake:
        yield fake


@pytest.fixture(scope="module")
def recording(bedrock: FakeBedrock, tmp_path_factory: pytest.TempPathFactory) -> Recording:
    store = tmp_path_factory.mktemp("bedrock")
    return record_then_replay(__file__, scenarios, store, bedrock.url,
                              key_prefix="wJalrXUtnFEMI/K7MDENG/")


class TestBedrockRecordThenReplay(SdkChecks):
    """converse, converse_stream and invoke_model record and replay offline."""

    min_files = 3

    def test_signing_credentials_are_in_no_file(
        self, recording: Recording, bedrock: FakeBedrock
    ) -> None:
        """The access key id, the session token and the SigV4 headers reach no file."""
        seen = [s for s in bedrock.seen if "authorization" in s.headers]
        assert seen
        texts = [p.read_text(encoding="utf-8") for p in recording.store.rglob("*.json")]
        for request in seen:
            access_key = request.headers["authorization"].split("Credential=")[1].split("/")[0]
            token = request.headers["x-amz-security-token"]
            for text in texts:
                assert access_key not in text
                assert token[:20] not in text
                assert token[-20:] not in text
                assert request.headers["x-amz-date"] not in text
        for text in texts:
            lowered = text.lower()
            for name in ("authorization", "x-amz-date", "x-amz-security-token",
                         "amz-sdk-invocation-id", "x-amzn-requestid"):
                assert name not in lowered

    def test_stream_frames_are_stored_one_by_one(self, recording: Recording) -> None:
        """The event stream is kept frame by frame: headers in order, JSON payloads."""
        documents = [json.loads(p.read_text(encoding="utf-8"))
                     for p in recording.store.rglob("*.json")]
        (streamed,) = [d for d in documents if "chunks" in d]
        head, *frames = streamed["chunks"]
        assert head == {"status": 200,
                        "headers": {"content-type": "application/vnd.amazon.eventstream"}}
        assert [f["headers"][0] for f in frames[:2]] == [
            [":event-type", "messageStart"], [":event-type", "contentBlockDelta"]
        ]
        assert frames[1]["json"]["contentBlockIndex"] == 0
        assert len(frames) > 10


class TestKeys:
    """What decides the key of a botocore call."""

    def test_key_does_not_depend_on_signing_date_or_credentials(
        self, bedrock: FakeBedrock, tmp_path: Path
    ) -> None:
        """A request signed at another date with other credentials replays the recording."""
        key = "wJalrXUtnFEMI/K7MDENG/" + secrets.token_hex(12)
        recorded = _bedrock("record", FixtureDir(tmp_path), bedrock.url, key).converse(
            modelId="fake-model", messages=_messages("what time is it?"))
        client = _bedrock("replay", FixtureDir(tmp_path), bedrock.url, key + "x")

        def resign(request: Any, **_: Any) -> None:
            request.headers["X-Amz-Date"] = "20300101T000000Z"
            request.headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=AKIAX/x, Signature=0"

        client.meta.events.register_first("before-send.bedrock-runtime", resign)
        replayed = client.converse(modelId="fake-model", messages=_messages("what time is it?"))
        assert replayed["output"] == recorded["output"]

    def test_model_id_counts(self, bedrock: FakeBedrock, tmp_path: Path) -> None:
        """The model id is in the URL, so another model is a miss naming the nearest call."""
        key = "wJalrXUtnFEMI/K7MDENG/" + secrets.token_hex(12)
        _bedrock("record", FixtureDir(tmp_path), bedrock.url, key).converse(
            modelId="model-a", messages=_messages("hello"))
        client = _bedrock("replay", FixtureDir(tmp_path), bedrock.url, key)
        with pytest.raises(MissingFixtureError, match=r"(?s)/model/model-b/converse.*nearest"):
            client.converse(modelId="model-b", messages=_messages("hello"))


class TestFailures:
    """The environment's failures pass through; the model's own are recorded."""

    def test_throttling_is_not_recorded(self, bedrock: FakeBedrock, tmp_path: Path) -> None:
        """A 429 ThrottlingException reaches botocore as itself; the store stays empty."""
        client = _bedrock("record", FixtureDir(tmp_path), bedrock.url, "k" * 30)
        with pytest.raises(ClientError, match="ThrottlingException"):
            client.converse(modelId="throttled", messages=_messages("hi"))
        assert list(tmp_path.iterdir()) == []

    def test_validation_error_is_recorded_and_replayed(
        self, bedrock: FakeBedrock, tmp_path: Path
    ) -> None:
        """A 400 ValidationException replays with its error code, without a request."""
        codes = []
        for mode in ("record", "replay"):
            client = _bedrock(mode, FixtureDir(tmp_path), bedrock.url, "k" * 30)
            with pytest.raises(ClientError) as caught:
                client.converse(modelId="invalid", messages=_messages("hi"))
            codes.append(caught.value.response["Error"]["Code"])
        assert codes == ["ValidationException", "ValidationException"]
        assert len(list(tmp_path.iterdir())) == 1

    def test_not_a_botocore_client_is_refused(self, tmp_path: Path) -> None:
        """Anything but a botocore client is a UsageError saying what to pass."""
        with pytest.raises(UsageError, match="boto3 / botocore client"):
            use_botocore(object(), FixtureDir(tmp_path))

    def test_a_second_registration_replaces_the_first(
        self, bedrock: FakeBedrock, tmp_path: Path
    ) -> None:
        """use_botocore twice on one client leaves one hook: the later mode applies."""
        client = _client(bedrock.url, "k" * 30)
        use_botocore(client, FixtureDir(tmp_path), mode="record")
        use_botocore(client, FixtureDir(tmp_path), mode="replay")
        started = len(bedrock.seen)
        with pytest.raises(MissingFixtureError):
            client.converse(modelId="fake-model", messages=_messages("only replay"))
        assert len(bedrock.seen) == started


class TestEventStreamFrames:
    """The frame codec against botocore's own decoder."""

    HEADERS: ClassVar[list[list[Any]]] = [
        [":event-type", "chunk"], [":content-type", "application/json"],
        ["flag", {"type": "boolean", "value": True}], ["off", {"type": "boolean", "value": False}],
        ["b", {"type": "byte", "value": -3}], ["s", {"type": "short", "value": 300}],
        ["i", {"type": "integer", "value": 70000}], ["l", {"type": "long", "value": 2**40}],
        ["raw", {"type": "bytes", "value": "AAEC"}],
        ["t", {"type": "timestamp", "value": 1700000000000}],
        ["u", {"type": "uuid", "value": "12345678-1234-5678-1234-567812345678"}],
    ]

    def test_botocore_decodes_what_we_encode(self) -> None:
        """Every header type and the payload survive botocore's decoder and CRC checks."""
        frame = frame_bytes({"headers": self.HEADERS, "json": {"bytes": "eyJhIjoxfQ=="}})
        buffer = EventStreamBuffer()
        buffer.add_data(frame)
        (message,) = list(buffer)
        assert message.headers["b"] == -3
        assert message.headers["flag"] is True
        assert message.headers["l"] == 2**40
        assert message.headers["raw"] == b"\x00\x01\x02"
        assert json.loads(message.payload) == {"bytes": "eyJhIjoxfQ=="}

    def test_decode_then_encode_is_byte_exact(self) -> None:
        """A frame cut into 5-byte pieces decodes to a document that encodes to the same bytes."""
        frame = frame_bytes({"headers": self.HEADERS, "text": "plain text"})
        decoder = FrameDecoder()
        frames = [f for i in range(0, len(frame), 5) for f in decoder.feed(frame[i:i + 5])]
        decoder.finish()
        documents = [frame_document(headers, payload) for headers, payload in frames]
        assert documents == [{"headers": self.HEADERS, "text": "plain text"}]
        assert frame_bytes(documents[0]) == frame

    def test_fake_frames_round_trip(self) -> None:
        """A frame encoded independently (by the fake) comes back as the same bytes."""
        frame = encode_frame([(":event-type", "contentBlockDelta"),
                              (":content-type", "application/json")],
                             b'{"contentBlockIndex":0,"delta":{"text":"Hel"}}')
        ((headers, payload),) = FrameDecoder().feed(frame)
        document = frame_document(headers, payload)
        assert document["json"] == {"contentBlockIndex": 0, "delta": {"text": "Hel"}}
        assert frame_bytes(document) == frame

    def test_a_malformed_stored_frame_is_a_value_error(self) -> None:
        """Headers that are not [name, value] pairs, or an unknown type, are refused."""
        with pytest.raises(ValueError, match="pairs"):
            frame_bytes({"headers": {"a": "b"}, "text": "x"})
        with pytest.raises(ValueError, match="unknown type"):
            frame_bytes({"headers": [["a", {"type": "float", "value": 1}]], "text": "x"})

    @pytest.mark.parametrize("where", [2, 9, -2])
    def test_a_corrupt_frame_is_refused(self, where: int) -> None:
        """A flipped byte in the prelude or the message fails its CRC."""
        frame = bytearray(frame_bytes({"headers": [], "text": "x" * 20}))
        frame[where] ^= 0xFF
        with pytest.raises(FrameError, match=r"CRC|length"):
            FrameDecoder().feed(bytes(frame))

    def test_a_truncated_stream_is_refused(self) -> None:
        """A stream that ends inside a frame is an error, not a silent loss."""
        decoder = FrameDecoder()
        decoder.feed(frame_bytes({"headers": [], "text": "abc"})[:-3])
        with pytest.raises(FrameError, match="ended inside a frame"):
            decoder.finish()


def test_miss_is_fast_in_process(bedrock: FakeBedrock, tmp_path: Path) -> None:
    """A converse miss is MissingFixtureError from boto3 itself, no retry, no request."""
    client = _bedrock("replay", FixtureDir(tmp_path), bedrock.url, "k" * 30)
    started, seen = time.monotonic(), len(bedrock.seen)
    with pytest.raises(MissingFixtureError, match=r"POST http://127\.0\.0\.1"):
        client.converse(modelId="fake-model", messages=_messages("nothing"))
    assert time.monotonic() - started < 1.0
    assert len(bedrock.seen) == seen


if __name__ == "__main__":
    if sys.argv[1] == "replay":
        replay_main(scenarios, misses)
