"""Request keys: the golden table, determinism, specs, HTTP projection, volatile values."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from typing import Any

import pydantic
import pytest

from _golden_requests import GOLDEN_KEYS, GOLDEN_REQUESTS
from conftest import ROOT
from redactkey import (
    CanonicalizationError,
    DropKeys,
    KeySpec,
    Redactor,
    ReplaceVolatile,
    UsageError,
    canonicalize,
    find_volatile,
    key_material,
    request_key,
)
from redactkey.keys._keys import (
    HTTP_DROPPED_QUERY,
    KEY_SCHEME_VERSION,
    MODEL_FIELDS,
    MODEL_NEVER,
    VolatileValue,
    default_spec,
    key_from_material,
    material_and_key,
)

CHAT = {
    "model": "gpt-4o-mini",
    "temperature": 0.2,
    "messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name the capital of France."},
    ],
}


def _reversed(value: Any) -> Any:
    """The same JSON data with every object's members in reverse insertion order."""
    if isinstance(value, dict):
        return {k: _reversed(v) for k, v in reversed(list(value.items()))}
    if isinstance(value, list):
        return [_reversed(v) for v in value]
    return value


class _UpperRedactor:
    """A stand-in redactor: replaces every string value named `api_key` or `secret`."""

    def __init__(self) -> None:
        self.calls = 0

    def redact(self, value: Any) -> Any:
        self.calls += 1
        if isinstance(value, dict):
            return {
                k: "[REDACTED]" if k in {"api_key", "secret"} else self.redact(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.redact(v) for v in value]
        return value


class TestGoldenKeys:
    def test_table_covers_every_request(self) -> None:
        """The pinned table and the request list name the same ~20 requests."""
        assert [name for name, _, _ in GOLDEN_REQUESTS] == list(GOLDEN_KEYS)
        assert len(GOLDEN_KEYS) >= 20

    @pytest.mark.parametrize(
        ("name", "kind", "request_"), GOLDEN_REQUESTS, ids=[n for n, _, _ in GOLDEN_REQUESTS]
    )
    def test_key_is_pinned(self, name: str, kind: str, request_: Any) -> None:
        """Each fixed request keeps its recorded key."""
        assert request_key(kind, request_) == GOLDEN_KEYS[name]

    @pytest.mark.parametrize(
        ("name", "kind", "request_"), GOLDEN_REQUESTS, ids=[n for n, _, _ in GOLDEN_REQUESTS]
    )
    def test_dict_order_does_not_matter(self, name: str, kind: str, request_: Any) -> None:
        """Reversing every object's member order keeps the key."""
        assert request_key(kind, _reversed(request_)) == GOLDEN_KEYS[name]

    def test_scheme_version_is_pinned(self) -> None:
        """The golden table belongs to key scheme version 2."""
        assert KEY_SCHEME_VERSION == 2

    def test_same_keys_under_every_hash_seed(self) -> None:
        """Subprocesses with different PYTHONHASHSEED values compute the pinned keys."""
        script = (
            "import json\n"
            "from _golden_requests import GOLDEN_REQUESTS\n"
            "from redactkey import request_key\n"
            "print(json.dumps({n: request_key(k, r) for n, k, r in GOLDEN_REQUESTS}))\n"
        )
        for seed in ("0", "1", "4242", "random"):
            env = {**os.environ, "PYTHONHASHSEED": seed,
                   "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
            result = subprocess.run(
                [sys.executable, "-c", script], env=env, capture_output=True, text=True,
                check=True,
            )
            assert json.loads(result.stdout) == GOLDEN_KEYS, seed


class TestDigest:
    @pytest.mark.parametrize("size", [0, 1, 400, 1023, 1024, 1025, 4096, 70_000])
    def test_sha256_gives_hashlib_s_digest(self, size: int) -> None:
        """The digest of short and long data is hashlib's SHA-256."""
        import hashlib

        from redactkey.keys._keys import sha256_hex

        data = os.urandom(size)
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()

    @pytest.mark.parametrize("words", [10, 500])
    def test_a_key_is_the_sha256_of_its_material(self, words: int) -> None:
        """A short request's key and a long one's are hashlib's
        SHA-256 of the canonical key material."""
        import hashlib

        request_ = {"model": "m", "messages": [{"role": "user", "content": "word " * words}]}
        data = canonicalize(key_material("chat", request_))
        assert request_key("chat", request_) == hashlib.sha256(data).hexdigest()


class TestRequestKey:
    def test_key_is_64_lowercase_hex(self) -> None:
        """A key is a SHA-256 hex digest."""
        key = request_key("chat", CHAT)
        assert len(key) == 64
        assert set(key) <= set("0123456789abcdef")

    def test_key_is_hash_of_material(self) -> None:
        """`request_key` is `key_from_material(key_material(...))`."""
        assert request_key("chat", CHAT) == key_from_material(key_material("chat", CHAT))

    @pytest.mark.parametrize(
        ("kind", "req"),
        [
            ("chat", {**CHAT, "stop": ("a", "b"), "top_p": 1.0}),
            ("chat", {**CHAT, "messages": [{"role": "user", "content": "rain 🌧️"}]}),
            ("tool:search", {"q": "x", "filters": ("a",), "n": 2.0}),
            ("http", {"method": "post", "url": "https://api.example.com/v1/x?b=2&a=1",
                      "headers": {"authorization": "Bearer abc"}, "json": {"t": (1, 2.0)}}),
        ],
        ids=["tuple", "emoji", "tool", "http"],
    )
    def test_the_one_pass_path_equals_the_checked_one(self, kind: str, req: Any) -> None:
        """With a redactor (the record/replay path) or without, material and key agree, and
        the material is plain JSON (tuples become lists)."""
        redactor = Redactor(detectors=False)
        material, key = material_and_key(kind, req, redactor=redactor)
        assert material == key_material(kind, req)
        assert json.loads(json.dumps(material)) == material
        assert key == request_key(kind, req) == key_from_material(material)

    def test_kind_is_part_of_the_key(self) -> None:
        """The same request under two kinds has two keys."""
        assert request_key("chat", CHAT) != request_key("text", CHAT)

    def test_counted_field_changes_key(self) -> None:
        """Changing the temperature changes the key."""
        assert request_key("chat", CHAT) != request_key("chat", {**CHAT, "temperature": 0.3})

    @pytest.mark.parametrize("field", sorted(MODEL_NEVER))
    def test_never_fields_do_not_count(self, field: str) -> None:
        """Timeouts, users, metadata, headers and friends never change a model key."""
        assert request_key("chat", {**CHAT, field: {"any": "value"}}) == request_key("chat", CHAT)

    def test_unknown_transport_options_do_not_count(self) -> None:
        """A field the spec does not list, even a non-JSON object, is ignored."""
        request = {**CHAT, "http_client": object(), "timeout": 3.5}
        assert request_key("chat", request) == request_key("chat", CHAT)

    def test_none_and_sdk_sentinels_mean_absent(self) -> None:
        """`None` and SDK "not given" sentinels key like a missing field."""
        class NotGiven:
            pass

        assert request_key("chat", {**CHAT, "seed": None, "top_p": NotGiven()}) == \
            request_key("chat", CHAT)

    def test_pydantic_request_keys_like_its_dump(self) -> None:
        """A pydantic request model keys like its JSON dump."""
        class Message(pydantic.BaseModel):
            role: str
            content: str

        class Request(pydantic.BaseModel):
            model: str
            temperature: float
            messages: list[Message]

        assert request_key("chat", Request.model_validate(CHAT)) == request_key("chat", CHAT)

    def test_redactor_runs_before_projection(self) -> None:
        """With a redactor, secrets differ but keys agree; the redactor runs once."""
        redactor = _UpperRedactor()
        one = {**CHAT, "tools": [{"name": "t", "secret": "s3cr3t-" + "a" * 8}]}
        two = {**CHAT, "tools": [{"name": "t", "secret": "s3cr3t-" + "b" * 8}]}
        assert request_key("chat", one) != request_key("chat", two)
        assert request_key("chat", one, redactor=redactor) == \
            request_key("chat", two, redactor=redactor)
        redactor.calls = 0
        key_material("chat", one, redactor=redactor)
        assert redactor.calls >= 1
        material = key_material("chat", one, redactor=redactor)
        assert material["request"]["tools"] == [{"name": "t", "secret": "[REDACTED]"}]

    def test_material_is_versioned_document(self) -> None:
        """Key material holds the scheme version, the kind and the projection."""
        material = key_material("chat", {**CHAT, "user": "u"})
        assert material == {"kind": "chat", "request": CHAT, "scheme": KEY_SCHEME_VERSION}
        assert canonicalize(material).startswith(b'{"kind":"chat","request":{')

    @pytest.mark.parametrize("kind", ["", None, 3])
    def test_bad_kind_is_usage_error(self, kind: Any) -> None:
        """A kind must be a non-empty string."""
        with pytest.raises(UsageError, match="kind"):
            request_key(kind, CHAT)

    @pytest.mark.parametrize(
        ("request_", "pointer"),
        [
            ({"model": "m", "temperature": float("nan")}, "/temperature"),
            ({"messages": [{"content": b"raw"}]}, "/messages/0/content"),
            ({"seed": 2**60}, "/seed"),
            ({"messages": [{"content": "\ud800"}]}, "/messages/0/content"),
        ],
    )
    def test_unkeyable_value_names_pointer(self, request_: Any, pointer: str) -> None:
        """A counted value JSON cannot hold is a CanonicalizationError at its pointer."""
        with pytest.raises(CanonicalizationError) as info:
            request_key("chat", request_)
        assert info.value.pointer == pointer


class TestKeySpec:
    def test_tool_calls_are_keyed_on_every_argument(self) -> None:
        """Two calls of one tool with different arguments never share a key by default."""
        first = request_key("tool:search", {"query": "paris", "limit": 3})
        second = request_key("tool:search", {"query": "rome", "limit": 3})
        assert first != second
        assert first == request_key("tool:search", {"limit": 3, "query": "paris"})

    def test_is_frozen(self) -> None:
        """A spec cannot be changed in place."""
        spec = KeySpec.model()
        with pytest.raises(dataclasses.FrozenInstanceError):
            spec.fields = frozenset()  # type: ignore[misc]

    def test_settings_are_stored_immutable_and_lower_case(self) -> None:
        """Lists and sets become frozensets/tuples; header and query names lower-case."""
        spec = KeySpec(fields=["model"], headers=["X-Tenant"], drop_query=["X-Sig-*"],
                       shape="http", normalizers=[DropKeys("a")])
        assert spec.fields == frozenset({"model"})
        assert spec.headers == frozenset({"x-tenant"})
        assert spec.drop_query == ("x-sig-*",)
        assert isinstance(spec.normalizers, tuple)
        hash(spec)

    @pytest.mark.parametrize(
        ("changes", "match"),
        [({"fields": "model"}, "not the string 'model'"),
         ({"shape": "grpc"}, "'model' or 'http'"),
         ({"normalizers": ("nope",)}, "not a callable")],
    )
    def test_bad_settings_are_usage_errors(self, changes: dict[str, Any], match: str) -> None:
        """A misspelt spec fails when it is built, not silently at keying time."""
        with pytest.raises(UsageError, match=match):
            dataclasses.replace(KeySpec.model(), **changes)

    def test_default_spec_by_kind(self) -> None:
        """Kind "http" gets the HTTP spec; every other kind the model spec."""
        assert default_spec("http") == KeySpec.http()
        assert default_spec("chat") == KeySpec.model() == default_spec("my-kind")

    def test_model_fields_and_never_are_disjoint(self) -> None:
        """No field both counts and never counts."""
        assert not MODEL_FIELDS & MODEL_NEVER

    def test_widen_makes_field_count(self) -> None:
        """Widening by `user` makes the user field change the key."""
        spec = KeySpec.model().widen("user")
        assert spec.counts("user")
        assert request_key("chat", {**CHAT, "user": "a"}, spec=spec) != \
            request_key("chat", {**CHAT, "user": "b"}, spec=spec)

    def test_narrow_removes_field(self) -> None:
        """Narrowing by `temperature` makes temperature irrelevant."""
        spec = KeySpec.model().narrow("temperature")
        assert request_key("chat", CHAT, spec=spec) == \
            request_key("chat", {**CHAT, "temperature": 0.9}, spec=spec)

    def test_widen_all_still_ignores_never(self) -> None:
        """Every field counts after `widen_all`, except the never list."""
        spec = KeySpec.model().widen_all()
        assert request_key("chat", {**CHAT, "custom": 1}, spec=spec) != \
            request_key("chat", CHAT, spec=spec)
        assert request_key("chat", {**CHAT, "timeout": 9}, spec=spec) == \
            request_key("chat", CHAT, spec=spec)

    def test_whole_counts_everything(self) -> None:
        """`KeySpec.whole()` keys tool arguments on all their fields."""
        spec = KeySpec.whole()
        assert request_key("search", {"q": "a", "timeout": 1}, spec=spec) != \
            request_key("search", {"q": "a", "timeout": 2}, spec=spec)


HTTP_BASE = {"method": "GET", "url": "https://api.example.com/v1/items"}


class TestHttpProjection:
    def _request(self, **changes: Any) -> dict[str, Any]:
        return {**HTTP_BASE, **changes}

    def test_projection_shape(self) -> None:
        """Method, scheme + host + path, sorted query and body form the projection."""
        material = key_material("http", self._request(
            method="post", url="HTTPS://user:pw@API.Example.com:443/v1/items?b=2&a=1#top",
            json={"x": 1}))
        assert material["request"] == {
            "method": "POST",
            "url": "https://api.example.com/v1/items",
            "query": [["a", "1"], ["b", "2"]],
            "body": {"json": {"x": 1}},
        }

    def test_text_bodies_are_keyed_by_meaning(self) -> None:
        """A text body that is a JSON document keys as that JSON, whatever the content
        type said; a form keys as its pairs; other text by its bytes."""
        sent_as_json = self._request(method="POST", headers={"content-type": "application/json"},
                                     json={"model": "m", "input": ["a b"]})
        sent_as_text = self._request(method="POST", headers={},
                                     text='{ "input": ["a b"],\n  "model": "m" }')
        assert request_key("http", sent_as_text) == request_key("http", sent_as_json)
        form = key_material("http", self._request(method="POST", text="b=x+y&a=%21&b=2"))
        assert form["request"]["body"] == {"form": [["a", "!"], ["b", "x y"], ["b", "2"]]}
        assert request_key("http", {**HTTP_BASE, "body": form["request"]["body"],
                                    "method": "POST"}) == key_from_material(form)
        for text in ("plain words", "a=1&&b=2", "{not json", "a b=1"):
            body = key_material("http", self._request(method="POST", text=text))
            assert set(body["request"]["body"]) == {"sha256"}, text

    def test_text_json_keys_alike_on_every_path(self, tmp_path: Any) -> None:
        """A JSON text body with floats keys the same through `request_key` and through
        the record/replay layers' redact-then-key path."""
        from redactkey import FixtureDir, ModelFixtures, Redactor

        request = self._request(method="POST", headers={},
                                text='{"temperature": 0.0, "top_p": 1.5e-3}')
        layer = ModelFixtures(FixtureDir(tmp_path), mode="replay", redactor=Redactor())
        assert layer.key("http", request).key == request_key("http", request,
                                                                redactor=Redactor())

    def test_ipv6_host_keeps_brackets(self) -> None:
        """An IPv6 literal stays bracketed so the port cannot run into it."""
        material = key_material("http", self._request(url="http://[::1]:8080/x"))
        assert material["request"]["url"] == "http://[::1]:8080/x"

    def test_non_default_port_is_kept(self) -> None:
        """A non-default port is part of the URL that counts."""
        material = key_material("http", self._request(url="http://localhost:8080"))
        assert material["request"]["url"] == "http://localhost:8080/"

    @pytest.mark.parametrize(
        "param", ["api_key", "API-KEY", "Client-Secret", "KEY", "token", "access_token",
                  "signature", "sig",
                  "X-Amz-Signature", "x-amz-date", "X-Goog-Credential", "timestamp",
                  "ts", "nonce", "_", "cachebuster", "request_id"],
    )
    def test_credential_and_volatile_query_params_dropped(self, param: str) -> None:
        """Credential-named and volatile query parameters never count."""
        with_param = self._request(url=f"https://api.example.com/v1/items?{param}=zz9&a=1")
        without = self._request(url="https://api.example.com/v1/items?a=1")
        assert request_key("http", with_param) == request_key("http", without)

    def test_dropped_list_is_a_spec_setting(self) -> None:
        """The default spec carries the dropped-parameter patterns; a copy can change them."""
        assert KeySpec.http().drop_query == HTTP_DROPPED_QUERY
        spec = dataclasses.replace(KeySpec.http(), drop_query=())
        assert request_key("http", self._request(url="https://h/?ts=1"), spec=spec) != \
            request_key("http", self._request(url="https://h/?ts=2"), spec=spec)

    @pytest.mark.parametrize("param", ["page", "code", "q", "keyword", "tokens"])
    def test_ordinary_query_params_count(self, param: str) -> None:
        """Changing an ordinary query parameter (a country code, a search) changes the key."""
        assert request_key("http", self._request(url=f"https://h/?{param}=1")) != \
            request_key("http", self._request(url=f"https://h/?{param}=2"))

    def test_headers_count_only_when_listed(self) -> None:
        """Headers are ignored unless the spec names them."""
        one = self._request(headers={"accept": "text/plain", "authorization": "Bearer x"})
        two = self._request(headers={"accept": "application/json"})
        assert request_key("http", one) == request_key("http", two)
        spec = KeySpec.http().with_headers("Accept")
        assert request_key("http", one, spec=spec) != request_key("http", two, spec=spec)
        assert key_material("http", two, spec=spec)["request"]["headers"] == {
            "accept": "application/json"
        }

    def test_with_headers_counts_them_after_narrowing_fields(self) -> None:
        """A spec narrowed to method and url still counts the headers it is given."""
        spec = dataclasses.replace(KeySpec.http(), fields=frozenset({"method", "url"}))
        spec = spec.with_headers("x-tenant")
        material = key_material("http", self._request(headers={"x-tenant": "a"}), spec=spec)
        assert material["request"] == {"headers": {"x-tenant": "a"}, "method": "GET",
                                       "url": "https://api.example.com/v1/items"}
        assert not KeySpec.model().with_headers("x-tenant").counts("headers")

    @pytest.mark.parametrize("every_field", [False, True])
    @pytest.mark.parametrize("member", ["body", "query", "method"])
    def test_a_narrowed_member_does_not_count(self, member: str, every_field: bool) -> None:
        """A member a spec narrows away leaves the projection, and the key with it (also
        from a spec that counts every field but those it ignores)."""
        spec = (KeySpec.http().widen_all() if every_field else KeySpec.http()).narrow(member)
        one = self._request(url="https://h/v1?page=1", json={"a": 1})
        two = {**self._request(url="https://h/v1?page=2", json={"a": 2}), "method": "PUT"}
        material = key_material("http", one, spec=spec)["request"]
        assert member not in material
        assert set(material) == {"method", "url", "query", "body"} - {member}
        assert request_key("http", one) != request_key("http", two)

    def test_non_json_body_is_digested(self) -> None:
        """A text and a base64 body of the same bytes give the same digest."""
        text = key_material("http", self._request(text="hello"))
        binary = key_material("http", self._request(base64="aGVsbG8="))
        assert text["request"]["body"] == binary["request"]["body"] == {
            "sha256": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        }

    def test_json_body_is_canonical(self) -> None:
        """Member order in a JSON body does not matter."""
        assert request_key("http", self._request(json={"a": 1, "b": 2})) == \
            request_key("http", self._request(json={"b": 2, "a": 1}))

    @pytest.mark.parametrize(
        ("request_", "pointer", "match"),
        [
            ({"method": "GET", "url": "https://h/", "json": {}, "text": ""}, "", "one body"),
            ({"method": "GET", "url": "https://h/", "base64": "%%%"}, "/base64", "base64"),
            ({"method": "GET", "url": "https://h/", "text": 3}, "/text", "string"),
            ({"url": "https://h/"}, "", "method"),
            ({"method": "GET", "url": "/v1/items"}, "/url", "not absolute"),
            ({"method": "GET", "url": "https://h:99999/"}, "/url", "cannot be parsed"),
            (["GET", "https://h/"], "", "mapping"),
            ({"method": "GET", "url": "https://h/", "json": {"n": float("inf")}}, "/json/n",
             "not a JSON number"),
        ],
    )
    def test_bad_request_document(self, request_: Any, pointer: str, match: str) -> None:
        """A malformed HTTP request document is a CanonicalizationError naming where."""
        with pytest.raises(CanonicalizationError, match=match) as info:
            request_key("http", request_)
        assert info.value.pointer == pointer


class TestFindVolatile:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            ({"id": "123e4567-e89b-12d3-a456-426614174000"}, [("/id", "UUID")]),
            ({"m": ["at 2024-05-01T10:00:00Z ok"]}, [("/m/0", "ISO timestamp")]),
            ({"m": "2024-05-01 10:00:00.123+02:00"}, [("/m", "ISO timestamp")]),
            ({"t": 1700000000}, [("/t", "epoch seconds")]),
            ({"t": 1700000000.25}, [("/t", "epoch seconds")]),
            ({"t": 1700000000123}, [("/t", "epoch milliseconds")]),
            ({"t": "1700000000"}, [("/t", "epoch seconds")]),
            ({"a/b": "9f8e7d6c-5b4a-3f2e-1d0c-0a1b2c3d4e5f"}, [("/a~1b", "UUID")]),
        ],
    )
    def test_finds_volatile_values(self, value: Any, expected: list[tuple[str, str]]) -> None:
        """UUIDs, ISO timestamps and epoch times are reported with pointer and reason."""
        assert find_volatile(value) == [VolatileValue(p, r) for p, r in expected]

    @pytest.mark.parametrize(
        "value",
        [CHAT, {"max_tokens": 4096, "seed": 42, "date": "2024-05-01", "flag": True},
         {"n": None, "big": 99999999999999, "hex": "123e4567e89b12d3a456426614174000"}],
    )
    def test_ordinary_values_are_quiet(self, value: Any) -> None:
        """Ordinary requests, plain dates and small numbers are not flagged."""
        assert find_volatile(value) == []

    def test_pointers_are_into_key_material(self) -> None:
        """On key material the pointers start at /request."""
        material = key_material("chat", {"messages": [{"content": "now 2024-05-01T10:00Z"}]})
        assert find_volatile(material) == [
            VolatileValue("/request/messages/0/content", "ISO timestamp")
        ]


