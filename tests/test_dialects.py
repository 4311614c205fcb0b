"""Third-party recordings of every dialect, migrated and replayed: every answer equal to
its source by value.

Each recording (tests/data/dialects, and ../shared/realworld* where present) is migrated
on its own, then its calls are sent again, in order, through one replaying
`FixtureTransport`. Each answer is compared, status and body by value (placeholders
aside), with what the source holds as read by the small readers below: plain
json/yaml/base64/gzip, none of redactkey's readers.
"""

from __future__ import annotations

import ast
import base64
import gzip
import json
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import ROOT, SHARED
from redactkey import FixtureDir, Redactor
from redactkey.commands._migrate import migrate
from redactkey.http._documents import request_document
from redactkey.record._exchange import HttpFixtures
from redactkey.record._wire import Reply

DATA = ROOT / "tests" / "data" / "dialects"
# Refusals a migration may make: what redactkey never records, or cannot key or replay.
ALLOWED_REFUSALS = ("HTTP ", "binary request body", "binary response body", "a websocket",
                    "a boto placebo response", "no response recorded", "cannot be keyed",
                    "multipart body")
_HOP = frozenset({"content-length", "host", "transfer-encoding", "content-encoding",
                  "connection"})


@dataclass
class Call:
    """One recorded call as the source holds it."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    status: int | None
    answer: Any  # the body the client saw: JSON value, text, or None for none
    stream: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


# -- the independent readers -------------------------------------------------------------


class _Loose(yaml.SafeLoader):
    """YAML with Ruby's `!binary` and vcrpy/aiohttp's python tags read as data."""


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        return base64.b64decode(value) if suffix.endswith("binary") else value
    if isinstance(node, yaml.SequenceNode):
        items = loader.construct_sequence(node, deep=True)
        return str(items[0]) if "istr" in suffix else items
    return loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]


_Loose.add_multi_constructor("!", _tagged)
_Loose.add_multi_constructor("tag:yaml.org,2002:python/", _tagged)


def _value(data: bytes | str | None, encoding: str = "") -> Any:
    """Bytes or text as the client read them: decompressed, decoded, JSON parsed."""
    if data is None:
        return None
    if isinstance(data, bytes):
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        elif "deflate" in encoding:
            data = zlib.decompress(data, -zlib.MAX_WBITS if data[:1] != b"\x78" else 15)
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            return data  # binary: a body migrate refuses
    if data.lstrip()[:1] in ("{", "["):
        try:
            return json.loads(data)
        except ValueError:
            return data
    return data


def _first(headers: Any, name: str) -> str:
    for key, values in (headers or {}).items():
        if str(key).lower() == name:
            return str(values[0] if isinstance(values, list) else values)
    return ""


def _flat(headers: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, values in (headers or {}).items():
        if str(key).lower() not in _HOP:
            out[str(key)] = str(values[0] if isinstance(values, list) and values else values)
    return out


def _vcr_body(raw: Any, encoding: str) -> Any:
    if isinstance(raw, dict):
        if raw.get("base64_string"):
            return _value(base64.b64decode(raw["base64_string"]), encoding)
        if "string" in raw:
            return _value(raw["string"], encoding)
        if "data" in raw:
            return raw["data"]
        return raw
    return _value(raw, encoding)


def _wire(value: Any) -> bytes | None:
    if value is None or value == "":
        return None
    if isinstance(value, bytes):
        return value
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()


def _vcr_calls(items: list[Any]) -> list[Call]:
    calls = []
    for item in items:
        request, response = item.get("request") or {}, item.get("response")
        if not isinstance(response, dict):
            continue
        status = response.get("status")
        status = status.get("code") if isinstance(status, dict) else status
        status = response.get("code", response.get("status_code")) if not isinstance(
            status, int) else status
        answer = response["parsed_body"] if "parsed_body" in response else _vcr_body(
            response.get("body"), _first(response.get("headers"), "content-encoding"))
        body = request["parsed_body"] if "parsed_body" in request else _vcr_body(
            request.get("body"), "")
        calls.append(Call(str(request.get("method")).upper(),
                          str(request.get("uri") or request.get("url")),
                          _flat(request.get("headers")), _wire(body), status, answer,
                          "event-stream" in _first(response.get("headers"), "content-type")))
    return calls


def _har_calls(entries: list[Any]) -> list[Call]:
    calls = []
    for entry in entries:
        request, response = entry["request"], entry["response"]
        post = request.get("postData") or {}
        body = post.get("text", post.get("textJSON"))
        headers = {h["name"]: h["value"] for h in request.get("headers", [])}
        rheaders = {h["name"]: h["value"] for h in response.get("headers", [])}
        content = response.get("content") or {}
        text = content.get("text")
        if text is not None and content.get("encoding") == "base64":
            pieces = json.loads(text) if text.startswith("[") else [text]
            text = b"".join(base64.b64decode(p) for p in pieces)
        calls.append(Call(request["method"], request["url"], _flat(headers), _wire(body),
                          response.get("status"), _value(text, _first(rheaders,
                                                                     "content-encoding")),
                          "event-stream" in _first(rheaders, "content-type")))
    return calls


def _nock_calls(items: list[Any]) -> list[Call]:
    calls = []
    for item in items:
        raw = item.get("rawHeaders") or []
        headers = dict(zip(raw[::2], raw[1::2], strict=True)) if isinstance(raw, list) \
            else raw
        answer = item.get("response")
        if isinstance(answer, list) and all(isinstance(a, str) for a in answer):
            answer = _value(bytes.fromhex("".join(answer)), _first(headers, "content-encoding"))
        elif isinstance(answer, str):
            answer = _value(answer)
        calls.append(Call(item["method"].upper(), item["scope"] + item["path"],
                          _flat(item.get("reqheaders")), _wire(item.get("body")),
                          item.get("status"), answer,
                          "event-stream" in _first(headers, "content-type")))
    return calls


def _azure_calls(entries: list[Any]) -> list[Call]:
    def body(value: Any, headers: dict[str, Any]) -> Any:
        kind = _first(headers, "content-type").lower()
        if value is None:
            return None
        if "json" in kind or kind.startswith("text/"):
            return _value("".join(value)) if isinstance(value, list) else value
        return _value(base64.b64decode(value)) if isinstance(value, str) else ""

    return [Call(e["RequestMethod"], e["RequestUri"], _flat(e["RequestHeaders"]),
                 _wire(body(e.get("RequestBody"), e["RequestHeaders"])), e["StatusCode"],
                 body(e.get("ResponseBody"), e["ResponseHeaders"])) for e in entries]


def _httprr_calls(data: bytes) -> list[Call]:
    calls = []
    at = data.index(b"\n") + 1
    while at < len(data):
        end = data.index(b"\n", at)
        n1, n2 = (int(n) for n in data[at:end].split())
        request, response = data[end + 1:end + 1 + n1], data[end + 1 + n1:end + 1 + n1 + n2]
        head, _, body = request.partition(b"\r\n\r\n")
        method, url, _ = head.split(b"\r\n")[0].decode().split(" ", 2)
        fields = dict(line.decode().split(": ", 1) for line in head.split(b"\r\n")[1:])
        rhead, _, rbody = response.partition(b"\r\n\r\n")
        status = int(rhead.split(b" ")[1])
        calls.append(Call(method, url, _flat(fields), body or None, status, _value(rbody)))
        at = end + 1 + n1 + n2
    return calls


def _pygithub_calls(text: str) -> list[Call]:
    rows, calls, at = text.split("\n"), [], 0
    while at + 9 < len(rows) and rows[at]:
        protocol, method, host, port, path = rows[at:at + 5]
        url = f"{protocol}://{host}{'' if port == 'None' else ':' + port}{path}"
        body = None if rows[at + 6] == "None" else rows[at + 6].encode()
        calls.append(Call(method, url, _flat(ast.literal_eval(rows[at + 5])), body,
                          int(rows[at + 7]), _value(rows[at + 9])))
        at += 11
    return calls


def source_calls(path: Path) -> list[Call]:
    """The calls of a recording, read without redactkey."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data.startswith(b"httprr trace v1\n"):
        return _httprr_calls(data)
    text = data.decode("utf-8-sig")
    if re.match(r"https?\n[A-Z]+\n", text):
        return _pygithub_calls(text)
    document = json.loads(text) if text.lstrip()[:1] in "{[" else yaml.load(text, _Loose)
    if isinstance(document, list):
        return _nock_calls(document)
    if "log" in document:
        return _har_calls(document["log"]["entries"])
    if "Entries" in document:
        return _azure_calls(document["Entries"])
    if "status_code" in document:  # placebo: no request to send again
        return []
    items = document.get("http_interactions") or document.get("interactions")
    if items is not None:
        return _vcr_calls(items)
    if "request" in document and "response" in document:
        return _vcr_calls([document])
    return []


