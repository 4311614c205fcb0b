"""The plugin's session: what every test's Recorder is made of (built once), and the
run's accounting (which tests use which fixture directory, the network guard around each
guarded test, what the tests replayed and recorded), merged across xdist workers."""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable, Generator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._errors import DriftError, MissingFixtureError, RedactkeyError
from ..clients._guard import NetworkGuard
from ..clients._recorder import Recorder
from ..fixtures._age import ExpiryAction, FixtureAges
from ..fixtures._store import CassetteStore, FixtureDir
from ..record._config import Config, load_config
from ..record._modes import MODE_ENV
from ..record._report import RunSummary, TrackedStore, merge_parts, new_dir, new_part, shown_path
from ..redact._redactor import Redactor
from ..secrets._run_secrets import RunSecrets
from ._settings import MARKER, SETTINGS_KEY, Options, RedactkeySettings, fixture_dir, settings_for

if TYPE_CHECKING:
    from ..fixtures._store import FixtureStore

__all__ = ["REDACTKEY_FIXTURES", "Run", "Shared", "request_of"]

# Fixtures whose use makes a test a "redactkey test" (network guard, unused accounting).
REDACTKEY_FIXTURES = frozenset({
    "fixture_store", "model_fixtures", "redactkey", "redactkey_settings",
    "redactkey_tool_transport", "redactkey_transport", "redactor", "run_secrets",
    "tool_fixtures",
})
# Names common enough that a project may define fixtures of its own with them: they make
# a test a redactkey test only when they are the plugin's.
_GENERIC_FIXTURES = frozenset({"redactor", "run_secrets"})
# Fixtures that hand a test a transport: in record mode its other connections are a bypass.
TRANSPORT_FIXTURES = frozenset({"redactkey_tool_transport", "redactkey_transport"})
# The module the plugin's fixtures are defined in (a fixture defined elsewhere overrides).
FIXTURES_MODULE = "redactkey.pytest_plugin"

_RECORDER_KEY = pytest.StashKey[Recorder]()
_GUARD_KEY = pytest.StashKey["NetworkGuard | None"]()
_USES_KEY = pytest.StashKey[bool]()


def request_of(item: pytest.Item) -> pytest.FixtureRequest:
    """The fixture request of a test item (pytest keeps it on every item that takes
    fixtures, functions and doctests alike)."""
    request = getattr(item, "_request", None)
    if request is None:
        raise pytest.UsageError(
            f"{item.nodeid}: this kind of test item takes no fixtures, so it cannot use "
            "an override of a redactkey fixture; use the plugin's own fixture")
    return request  # type: ignore[no-any-return]