class TestNormalizers:
    def test_replace_volatile_makes_runs_agree(self) -> None:
        """Two runs that differ only by a timestamp and an id share a key."""
        spec = KeySpec.model().with_normalizers(ReplaceVolatile())
        one = {"messages": [{"content": "at 2024-05-01T10:00:00Z id "
                             "123e4567-e89b-12d3-a456-426614174000"}], "seed": 1700000000}
        two = {"messages": [{"content": "at 2025-01-02T03:04:05Z id "
                             "00000000-1111-2222-3333-444444444444"}], "seed": 1800000000}
        assert request_key("chat", one) != request_key("chat", two)
        assert request_key("chat", one, spec=spec) == request_key("chat", two, spec=spec)
        assert key_material("chat", one, spec=spec)["request"] == {
            "messages": [{"content": "at <ISO timestamp> id <UUID>"}],
            "seed": "<epoch seconds>",
        }

    def test_replace_volatile_can_be_limited(self) -> None:
        """Limited to UUIDs it leaves timestamps alone."""
        normalizer = ReplaceVolatile(["UUID"], placeholder="?")
        text = "2024-05-01T10:00:00Z 123e4567-e89b-12d3-a456-426614174000"
        assert normalizer({"a": [text]}) == {"a": ["2024-05-01T10:00:00Z ?"]}

    def test_replace_volatile_rejects_unknown_reason(self) -> None:
        """A misspelt reason is a usage error, not a silent no-op."""
        with pytest.raises(UsageError, match="uuid"):
            ReplaceVolatile(["uuid"])

    def test_drop_keys_at_any_depth(self) -> None:
        """DropKeys removes `cache_control` hints wherever they sit."""
        spec = KeySpec.model().with_normalizers(DropKeys("cache_control"))
        one = {"messages": [{"content": [{"type": "text", "text": "hi",
                                          "cache_control": {"type": "ephemeral"}}]}]}
        two = {"messages": [{"content": [{"type": "text", "text": "hi"}]}]}
        assert request_key("chat", one, spec=spec) == request_key("chat", two, spec=spec)
        assert request_key("chat", one) != request_key("chat", two)

    def test_normalizers_run_in_order(self) -> None:
        """`with_normalizers` appends; the second sees the first one's output."""
        spec = KeySpec.model().with_normalizers(
            lambda v: {**v, "model": "x"}, lambda v: {**v, "model": v["model"] + "y"}
        )
        assert key_material("chat", {"model": "m"}, spec=spec)["request"] == {"model": "xy"}
