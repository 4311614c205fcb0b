"""The redactkey pytest plugin: record once, replay offline in CI, and know what was used.

Registered through the ``pytest11`` entry point ``redactkey``; ``-p no:redactkey``
turns it off. Each test gets one `Recorder`, the ``redactkey`` fixture, settled from
its marker, the options, the environment and the ini file; the other fixtures are views
of it (``redactkey_transport`` is ``redactkey.transport()``, ``model_fixtures`` is
``redactkey.models``, ...). Its options and ini values are in `_settings` and
docs/pytest.md; a per-test network guard, an end-of-session summary and a JSON run
report merged across pytest-xdist workers are `_run`'s.

Nothing is patched at import time; the network guard exists only while a guarded
test runs. The fixtures take no other fixture, for the reason docs/performance.md gives.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..clients._guard import NetworkRefusedError
from ..clients._recorder import Recorder
from ..fixtures._store import kind_for_file_name
from ..record._replay import ModelFixtures
from ..record._report import TrackedStore
from ..record._tools import ToolFixtures
from ..redact._redactor import Redactor
from ..secrets._run_secrets import RunSecrets
from ._run import REDACTKEY_FIXTURES, Run, request_of
from ._settings import MARKER, RUN_KEY, Options, RedactkeySettings, pytest_addoption, settings_for

if TYPE_CHECKING:
    from ..clients._httpx import FixtureTransport
    from ..fixtures._store import FixtureStore

__all__ = [
    "REDACTKEY_FIXTURES",
    "NetworkRefusedError",
    "RedactkeySettings",
    "TrackedStore",
    "pytest_addoption",
]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(path=None, mode=None, model_mode=None): redactkey fixture directory "
        "(relative to the test file) and record/replay mode for these tests",
    )
    run = Run(config, Options.of(config))
    config.stash[RUN_KEY] = run
    config.pluginmanager.register(run, "redactkey-session")
    config.pluginmanager.register(_Fixtures(run), "redactkey-fixtures")


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(RUN_KEY, None)
    if run is not None:
        for name in ("redactkey-fixtures", "redactkey-session"):
            config.pluginmanager.unregister(name=name)
        del config.stash[RUN_KEY]


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Pass over fixture files, and directories that hold nothing else: no test is in
    them, and pytest would visit each of thousands of files with a few hook calls
    (docs/performance.md). Any other path is pytest's to judge."""
    name = collection_path.name
    if name.endswith(".py"):
        return None
    if kind_for_file_name(name) is not None:
        return True
    try:
        with os.scandir(collection_path) as entries:
            fixtures_only = False
            for entry in entries:
                if kind_for_file_name(entry.name) is None or not entry.is_file(
                        follow_symlinks=False):
                    return None
                fixtures_only = True
    except OSError:  # not a directory (a data file next to the tests), or unreadable
        return None
    return True if fixtures_only else None


class _Fixtures:
    """The plugin's fixtures: views of the test's Recorder (built once per test, from what
    the session builds once), reached directly unless the project overrides
    ``redactkey``; the test being set up is the one the setup hook saw last."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def _item(self) -> pytest.Item:
        if self.run.item is None:
            raise pytest.UsageError(
                "redactkey's fixtures are set up for a test; no test is being set up")
        return self.run.item

    def _recorder(self) -> Recorder:
        """The test's Recorder: the project's `redactkey` fixture when it has one."""
        item = self._item()
        if self.run.overridden(item, "redactkey"):
            return request_of(item).getfixturevalue("redactkey")  # type: ignore[no-any-return]
        return self.run.recorder(item)

    @pytest.fixture
    def redactkey(self) -> Recorder:
        """This test's `Recorder`: its modes (marker, option, environment), its fixture
        directory, its secrets and redactor; every client face comes from it."""
        return self.run.recorder(self._item())

    @pytest.fixture
    def redactkey_settings(self) -> RedactkeySettings:
        """This test's modes and fixture directory (after marker, option, environment and
        ini)."""
        return settings_for(self._item())

    @pytest.fixture
    def fixture_store(self) -> FixtureStore:
        """The store of `redactkey`: the test's fixture directory (per test module unless
        configured), or with `--redactkey-store=cassette` the cassette `<dir>.json`."""
        return self._recorder().store

    @pytest.fixture
    def redactkey_secret_slots(self) -> list[object]:
        """Extra secret slots for the test's secrets; override it to declare what your
        tools read: slot names (read from the environment), mappings of slot to source,
        pydantic settings models or objects with `secret_slots`."""
        return []

    @pytest.fixture
    def run_secrets(self) -> RunSecrets | None:
        """The secrets of `redactkey`: secret-looking environment variables, `[tool.redactkey]
        secret-env` and `redactkey_secret_slots`; each test gets its own copy."""
        return self._recorder().secrets

    @pytest.fixture
    def redactor(self) -> Redactor:
        """The `Redactor` of `redactkey`, over its secrets."""
        return self._recorder().redactor

    @pytest.fixture
    def model_fixtures(self) -> ModelFixtures:
        """`redactkey.models`: `ModelFixtures` in the test's model mode."""
        return self._recorder().models

    @pytest.fixture
    def tool_fixtures(self) -> ToolFixtures:
        """`redactkey.tools`: `ToolFixtures` in the test's tool mode:
        ``tool_fixtures.call("search", {"q": "cats"}, live)`` or ``@tool_fixtures.tool``."""
        return self._recorder().tools

    @pytest.fixture
    def redactkey_inner_transport(self) -> Any:
        """The transport `redactkey_transport` sends live calls through (None: the client
        library's own). Override it to reach a proxy or a local fake provider."""
        return None

    def _transport(self, model: bool) -> Iterator[FixtureTransport]:
        item = self._item()
        inner = (request_of(item).getfixturevalue("redactkey_inner_transport")
                 if self.run.overridden(item, "redactkey_inner_transport") else None)
        transport = self._recorder().transport(inner=inner, model=model)
        try:
            yield transport
        finally:
            transport.close()

    @pytest.fixture
    def redactkey_transport(self) -> Iterator[FixtureTransport]:
        """`redactkey.transport()`: for model SDK clients (openai, anthropic), httpx and
        httpx2, sync and async, in the model mode:
        ``openai.OpenAI(http_client=httpx2.Client(transport=redactkey_transport))``."""
        yield from self._transport(model=True)

    @pytest.fixture
    def redactkey_tool_transport(self) -> Iterator[FixtureTransport]:
        """`redactkey.transport(model=False)`: for the HTTP APIs your tools call."""
        yield from self._transport(model=False)