class Shared:
    """What every test's Recorder is made of, built once per session: the configuration,
    one store per fixture directory, the run's secrets and redactor, the layer settings."""

    def __init__(self, config: pytest.Config, options: Options, part: dict[str, Any]) -> None:
        self.config = config
        self.options = options
        self.part = part  # the session's share of the run (stand-in secrets go there)
        self.fixture_dirs: dict[tuple[str, Any], Path] = {}
        self.stores: dict[Path, tuple[FixtureStore, str]] = {}  # with its location as shown
        self.ages = FixtureAges()  # git is asked once per fixture tree for the whole session
        # (whether it records, the environment read, the secrets): copied for each test
        self._secrets: tuple[bool, dict[Any, Any], RunSecrets] | None = None
        self._redactors: tuple[RunSecrets | None, Redactor] | None = None

    def fixture_dir(self, item: pytest.Item, marker_path: Any) -> Path:
        """The fixture directory of a test (worked out once per module and marker path)."""
        where = (str(item.path), None if marker_path is None else os.fspath(marker_path))
        if where not in self.fixture_dirs:
            self.fixture_dirs[where] = fixture_dir(item, self.options.fixture_dir, marker_path)
        return self.fixture_dirs[where]

    @cached_property
    def project(self) -> Config:
        """`[tool.redactkey]` of the rootdir with the ini's host aliases."""
        config = load_config(self.config.rootpath)
        aliases: dict[str, str] = {}
        for line in self.config.getini("redactkey_hosts"):
            alias, sep, canonical = str(line).partition("=")
            if not sep or not alias.strip() or not canonical.strip():
                raise pytest.UsageError(
                    f"ini redactkey_hosts line {line!r}: write 'alias = canonical', e.g. "
                    "'127.0.0.1:8765 = api.openai.com'")
            aliases[alias.strip()] = canonical.strip()
        try:
            return config.with_hosts(aliases) if aliases else config
        except RedactkeyError as exc:
            raise pytest.UsageError(f"ini redactkey_{exc}") from None

    @cached_property
    def expiry(self) -> tuple[str | None, ExpiryAction]:
        """(max age, action on expiry): the options, else `[tool.redactkey]`."""
        return (self.options.max_age or self.project.max_age,
                self.options.on_expiry or self.project.on_expiry)

    @cached_property
    def min_length(self) -> int:
        """The shortest secret that is redacted (ini, else `[tool.redactkey]`)."""
        text = str(self.config.getini("redactkey_min_secret_length")).strip()
        if not text:
            return self.project.min_secret_length
        value = int(text) if text.isdigit() else 0
        if not 4 <= value <= 256:
            raise pytest.UsageError(
                f"ini redactkey_min_secret_length={text!r}: use a whole number from 4 to 256")
        return value

    def store(self, directory: Path) -> tuple[FixtureStore, str]:
        """The store of a fixture directory, one for every test that uses it, and its
        location as the summary shows it."""
        if directory not in self.stores:
            store = (CassetteStore(directory.with_name(directory.name + ".json"))
                     if self.options.store == "cassette" else FixtureDir(directory))
            self.stores[directory] = (store, shown_path(store.location, self.config.rootpath))
        return self.stores[directory]

    def secrets(self, records: bool, slots: list[object]) -> RunSecrets:
        """A test's secrets: a copy of the run's, collected again only when the
        environment changed (or from scratch, with the slots a project declares). A
        stand-in value (OPENAI_API_KEY=dummy) is skipped while a test records nothing and
        refused, naming the slot, when it may record."""
        project = self.project
        environment = _environment()
        known = self._secrets
        if slots or known is None or known[:2] != (records, environment):
            secrets = RunSecrets.from_env(min_length=self.min_length, skip_short=not records)
            try:
                secrets.collect(*project.secret_env, *slots)
            finally:
                self.part["dummies"].update(secrets.dummies)
            if slots:
                return secrets
            self._secrets = known = (records, environment, secrets)
        return known[2].copy()

    def redactor(self, secrets: RunSecrets) -> Redactor:
        """A configured `Redactor` over `secrets`, sharing everything compiled with the
        session's (the known-value automaton too, while `secrets` holds the run's values)."""
        run = self._secrets[2] if self._secrets is not None else None
        if self._redactors is None or self._redactors[0] is not run:
            project = self.project
            template = Redactor(run, placeholder=project.placeholder,
                                sensitive_keys=project.sensitive_keys,
                                extra_patterns=project.extra_patterns())
            template._scanner()  # (once: each test's redactor starts from this scan)
            self._redactors = (run, template)
        return self._redactors[1].over(secrets)

    def recorder(self, item: pytest.Item, slots: list[object],
                 on_drift: Callable[[DriftError], None] | None) -> Recorder:
        """The Recorder of one test."""
        settings = settings_for(item)
        inner, shown = self.store(settings.fixture_dir)
        store = TrackedStore(inner, item.nodeid, shown=shown)
        secrets = self.secrets(bool({settings.mode, settings.model_mode} & {"record", "auto"}),
                               slots)
        max_age, on_expiry = self.expiry
        return Recorder(
            store, mode=settings.mode, model_mode=settings.model_mode, secrets=secrets,
            redactor=self.redactor(secrets), config=self.project, max_age=max_age,
            on_expiry=on_expiry, ages=self.ages, label=item.nodeid, on_drift=on_drift,
            how_to_record=settings.how_to_record,
            how_to_rerecord=f"pytest --redactkey-mode=record {shlex.quote(item.nodeid)}",
        )


