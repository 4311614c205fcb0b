"""One source of key truth: `[tool.redactkey.keys.<kind>]` keys every layer alike, and a
request read back from any fixture keys to that fixture's key through `redact key`."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redactkey import (
    FixtureDir,
    FixtureTransport,
    KeySpec,
    ModelFixtures,
    Redactor,
    RunSecrets,
    request_key,
)
from redactkey.commands._cli import cli
from redactkey.record._config import Config, load_config
from redactkey.record._tools import ToolFixtures

pytest_plugins = ["pytester"]

CONFIG = """
[tool.redactkey.keys.http]
headers = ["x-tenant"]
drop_query = ["page_token"]

[tool.redactkey.keys.chat]
ignore = ["temperature"]

[tool.redactkey.keys."tool:search"]
ignore = ["trace"]
"""

HTTP_REQUEST = {
    "method": "GET",
    "url": "https://api.example.test/v1/items?q=cats&page_token=abc123&api_key=zz",
    "headers": {"x-tenant": "acme", "user-agent": "client/1.0"},
}
CHAT = {"model": "m", "temperature": 0.3, "messages": [{"role": "user", "content": "hi"}]}


def redact_key(kind: str, request: Any, *args: str) -> str:
    """`redact key --kind KIND` run in-process on `request` as stdin."""
    result = CliRunner().invoke(cli, ["key", "--kind", kind, *args],
                                input=json.dumps(request).encode())
    assert result.exit_code == 0, result.output
    return result.stdout.strip().splitlines()[-1]


def quiet_redactor() -> Redactor:
    return Redactor(RunSecrets({}))


def ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"ok": True})


def only_file(path: Path) -> dict[str, Any]:
    files = sorted(path.rglob("*.json"))
    assert len(files) == 1, files
    document: dict[str, Any] = json.loads(files[0].read_text(encoding="utf-8"))
    return document


class TestConfigParity:
    """The configuration's key spec applies in every layer and in `redact key`."""

    @pytest.fixture
    def project(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
        (tmp_path / "pyproject.toml").write_text(CONFIG, encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        return tmp_path

    def test_transport_uses_the_configuration(self, project: Path) -> None:
        """FixtureTransport (reading the nearest configuration) keys as `redact key`."""
        store = project / "fx"
        transport = FixtureTransport(FixtureDir(store), mode="record",
                                     inner=httpx.MockTransport(ok), redactor=quiet_redactor())
        with httpx.Client(transport=transport) as client:
            client.get(HTTP_REQUEST["url"], headers=HTTP_REQUEST["headers"])
        recorded = only_file(store)["key"]
        spec = load_config(project).key_spec("http")
        assert recorded == redact_key("http", HTTP_REQUEST)
        assert recorded == request_key("http", HTTP_REQUEST, spec=spec)
        assert recorded != request_key("http", HTTP_REQUEST)

    def test_model_and_tool_layers_use_the_configuration(self, project: Path) -> None:
        """ModelFixtures and ToolFixtures key with `[keys.<kind>]` too."""
        model = ModelFixtures(FixtureDir(project / "m"), mode="record", redactor=quiet_redactor())
        model.call("chat", CHAT, lambda: "answer")
        assert only_file(project / "m")["key"] == redact_key("chat", CHAT)
        assert only_file(project / "m")["key"] != request_key("chat", CHAT)
        tools = ToolFixtures(FixtureDir(project / "t"), mode="record", redactor=quiet_redactor())
        arguments = {"q": "cats", "trace": "abc"}
        tools.call("search", arguments, lambda: ["result"])
        assert only_file(project / "t")["key"] == redact_key("tool:search", arguments)
        assert only_file(project / "t")["key"] == request_key(
            "tool:search", {"q": "cats"})

    def test_explicit_config_wins_over_the_directory(self, project: Path) -> None:
        """`config=Config()` keys with the defaults whatever the directory holds."""
        model = ModelFixtures(FixtureDir(project / "m"), mode="record", redactor=quiet_redactor(),
                              config=Config())
        model.call("chat", CHAT, lambda: "answer")
        assert only_file(project / "m")["key"] == request_key("chat", CHAT)

    def test_plugin_key_equals_redact_key(self, pytester: pytest.Pytester) -> None:
        """The plugin's transport writes the key `redact key` prints with the same config."""
        pytester.makepyprojecttoml(CONFIG)
        pytester.makeconftest("""
            import httpx, pytest

            @pytest.fixture
            def redactkey_inner_transport():
                return httpx.MockTransport(lambda request: httpx.Response(200, json={"ok": 1}))
        """)
        pytester.makepyfile(test_app=f"""
            import httpx

            def test_call(redactkey_tool_transport):
                with httpx.Client(transport=redactkey_tool_transport) as client:
                    client.get({HTTP_REQUEST["url"]!r}, headers={HTTP_REQUEST["headers"]!r})
        """)
        pytester.runpytest("-p", "no:hypothesispytest", "--redactkey-mode=record",
                           ).assert_outcomes(passed=1)
        recorded = only_file(pytester.path / "fixtures")["key"]
        config = str(pytester.path / "pyproject.toml")
        assert recorded == redact_key("http", HTTP_REQUEST, "--config", config)
        assert recorded == request_key(
            "http", HTTP_REQUEST, spec=load_config(pytester.path).key_spec("http"))


class TestKeySpecHelpers:
    """The helpers add to the defaults; nothing needs `dataclasses.replace`."""

    def test_with_drop_query_adds(self) -> None:
        """`with_drop_query` keeps the credential and volatile parameters it already drops."""
        spec = KeySpec.http().with_drop_query("page_token")
        assert {"api_key", "ts", "nonce", "page_token"} <= set(spec.drop_query)
        url = "https://h.test/p?api_key=zz&ts=1&page_token=a&q=1"
        same = "https://h.test/p?q=1"
        assert request_key("http", {"method": "GET", "url": url}, spec=spec) == request_key(
            "http", {"method": "GET", "url": same}, spec=spec)

    def test_only_replaces_the_fields_keeps_the_never_list(self) -> None:
        """`only` sets the counted fields; the model's never-list still holds."""
        spec = KeySpec.model().only("model", "messages", "user")
        assert spec.counts("messages")
        assert not spec.counts("temperature")
        assert not spec.counts("user")


ALPHABET = st.characters(codec="utf-8", exclude_categories=("Cs",))
TEXT = st.text(ALPHABET, max_size=12)
NAME = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)


def _record(kind: str, request: Any, path: Path) -> dict[str, Any]:
    config = Config.model_validate({"keys": {"http": {"headers": ["x-tenant"]}}})
    if kind == "http":
        transport = FixtureTransport(FixtureDir(path), mode="record", inner=httpx.MockTransport(ok),
                                     redactor=quiet_redactor(), config=config)
        with httpx.Client(transport=transport) as client:
            client.request(request["method"], request["url"], params=request["params"],
                           json=request["json"], headers=request["headers"])
    elif kind.startswith("tool:"):
        ToolFixtures(FixtureDir(path), mode="record", redactor=quiet_redactor(),
                     config=config).call(kind[5:], request, lambda: "result")
    else:
        ModelFixtures(FixtureDir(path), mode="record", redactor=quiet_redactor(),
                      config=config).call(kind, request, lambda: "answer")
    return only_file(path)


HTTP = st.fixed_dictionaries({
    "method": st.sampled_from(["GET", "POST", "DELETE"]),
    "url": st.builds(lambda a, b: f"https://api.example.test/{a}/{b}", NAME, NAME),
    "params": st.dictionaries(NAME, TEXT, max_size=3),
    "json": st.dictionaries(NAME, st.one_of(TEXT, st.integers(-9, 9), st.none()), max_size=3),
    "headers": st.fixed_dictionaries({"x-tenant": NAME}),
})
MODEL = st.fixed_dictionaries({
    "model": NAME,
    "messages": st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": TEXT}),
                         min_size=1, max_size=3),
    "temperature": st.floats(0, 2, allow_nan=False),
    "user": TEXT,
})
TOOL = st.dictionaries(NAME, st.one_of(TEXT, st.integers(-999, 999), st.lists(TEXT, max_size=2)),
                       max_size=4)
CALLS = st.one_of(
    st.tuples(st.just("http"), HTTP),
    st.tuples(st.sampled_from(["chat", "text", "structured"]), MODEL),
    st.tuples(st.just("tool:search"), TOOL),
)


class TestReadBack:
    """A request read back from a fixture file keys to that file's key via `redact key`."""

    @settings(max_examples=25, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(call=CALLS)
    def test_every_fixture_kind(self, call: tuple[str, Any]) -> None:
        """For http, model and tool fixtures: `redact key --kind K < request` == file key."""
        kind, request = call
        with tempfile.TemporaryDirectory() as directory:
            document = _record(kind, request, Path(directory))
        with tempfile.TemporaryDirectory() as directory:
            toml = Path(directory) / ".redactkey.toml"
            toml.write_text('[keys.http]\nheaders = ["x-tenant"]\n', encoding="utf-8")
            stored = document["request"]
            assert redact_key(kind, stored, "--config", str(toml)) == document["key"]
            assert redact_key(kind, stored["request"], "--config", str(toml)) == document["key"]
