"""Host aliases: a call to a proxy or a local fake server keys as a call to the real host,
so one fixture tree serves both; ForwardingTransport sends live calls to a local server."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import httpx2
import openai
import pytest

from fakeprovider import FakeProvider
from redactkey import (
    FixtureDir,
    FixtureTransport,
    ForwardingTransport,
    KeySpec,
    Redactor,
    RunSecrets,
    UsageError,
    request_key,
)
from redactkey.record._config import Config, load_config

pytest_plugins = ["pytester"]

FAKEPROVIDER = Path(__file__).with_name("fakeprovider.py")
API_KEY = "sk-proj-" + "Hq4w" * 12
MESSAGES = [{"role": "user", "content": "Hello?"}]


def _chat(transport: FixtureTransport, base_url: str | None = None) -> str:
    with httpx2.Client(transport=transport) as http_client:
        client = openai.OpenAI(api_key=API_KEY, base_url=base_url, http_client=http_client,
                               max_retries=0)
        answer = client.chat.completions.create(model="gpt-x", messages=MESSAGES)  # type: ignore[arg-type]
    return str(answer.choices[0].message.content)


class TestKeySpecHosts:
    """`KeySpec(hosts=...)` and `with_hosts` map an alias to the canonical host."""

    def test_alias_keys_as_the_canonical_host(self) -> None:
        """http://127.0.0.1:8765/... keys as https://api.openai.com/..."""
        spec = KeySpec.http().with_hosts({"127.0.0.1:8765": "api.openai.com"})
        fake = {"method": "POST", "url": "http://127.0.0.1:8765/v1/chat/completions",
                "json": {"model": "m"}}
        real = {**fake, "url": "https://api.openai.com/v1/chat/completions"}
        assert request_key("http", fake, spec=spec) == request_key("http", real)
        assert request_key("http", fake) != request_key("http", real)

    def test_constructor_and_explicit_scheme(self) -> None:
        """`KeySpec(..., hosts=...)` takes a mapping; a canonical `http://` keeps http."""
        spec = KeySpec(fields=None, shape="http", hosts={"LOCALHOST:9000": "http://svc:8080"})
        assert spec.hosts == (("localhost:9000", "http://svc:8080"),)
        request = {"method": "GET", "url": "https://localhost:9000/x"}
        assert request_key("http", request, spec=spec) == request_key(
            "http", {"method": "GET", "url": "http://svc:8080/x"}, spec=KeySpec.http())

    @pytest.mark.parametrize("bad", [{"": "a.test"}, {"a.test/path": "b.test"},
                                     {"a.test": "ftp://b.test"}])
    def test_bad_alias_is_a_usage_error(self, bad: dict[str, str]) -> None:
        """An alias that is not host[:port] is refused with an example."""
        with pytest.raises(UsageError, match="host\\[:port\\]"):
            KeySpec.http().with_hosts(bad)

    def test_configuration_hosts(self, tmp_path: Path) -> None:
        """`hosts` in [tool.redactkey] reaches the http spec; a bad one names the setting."""
        (tmp_path / ".redactkey.toml").write_text(
            '[hosts]\n"127.0.0.1:8765" = "api.openai.com"\n', encoding="utf-8")
        spec = load_config(tmp_path).key_spec("http")
        assert spec.hosts == (("127.0.0.1:8765", "https://api.openai.com"),)
        with pytest.raises(ValueError, match="hosts"):
            Config.model_validate({"hosts": {"a b": "c"}})