# -- comparing ---------------------------------------------------------------------------

_PLACEHOLDER = re.compile(re.escape(r"\[REDACTED") + r"(?::[^\]]*)?" + re.escape(r"\]"))


def _events(text: str) -> list[Any]:
    events = []
    for block in re.split(r"\r?\n\r?\n", text):
        data = [line[5:].lstrip(" ") for line in block.splitlines() if line.startswith("data:")]
        if data:
            events.append(_value("\n".join(data)))
    return events


def _lines(text: str) -> list[Any] | None:
    """The JSON values of newline-delimited JSON, or None for other text."""
    try:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        return None


def same(replayed: Any, source: Any) -> bool:
    """Equal by value, a placeholder in the replayed answer standing for what it took out."""
    if replayed == source or (replayed in ("", None) and source in ("", None)):
        return True
    if isinstance(replayed, str) and isinstance(source, str) and "\n" in source.strip():
        lines = _lines(replayed), _lines(source)
        if lines[0] is not None and lines[1] is not None:
            return same(lines[0], lines[1])
    if isinstance(replayed, dict) and isinstance(source, dict):
        return replayed.keys() == source.keys() and all(
            same(replayed[k], source[k]) for k in replayed)
    if isinstance(replayed, list) and isinstance(source, list):
        return len(replayed) == len(source) and all(map(same, replayed, source))
    if isinstance(replayed, str) and isinstance(source, str) and "[REDACTED" in replayed:
        pattern = _PLACEHOLDER.sub(".*?", re.escape(replayed))
        return re.fullmatch(pattern, source, re.DOTALL) is not None
    if isinstance(replayed, str) and isinstance(source, (dict, list)):
        return same(_value(replayed), source) if replayed.lstrip()[:1] in "{[" else False
    return False


