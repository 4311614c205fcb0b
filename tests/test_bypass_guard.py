"""The pytest plugin's guard while recording: a connection that bypasses the transport of a
test that took one (an async slot left empty, say) fails the test by name."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

QUIET = ("-p", "no:hypothesispytest", "-p", "no:randomly")

CONFTEST = """
import pytest
from fakeprovider import FakeProvider

@pytest.fixture(scope="session")
def fake():
    with FakeProvider() as provider:
        yield provider
"""

TESTS = """
import asyncio

import httpx2
import openai

KEY = "sk-test-" + "x1" * 10
MESSAGES = [{"role": "user", "content": "hello"}]


def _sync(fake, transport):
    return openai.OpenAI(api_key=KEY, base_url=f"{fake.url}/v1", max_retries=0,
                         http_client=httpx2.Client(transport=transport))


async def _async_call(client):
    async with client:
        return await client.chat.completions.create(model="m", messages=MESSAGES)


def test_async_slot_left_empty(redactkey_transport, fake):
    assert _sync(fake, redactkey_transport).chat.completions.create(
        model="m", messages=MESSAGES).choices
    bare = openai.AsyncOpenAI(api_key=KEY, base_url=f"{fake.url}/v1", max_retries=0)
    asyncio.run(_async_call(bare))


def test_both_slots_filled(redactkey_transport, fake):
    assert _sync(fake, redactkey_transport).chat.completions.create(
        model="m", messages=MESSAGES).choices
    filled = openai.AsyncOpenAI(api_key=KEY, base_url=f"{fake.url}/v1", max_retries=0,
                                http_client=httpx2.AsyncClient(transport=redactkey_transport))
    assert asyncio.run(_async_call(filled)).choices
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE"):
        monkeypatch.delenv(name, raising=False)


class TestRecordModeBypass:
    """Recording watches the connections of tests that use a redactkey transport."""

    @pytest.mark.parametrize("mode", ["record", "auto"])
    def test_bypass_fails_the_test_by_name(self, pytester: pytest.Pytester, mode: str) -> None:
        """The bare async client's connection is refused, naming the test and the host; the
        transport's own live connections (loopback not allowed) go through and record."""
        pytester.makeconftest(CONFTEST)
        pytester.makepyfile(test_slots=TESTS)
        result = pytester.runpytest(*QUIET, f"--redactkey-mode={mode}")
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines([
            "*NetworkRefusedError: test_slots.py::test_async_slot_left_empty: network "
            f"connection to 127.0.0.1:* refused: it did not go through a redactkey face "
            f"(mode {mode})*docs/clients.md*",
        ])
        recorded = list((pytester.path / "fixtures" / "test_slots").glob("http.*.json"))
        assert len(recorded) == 1  # both tests made the same sync and async call

    def test_live_mode_is_not_watched(self, pytester: pytest.Pytester) -> None:
        """In live mode nothing is recorded, so nothing is a bypass."""
        pytester.makeconftest(CONFTEST)
        pytester.makepyfile(test_slots=TESTS)
        pytester.runpytest(*QUIET, "--redactkey-mode=live").assert_outcomes(passed=2)

    def test_off_turns_it_off(self, pytester: pytest.Pytester) -> None:
        """redactkey_network_guard = off turns the record-mode guard off too."""
        pytester.makeini("[pytest]\nredactkey_network_guard = off\n")
        pytester.makeconftest(CONFTEST)
        pytester.makepyfile(test_slots=TESTS)
        pytester.runpytest(*QUIET, "--redactkey-mode=record").assert_outcomes(passed=2)