class TestRoundTrip:
    """Record against a local fake, replay against the real host offline, and back."""

    def test_record_at_fake_replay_at_real_host(self, tmp_path: Path) -> None:
        """Recorded through OPENAI_BASE_URL=<fake>, replayed with the SDK's default URL."""
        with FakeProvider() as fake:
            host = fake.url.removeprefix("http://")
            config = Config.model_validate({"hosts": {host: "api.openai.com"}})
            redactor = Redactor(RunSecrets({}))
            store = FixtureDir(tmp_path)
            recorded = _chat(FixtureTransport(store, mode="record", redactor=redactor,
                                              config=config), base_url=fake.url + "/v1")
        replayed = _chat(FixtureTransport(store, mode="replay", redactor=redactor,
                                          config=Config()))
        assert replayed == recorded
        document = json.loads(next(tmp_path.iterdir()).read_text(encoding="utf-8"))
        assert document["request"]["request"]["url"] == (
            "https://api.openai.com/v1/chat/completions")

    def test_forwarding_transport_keys_on_the_real_host(self, tmp_path: Path) -> None:
        """ForwardingTransport sends live calls to the fake; the key is the real host's."""
        redactor = Redactor(RunSecrets({}))
        store = FixtureDir(tmp_path)
        with FakeProvider() as fake:
            recorded = _chat(FixtureTransport(store, mode="record", redactor=redactor,
                                              config=Config(),
                                              inner=ForwardingTransport(fake.url)))
            assert fake.attempts() == 1
        assert _chat(FixtureTransport(store, mode="replay", redactor=redactor,
                                      config=Config())) == recorded

    def test_plugin_ini_hosts(self, pytester: pytest.Pytester,
                              monkeypatch: pytest.MonkeyPatch) -> None:
        """ini `redactkey_hosts`: record with OPENAI_BASE_URL at the fake, replay without
        it and with the network refused."""
        pytester.makepyfile(fakeprovider=FAKEPROVIDER.read_text(encoding="utf-8"))
        pytester.makepyfile(test_app="""
            import os
            import httpx2, openai

            def test_chat(redactkey_transport):
                with httpx2.Client(transport=redactkey_transport) as http_client:
                    client = openai.OpenAI(http_client=http_client, max_retries=0)
                    answer = client.chat.completions.create(
                        model="gpt-x", messages=[{"role": "user", "content": "Hello?"}])
                print("ANSWER", answer.choices[0].message.content)
        """)
        monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
        with FakeProvider() as fake:
            host = fake.url.removeprefix("http://")
            pytester.makeini(f"[pytest]\nredactkey_hosts =\n    {host} = api.openai.com\n")
            monkeypatch.setenv("OPENAI_BASE_URL", fake.url + "/v1")
            pytester.runpytest("-p", "no:hypothesispytest", "--redactkey-mode=record"
                               ).assert_outcomes(passed=1)
        monkeypatch.delenv("OPENAI_BASE_URL")
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        result = pytester.runpytest("-p", "no:hypothesispytest", "-s")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*ANSWER Hello*", "replayed 1, recorded 0, missing 0*"])


class TestInnerTransportErrors:
    """A wrong inner transport is a clear error, not an AttributeError deep inside."""

    def test_not_a_transport(self, tmp_path: Path) -> None:
        """A client or a URL passed as `inner` is refused at construction."""
        with pytest.raises(UsageError, match="not a Client"), httpx.Client() as client:
            FixtureTransport(FixtureDir(tmp_path), inner=client)
        with pytest.raises(UsageError, match="not a str"):
            FixtureTransport(FixtureDir(tmp_path), inner="http://127.0.0.1:8765")

    def test_wrong_library(self, tmp_path: Path) -> None:
        """An httpx inner transport under an httpx2 client names both libraries."""
        transport = FixtureTransport(FixtureDir(tmp_path), mode="record",
                                     redactor=Redactor(RunSecrets({})), config=Config(),
                                     inner=httpx.MockTransport(lambda r: httpx.Response(200)))
        with pytest.raises(UsageError, match="from httpx, but the request is from httpx2"), \
                httpx2.Client(transport=transport) as client:
            client.get("https://api.example.test/")

    def test_forwarding_needs_an_absolute_url(self) -> None:
        """ForwardingTransport refuses a URL without scheme and host."""
        with pytest.raises(UsageError, match="absolute http"):
            ForwardingTransport("127.0.0.1:8765")