# -- the recordings ----------------------------------------------------------------------


def _recordings() -> list[Path]:
    found = sorted(p for p in DATA.rglob("*") if p.is_file()
                   and not p.name.startswith("UPSTREAM_") and p.suffix != ".tsv")
    for name in ("realworld", "realworld2"):
        folder = SHARED / name
        if folder.is_dir():
            found += sorted(p for p in folder.rglob("*") if p.is_file()
                            and not p.name.startswith(("UPSTREAM_", "LICENSE", "TRAPS"))
                            and p.suffix not in (".tsv", ".md", ".txt"))
    return found


RECORDINGS = _recordings()


def _label(path: Path) -> str:
    return str(path.relative_to(SHARED if SHARED in path.parents else DATA))


def _never() -> Any:
    raise AssertionError("a replayed call never goes live")


@pytest.mark.parametrize("path", RECORDINGS, ids=[_label(p) for p in RECORDINGS])
def test_migrated_answers_equal_their_source(path: Path, tmp_path: Path) -> None:
    """Migrated, then replayed in the recorded order: every call gets the answer it got
    when it was recorded (status and body by value), refusals only for what redactkey
    never records."""
    redactor = Redactor()
    plan = migrate([str(path)], tmp_path / "out", redactor, write=True)
    for refused in plan.refused:
        assert refused.reason.startswith(ALLOWED_REFUSALS), refused
    refused_at = {item.source.rsplit(" ", 1)[1] for item in plan.refused}
    calls = source_calls(path)
    if not plan.planned:
        assert not calls or len(refused_at) == plan.interactions, plan
        return
    assert plan.interactions == len(calls) or calls == [], (plan.interactions, len(calls))
    pointers = [f"{p.source.rsplit(' ', 1)[1]}" for p in plan.planned]
    pointers += [d[0].rsplit(" ", 1)[1] for d in plan.duplicates]
    # the layer every client sends through, given each request as recorded (a client
    # library would re-encode a URL that holds `<placeholders>`)
    fixtures = HttpFixtures(FixtureDir(tmp_path / "out"), mode="replay", redactor=redactor)
    compared = 0
    for index, call in enumerate(calls):
        if any(p.endswith(f"/{index}") for p in refused_at):
            continue
        document = request_document(call.method, call.url, list(call.headers.items()),
                                    call.body or b"")
        reply = fixtures.exchange(document, _never)
        if isinstance(reply, Reply):
            body = reply.body
        else:
            body = b"".join(reply.pieces)
            reply.close()
        assert reply.status == call.status, (index, call.url)
        if call.stream:
            assert same(_events(body.decode()), _events(str(call.answer))), index
        else:
            assert same(_value(body), call.answer), (index, call.url)
        compared += 1
    assert compared == len(pointers)