def _environment() -> dict[Any, Any]:
    """The process environment (its raw store when it has one: nothing is decoded), less
    what pytest changes for every test by itself (the name of the running test)."""
    data = getattr(os.environ, "_data", None)
    environment: dict[Any, Any] = dict(data) if isinstance(data, dict) else dict(os.environ)
    for name in ("PYTEST_CURRENT_TEST", b"PYTEST_CURRENT_TEST"):
        environment.pop(name, None)
    return environment


def _defined_here(definition: Any) -> bool:
    return getattr(getattr(definition, "func", None), "__module__", "") == FIXTURES_MODULE


def _missing_in(exc: BaseException) -> MissingFixtureError | None:
    """The MissingFixtureError that is `exc` or in its cause / context / group chain."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, MissingFixtureError):
            return current
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        todo.extend(getattr(current, "exceptions", ()))
    return None


class Run:
    """One process's share of the run: which tests use which fixture directory, the
    network guard around each guarded test, and what the tests replayed and recorded;
    xdist workers ship theirs to the controller, which reports."""

    def __init__(self, config: pytest.Config, options: Options) -> None:
        self.config = config
        self.options = options
        self.part = new_part()
        self.shared = Shared(config, options, self.part)
        self.stores: list[TrackedStore] = []  # of finished tests, made into events at the end
        self.worker_parts: list[dict[str, Any]] = []
        self.summary: RunSummary | None = None
        self.report_written: Path | None = None
        self.failed_unused = False
        self.dir_of: dict[str, str] = {}  # nodeid -> fixture directory, for collected tests
        self.marked_parents: dict[str, bool] = {}
        self.shown_dirs: dict[Path, str] = {}
        self.overrides: dict[tuple[str, str], bool] = {}
        self.item: pytest.Item | None = None  # the test being set up, for the fixtures

    def marked(self, item: pytest.Item) -> bool:
        """Whether a redactkey marker applies to `item` (its parents' asked once)."""
        if any(marker.name == MARKER for marker in item.own_markers):
            return True
        parent = item.parent
        if parent is None:
            return False
        if parent.nodeid not in self.marked_parents:
            self.marked_parents[parent.nodeid] = parent.get_closest_marker(MARKER) is not None
        return self.marked_parents[parent.nodeid]

    def uses_redactkey(self, item: pytest.Item) -> bool:
        """Whether `item` takes one of the plugin's fixtures or has the marker (worked
        out at collection, kept for its setup)."""
        uses = item.stash.get(_USES_KEY, None)
        if uses is None:
            uses = item.stash[_USES_KEY] = self._uses_redactkey(item)
        return uses

    def _uses_redactkey(self, item: pytest.Item) -> bool:
        names = getattr(item, "fixturenames", ())
        info = getattr(item, "_fixtureinfo", None)
        for name in REDACTKEY_FIXTURES.intersection(names):
            if name not in _GENERIC_FIXTURES:
                return True
            definitions = info.name2fixturedefs.get(name) if info is not None else None
            if definitions and _defined_here(definitions[-1]):
                return True
        return self.marked(item)

    def overridden(self, item: pytest.Item, name: str) -> bool:
        """Whether the fixture `name` that `item` sees is the project's, not the plugin's
        (then the test asks pytest for it); worked out once for the tests of a module or
        class. When pytest cannot tell (its internals moved), the test asks pytest."""
        where = (item.parent.nodeid if item.parent is not None else "", name)
        if where not in self.overrides:
            try:
                definitions = item.session._fixturemanager.getfixturedefs(name, item)
                ours = not definitions or _defined_here(definitions[-1])
            except Exception:  # (getfixturedefs took a node id before pytest 8.1)
                ours = False
            self.overrides[where] = not ours
        return self.overrides[where]

    def recorder(self, item: pytest.Item) -> Recorder:
        """The plugin's own Recorder of `item` (built once, on first use)."""
        recorder = item.stash.get(_RECORDER_KEY, None)
        if recorder is None:
            slots = (request_of(item).getfixturevalue("redactkey_secret_slots")
                     if self.overridden(item, "redactkey_secret_slots") else [])
            nodeid = item.nodeid
            on_drift = ((lambda error: self.add_drift(nodeid, error))
                        if self.options.verify == "report" else None)
            recorder = item.stash[_RECORDER_KEY] = self.shared.recorder(item, slots, on_drift)
        return recorder

    # -- collection: which tests use which fixture directory

    def _settings_or_none(self, item: pytest.Item) -> RedactkeySettings | None:
        if not self.uses_redactkey(item):
            return None
        try:
            return settings_for(item)
        except pytest.UsageError:
            return None  # reported when the test sets up

    def _dir_info(self, settings: RedactkeySettings) -> tuple[str, dict[str, Any]]:
        shown = self.shown_dirs.get(settings.fixture_dir)
        if shown is None:
            shown = self.shown_dirs[settings.fixture_dir] = shown_path(
                settings.fixture_dir, self.config.rootpath)
        return shown, self.part["dirs"].setdefault(shown, new_dir())

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.part["collect_errors"] += 1

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.part["deselected"] += len(items)
        for item in items:
            settings = self._settings_or_none(item)
            if settings is not None:
                self._dir_info(settings)[1]["deselected"] += 1

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            settings = self._settings_or_none(item)
            if settings is not None:
                shown, info = self._dir_info(settings)
                info["tests"].append(settings.nodeid)
                self.dir_of[settings.nodeid] = shown
                info["live"] = info["live"] or "live" in (settings.mode, settings.model_mode)

    def add_drift(self, nodeid: str, error: DriftError) -> None:
        """Verify with --redactkey-verify=report: keep the drift for the summary and report."""
        self.part["used"] = True
        self.part["drifts"].append({
            "test": nodeid, "file": shown_path(error.path, self.config.rootpath),
            "kind": error.kind, "key": error.key,
            "differences": [{"pointer": p, "what": w} for p, w in error.differences],
        })

    # -- each test: the guard around every phase, its calls once it ends

    def _guard(self, item: pytest.Item) -> NetworkGuard | None:
        if self.options.guard == "off" or (self.options.guard == "used"
                                           and not self.uses_redactkey(item)):
            return None
        max_age, on_expiry = self.shared.expiry
        if max_age is not None and on_expiry == "rerecord":
            return None  # an expired fixture is recorded again, live
        settings = settings_for(item)  # a bad marker is reported here, in setup
        # Replay refuses every connection; recording (no mode "live") refuses those that
        # bypass the transport of a test that took one, e.g. an async slot left empty.
        if not settings.replays_only and not (
            "live" not in (settings.mode, settings.model_mode)
            and not TRANSPORT_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))
        ):
            return None
        self.part["used"] = True  # (a run whose tests were guarded gets its summary)
        return NetworkGuard(item.nodeid, settings.mode, allow_loopback=settings.allow_loopback,
                            blocked=self.part["blocked"], how_to_record=settings.how_to_record[1])

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        self.item = item  # the fixtures set up now are this test's
        if item.nodeid in self.dir_of:
            self.part["used"] = True
        guard = item.stash[_GUARD_KEY] = self._guard(item)
        with guard or contextlib.nullcontext():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        shown = self.dir_of.get(item.nodeid)
        if shown is not None:
            self.part["dirs"][shown]["ran"].append(item.nodeid)
        with item.stash.get(_GUARD_KEY, None) or contextlib.nullcontext():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        try:
            with item.stash.get(_GUARD_KEY, None) or contextlib.nullcontext():
                return (yield)
        finally:
            if _GUARD_KEY in item.stash:  # the test's last phase: nothing of it is kept
                del item.stash[_GUARD_KEY]
            recorder = item.stash.get(_RECORDER_KEY, None)
            if recorder is not None:  # its fixtures are torn down: its calls join the run
                del item.stash[_RECORDER_KEY]
                self.part["used"] = True
                if isinstance(recorder.store, TrackedStore) and recorder.store.calls:
                    self.stores.append(recorder.store)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not report.failed:
            return report
        notes: list[str] = []
        guard = item.stash.get(_GUARD_KEY, None)
        if guard is not None and guard.refused:
            # An SDK may wrap or swallow the error; say what happened regardless.
            prefix = f"{item.nodeid}: "
            notes.extend(dict.fromkeys(str(e).removeprefix(prefix) for e in guard.refused))
        settings = item.stash.get(SETTINGS_KEY, None)
        miss = _missing_in(call.excinfo.value) if call.excinfo is not None else None
        if miss is not None:
            notes.append(f"a recorded call is missing; to record it: {miss.how_to_record}")
            if settings is not None and miss.how_to_record not in settings.how_to_record:
                notes.append(
                    f"the call was made through a layer built apart from the redactkey "
                    f"fixture, which reads {MODE_ENV} itself, not this test's mode "
                    f"({settings.mode}); build the client from the redactkey fixture "
                    "(redactkey.transport(), requests_session(), aiohttp_session(), "
                    "boto3_client()) to follow --redactkey-mode")
        if notes:
            report.sections.append(("redactkey", "\n".join(notes)))
        return report

    # -- end of session: merge, summarise, report

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        if error is not None:
            worker = getattr(node, "gateway", None)
            self.part["partial"].append(
                f"xdist worker {getattr(worker, 'id', '?')} was lost before the end")
        part = (getattr(node, "workeroutput", None) or {}).get("redactkey")
        if part is not None:
            self.worker_parts.append(part)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        root = self.config.rootpath
        for store in self.stores:
            self.part["events"].extend(store.events(root))
        self.stores.clear()
        if hasattr(self.config, "workerinput"):
            self.config.workeroutput["redactkey"] = self.part  # type: ignore[attr-defined]
            return
        self.part["partial"].extend(self._selection_reasons(session))
        merged = merge_parts([self.part, *self.worker_parts])
        if not (merged["used"] or merged["blocked"]):
            return  # no redactkey test ran (none collected, --collect-only): no summary
        summary = self.summary = RunSummary.of(merged, root)
        path = self.options.report_path
        if path is not None:
            from ..fixtures._format import dump_document
            from ..fixtures._store import atomic_write

            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, dump_document(summary.document(
                self.options.mode, self.options.model_mode, root, path)))
            self.report_written = path
        failing = summary.drifted  # report mode lets every test finish; the run still fails
        if self.options.fail_unused and summary.unused:
            self.failed_unused = True
            failing = failing or [{}]
        if failing and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _selection_reasons(self, session: pytest.Session) -> list[str]:
        """What in the invocation narrowed the run to a subset of the suite."""
        option = self.config.option
        reasons = [f"{flag} {value!r} selected a subset of the tests"
                   for flag, value in (("-k", getattr(option, "keyword", "")),
                                       ("-m", getattr(option, "markexpr", ""))) if value]
        if self.config.args_source == pytest.Config.ArgsSource.ARGS and any(
            "::" in str(arg) or not (self.config.invocation_params.dir / str(arg)).is_dir()
            for arg in self.config.args
        ):
            # a fixture directory shared by several modules would look partly unused
            reasons.append("tests were chosen by file or node id")
        if session.shouldfail or session.shouldstop:
            reasons.append("the run stopped early (-x, --maxfail or an interruption)")
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:
            reasons.append("the run was interrupted")
        return reasons

    def _modes_line(self) -> str:
        source = " (default)" if self.options.mode_from == "default" else ""
        return f"mode {self.options.mode}{source}, model calls {self.options.model_mode}"

    def pytest_report_header(self) -> str:
        return f"redactkey: {self._modes_line()}"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = self.summary
        if summary is None:
            return
        terminalreporter.section("redactkey")
        terminalreporter.line(self._modes_line())
        for text, red in summary.lines():
            terminalreporter.line(text, red=red)
        if self.report_written is not None:
            terminalreporter.line(f"run report: {self.report_written}")
        if self.failed_unused:
            count = len(summary.unused)
            terminalreporter.line(
                f"FAILED: {count} unused fixture file{'' if count == 1 else 's'} "
                "(--redactkey-fail-unused); delete them or the tests that stopped using them",
                red=True)