def test_every_dialect_has_an_example() -> None:
    """Each dialect with no copy in ../shared ships real examples, listed in the manifest
    with their licence."""
    rows = [line.split("\t") for line in (DATA / "MANIFEST.tsv").read_text().splitlines()[1:]]
    assert {row[0] for row in rows} >= {"har", "betamax", "vcrpy", "azure-test-proxy",
                                        "httprr", "placebo", "pygithub-replay", "go-vcr"}
    for row in rows:
        assert (DATA / row[1]).is_file(), row[1]
        assert len(row[4]) == 40, row
        assert row[5], row
        assert list((DATA / row[0]).glob("UPSTREAM_LICENSE*")), row[0]


def test_betamax_oauth_token_is_redacted(tmp_path: Path) -> None:
    """GitHub's `POST /authorizations` answers the new OAuth token under `token`: the
    migrated fixture must not hold it."""
    source = DATA / "betamax" / "github3py-GitHub_authorize.json"
    (call,) = source_calls(source)
    token = call.answer["token"]
    assert re.fullmatch(r"[0-9a-f]{40}", token)
    plan = migrate([str(source)], tmp_path, Redactor(), write=True)
    (written,) = plan.planned
    assert token not in written.target.read_text(encoding="utf-8")


def test_json_sent_without_content_type_replays_through_the_openai_sdk(
        tmp_path: Path) -> None:
    """A recorder that kept no request headers (langsmith's cassettes hold `headers: {}`)
    recorded an embeddings call; migrated, it replays through the openai SDK, which sends
    the same JSON with `Content-Type: application/json`: the body is keyed by meaning."""
    import httpx2
    import openai

    from redactkey import FixtureTransport

    vector = [0.25, -0.5, 0.125]
    answer = {"object": "list", "model": "text-embedding-3-small",
              "data": [{"object": "embedding", "index": 0, "embedding": vector}],
              "usage": {"prompt_tokens": 2, "total_tokens": 2}}
    sent: list[bytes] = []

    def provider(request: httpx2.Request) -> httpx2.Response:
        sent.append(request.read())
        return httpx2.Response(200, json=answer)

    def embed(transport: Any) -> Any:
        with openai.OpenAI(api_key="sk-" + "replay-" + "x" * 20, max_retries=0,
                           http_client=httpx2.Client(transport=transport)) as client:
            return client.embeddings.create(model="text-embedding-3-small", input="hello",
                                            encoding_format="float")

    embed(httpx2.MockTransport(provider))  # what the SDK sends, byte for byte
    cassette = {"version": 1, "interactions": [{
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/embeddings",
                    "headers": {}, "body": sent[0].decode()},
        "response": {"status": {"code": 200, "message": "OK"},
                     "headers": {"Content-Type": ["application/json"]},
                     "body": {"string": json.dumps(answer, indent=1)}}}]}
    (tmp_path / "embed.yaml").write_text(yaml.safe_dump(cassette), encoding="utf-8")
    plan = migrate([str(tmp_path / "embed.yaml")], tmp_path / "fixtures", Redactor(),
                   write=True)
    assert len(plan.planned) == 1
    replayed = embed(FixtureTransport(FixtureDir(tmp_path / "fixtures"), mode="replay",
                                      redactor=Redactor()))
    assert replayed.data[0].embedding == vector
