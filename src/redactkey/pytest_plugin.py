"""The redactkey pytest plugin: record once, replay offline in CI, and know what was used.

Registered through the ``pytest11`` entry point ``redactkey``; ``-p no:redactkey``
turns it off. Each test gets one `Recorder`, the ``redactkey`` fixture, settled from
its marker, the options, the environment and the ini file; the other fixtures are views
of it (``redactkey_transport`` is ``redactkey.transport()``, ``model_fixtures`` is
``redactkey.models``, ...). The plugin adds

- ``--redactkey-mode`` / ``--redactkey-model-mode`` (same meaning as
  ``REDACTKEY_MODE`` / ``REDACTKEY_MODEL_MODE``; the option wins; default
  ``replay``) and the ``redactkey(path=..., mode=..., model_mode=...)`` marker;
- a per-test network guard in replay (``--redactkey-allow-loopback`` for local servers);
- ``--redactkey-verify=fail|report``, ``--redactkey-max-age`` / ``--redactkey-on-expiry``;
- an end-of-session summary and a JSON run report, merged across pytest-xdist workers.

Nothing is patched at import time; the network guard exists only while a guarded
test runs. The fixtures take no other fixture: each costs a test a setup of its own, so
they reach the test's Recorder directly (built once per test, from what the session
builds once) unless the project overrides ``redactkey``.
"""

from __future__ import annotations

import os
import shlex
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._errors import DriftError, MissingFixtureError, RedactkeyError
from .clients._guard import NetworkGuard, NetworkRefusedError
from .clients._recorder import Recorder
from .fixtures._age import EXPIRY_ACTIONS, ExpiryAction, FixtureAges, parse_duration
from .fixtures._store import CassetteStore, FixtureDir, kind_for_file_name, replay_reader
from .record._config import Config, load_config
from .record._modes import MODE_ENV, MODEL_MODE_ENV, MODES, Mode, parse_mode
from .record._replay import ModelFixtures
from .record._report import RunSummary, merge_parts, new_dir, new_part
from .record._tools import ToolFixtures
from .redact._redactor import Redactor
from .secrets._run_secrets import RunSecrets

if TYPE_CHECKING:
    from .clients._httpx import FixtureTransport
    from .fixtures._answers import AnswerNormalizer
    from .fixtures._format import Fixture
    from .fixtures._store import FixtureStore
    from .fixtures._verify import VerifyRules

__all__ = ["NetworkRefusedError", "RedactkeySettings", "TrackedStore"]

MARKER = "redactkey"
GUARD_SCOPES = ("used", "all", "off")
VERIFY_POLICIES = ("fail", "report")
STORES = ("dir", "cassette")

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

_RUN_KEY = pytest.StashKey["_Run"]()
_SETTINGS_KEY = pytest.StashKey["RedactkeySettings"]()
_RECORDER_KEY = pytest.StashKey[Recorder]()
_GUARD_KEY = pytest.StashKey["NetworkGuard | None"]()


# --------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("redactkey", "redactkey: record and replay model and tool calls")
    option = group.addoption
    option("--redactkey-mode", dest="redactkey_mode", choices=MODES, default=None,
           help=f"live | record | replay | auto | verify for tool and model calls (default: "
           f"${MODE_ENV}, else replay)")
    option("--redactkey-model-mode", dest="redactkey_model_mode", choices=MODES, default=None,
           help=f"override the mode for model calls only (default: ${MODEL_MODE_ENV}, else "
           "the --redactkey-mode)")
    option("--redactkey-allow-loopback", dest="redactkey_allow_loopback", action="store_true",
           default=None, help="in replay, allow connections to loopback addresses (local servers)")
    option("--redactkey-fail-unused", dest="redactkey_fail_unused", action="store_true",
           default=False, help="fail the run when fixture files were not used by any test")
    option("--redactkey-verify", dest="redactkey_verify", choices=VERIFY_POLICIES, default=None,
           help="in verify mode: fail a test whose live answer drifted from its recording "
           "(default), or report every drift in the summary and run report")
    option("--redactkey-max-age", dest="redactkey_max_age", default=None, metavar="DURATION",
           help="fixtures last committed longer ago than this (30d, 12h, 2w) are expired "
           "(default: max-age in [tool.redactkey], else never)")
    option("--redactkey-on-expiry", dest="redactkey_on_expiry", choices=EXPIRY_ACTIONS,
           default=None, help="what an expired fixture does: warn (default), fail, or rerecord "
           "(record it again; the network guard is off)")
    option("--redactkey-block-network", dest="redactkey_block_network", action="store_true",
           default=False, help="in replay, refuse network connections in every test, not only "
           "in those that use redactkey (like pytest-recording's --block-network)")
    option("--redactkey-store", dest="redactkey_store", choices=STORES, default=None,
           help="dir: one file per call in the fixture directory (default); cassette: one "
           "JSON cassette per fixture directory, <dir>.json")
    option("--redactkey-report", dest="redactkey_report", default=None, metavar="PATH",
           help="where to write the JSON run report (default: ini redactkey_report)")
    ini = parser.addini
    ini("redactkey_fixture_dir", "fixture directory, relative to the rootdir; {module} is the "
        "test module's name and {module_path} its path without .py (default: <test "
        "dir>/fixtures/<module>)", default="")
    ini("redactkey_store", "dir (one file per call, default) or cassette (<dir>.json)",
        default="dir")
    ini("redactkey_allow_loopback", "in replay, allow connections to loopback addresses",
        type="bool", default=False)
    ini("redactkey_network_guard", "which tests get the replay network guard: used (tests "
        "using redactkey fixtures or the marker), all, off", default="used")
    ini("redactkey_verify", "in verify mode: fail (default) or report", default="fail")
    ini("redactkey_hosts", "host aliases, one 'alias = canonical' per line (127.0.0.1:8765 = "
        "api.openai.com): calls to a proxy or fake server key as calls to the real host "
        "(added to [tool.redactkey] hosts)", type="linelist", default=[])
    ini("redactkey_min_secret_length", "secrets shorter than this are refused when recording "
        "and skipped in replay (default: min-secret-length of [tool.redactkey], else 8)",
        default="")
    ini("redactkey_report", "JSON run report path, relative to the rootdir ('' to not write "
        "it)", default=".redactkey-report.json")


def _mode(value: str | None, source: str) -> Mode | None:
    try:
        return parse_mode(value, source)
    except RedactkeyError:
        raise pytest.UsageError(
            f"{source}={value!r} is not a redactkey mode; use one of {', '.join(MODES)}"
        ) from None


def _choice(value: str, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise pytest.UsageError(f"ini {name}={value!r}: use one of {', '.join(choices)}")
    return value


@dataclass(frozen=True)
class _Options:
    """Session-wide settings, resolved once from options, environment and ini."""

    mode: Mode | None  # explicit session mode (option, else environment), None for default
    mode_from: str  # "option", "env" or "default"
    model_mode: Mode | None
    model_mode_from: str  # "option", "env" or "mode" (the session mode)
    allow_loopback: bool
    guard: str
    fixture_dir: str
    report_path: Path | None
    fail_unused: bool
    verify: str
    max_age: str | None
    on_expiry: ExpiryAction | None
    store: str

    @classmethod
    def of(cls, config: pytest.Config) -> _Options:
        def env(name: str) -> str | None:
            # Read as the record layer reads it: blanks and case do not matter.
            value = os.environ.get(name)
            return None if value is None else value.strip().lower()

        def settled(option: str, flag: str, variable: str,
                    fallback: str) -> tuple[Mode | None, str]:
            given = _mode(config.getoption(option), flag)
            if given is not None:
                return given, "option"
            from_env = _mode(env(variable), variable)
            return (from_env, "env") if from_env is not None else (None, fallback)

        mode, mode_from = settled("redactkey_mode", "--redactkey-mode", MODE_ENV, "default")
        model_mode, model_mode_from = settled("redactkey_model_mode", "--redactkey-model-mode",
                                              MODEL_MODE_ENV, "mode")
        loopback = config.getoption("redactkey_allow_loopback")
        guard = _choice(str(config.getini("redactkey_network_guard")).strip() or "used",
                        "redactkey_network_guard", GUARD_SCOPES)
        store = config.getoption("redactkey_store") or _choice(
            str(config.getini("redactkey_store")).strip() or "dir", "redactkey_store", STORES)
        report = config.getoption("redactkey_report")
        report = str(config.getini("redactkey_report")) if report is None else report
        verify = config.getoption("redactkey_verify") or _choice(
            str(config.getini("redactkey_verify")).strip(), "redactkey_verify", VERIFY_POLICIES)
        max_age = config.getoption("redactkey_max_age")
        if max_age is not None:
            try:
                parse_duration(max_age)
            except RedactkeyError as exc:
                raise pytest.UsageError(f"--redactkey-max-age: {exc}") from None
        return cls(
            mode=mode, mode_from=mode_from, model_mode=model_mode,
            model_mode_from=model_mode_from,
            allow_loopback=(bool(config.getini("redactkey_allow_loopback")) if loopback is None
                            else bool(loopback)),
            guard="all" if config.getoption("redactkey_block_network") else guard,
            fixture_dir=str(config.getini("redactkey_fixture_dir")).strip(),
            report_path=config.rootpath / report if report.strip() else None,
            fail_unused=bool(config.getoption("redactkey_fail_unused")),
            verify=verify, max_age=max_age, on_expiry=config.getoption("redactkey_on_expiry"),
            store=store,
        )


@dataclass(frozen=True)
class RedactkeySettings:
    """What redactkey does for one test: its modes, its fixture directory, and what a miss
    of a tool call and of a model call advises (which depends on where the modes came
    from: a marker is changed in the code, an option on the command line)."""

    nodeid: str
    mode: Mode
    model_mode: Mode
    fixture_dir: Path
    allow_loopback: bool
    how_to_record: tuple[str, str] = ("", "")

    @property
    def replays_only(self) -> bool:
        """True when neither tool nor model calls may go live: the network guard applies."""
        return self.mode == "replay" and self.model_mode == "replay"


def _marker_kwargs(item: pytest.Item) -> dict[str, Any]:
    # Closest marker wins per keyword: a function marker overrides a module's pytestmark.
    merged: dict[str, Any] = {}
    for marker in reversed(list(item.iter_markers(MARKER))):
        if marker.args:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MARKER} takes keywords "
                                    "only (path=..., mode=..., model_mode=...)")
        unknown = set(marker.kwargs) - {"path", "mode", "model_mode"}
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARKER} got unknown "
                f"{'keyword' if len(unknown) == 1 else 'keywords'} "
                f"{', '.join(sorted(unknown))}; it takes path, mode and model_mode")
        merged.update(marker.kwargs)
    return merged


def _fixture_dir(item: pytest.Item, template: str, marker_path: Any) -> Path:
    test_file = Path(str(item.path))
    if marker_path is not None:
        path = Path(os.fspath(marker_path))
        # normalised, so the summary shows shared/chat rather than tests/../shared/chat
        return Path(os.path.normpath(path if path.is_absolute() else test_file.parent / path))
    if not template:
        return test_file.parent / "fixtures" / test_file.stem
    rootpath = item.config.rootpath
    try:
        rel = test_file.relative_to(rootpath).with_suffix("")
    except ValueError:
        rel = Path(test_file.stem)
    prefix = Path(template.split("{module_path}", 1)[0])
    if ("{module_path}" in template and prefix.parts and len(rel.parts) > 1
            and rel.parts[0] == prefix.parts[0]):
        # tests/recorded/{module_path} for tests/test_x.py is tests/recorded/test_x,
        # not tests/recorded/tests/test_x
        rel = rel.relative_to(rel.parts[0])
    text = template.replace("{module_path}", rel.as_posix()).replace("{module}", test_file.stem)
    return Path(os.path.normpath(rootpath / text))


def _advice(mode: Mode, mode_from: str, model_mode: Mode, model_from: str) -> tuple[str, str]:
    """What a miss of a tool call and of a model call advises: never the command just run
    (a marker that keeps a test in replay is changed in the code, not on the command line)."""
    def marker(keyword: str, value: str) -> str:
        return (f"this test's @pytest.mark.{MARKER}({keyword}={value!r}) sets it: change it "
                f"to {keyword}='record' (or 'auto', which records only what is missing)")

    tool = (marker("mode", mode) if mode_from == "marker" else
            "run with --redactkey-mode=record (or auto, which records only what is missing)")
    if model_from == "marker":
        model = marker("model_mode", model_mode)
    elif model_from == "marker mode":
        model = marker("mode", model_mode)
    elif model_from in ("option", "env"):
        model = ("run with --redactkey-model-mode=record (or auto, which records only what "
                 "is missing)")
    else:
        model = ("run with --redactkey-mode=record, or --redactkey-mode=auto to record only "
                 "what is missing (--redactkey-model-mode=auto for model calls alone)")
    return tool, model


def _settings_for(item: pytest.Item) -> RedactkeySettings:
    settings = item.stash.get(_SETTINGS_KEY, None)
    if settings is not None:
        return settings
    run = item.config.stash[_RUN_KEY]
    options = run.options
    kwargs = _marker_kwargs(item) if run.marked(item) else {}
    where = f"{item.nodeid}: @pytest.mark.{MARKER}"
    marker_mode = _mode(kwargs.get("mode"), f"{where} mode")
    marker_model_mode = _mode(kwargs.get("model_mode"), f"{where} model_mode")
    # The marker is the most specific: it beats the option, which beats the environment.
    mode, mode_from = ((marker_mode, "marker") if marker_mode else
                       (options.mode or "replay", options.mode_from))
    if marker_model_mode:
        model_mode, model_from = marker_model_mode, "marker"
    elif marker_mode:
        model_mode, model_from = marker_mode, "marker mode"
    elif options.model_mode:
        model_mode, model_from = options.model_mode, options.model_mode_from
    else:
        model_mode, model_from = mode, mode_from
    settings = item.stash[_SETTINGS_KEY] = RedactkeySettings(
        nodeid=item.nodeid, mode=mode, model_mode=model_mode,
        fixture_dir=run.shared.fixture_dir(item, kwargs.get("path")),
        allow_loopback=options.allow_loopback,
        how_to_record=_advice(mode, mode_from, model_mode, model_from),
    )
    return settings


# --------------------------------------------------------------------------- accounting


class TrackedStore:
    """A fixture store that tells the session which calls a test replayed or recorded.

    It delegates to the real store (a `FixtureDir` by default); the test's Recorder
    writes and reads through it, so the summary needs nothing from the layers.
    """

    def __init__(self, inner: FixtureStore, nodeid: str, *, shown: str | None = None) -> None:
        self.inner = inner
        self.nodeid = nodeid
        self.shown = shown  # the store's location as reports show it, when known
        # (kind, key) -> "replayed" | "recorded" | "missing", in first-seen order
        self.calls: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()  # a test may call from several threads

    def __repr__(self) -> str:
        return f"TrackedStore({self.inner!r})"

    @property
    def location(self) -> str:
        return self.inner.location

    @property
    def path(self) -> Path:
        """The fixture directory (or cassette file)."""
        return Path(self.inner.location)

    def _track(self, kind: str, key: str, fixture: Fixture | None) -> Fixture | None:
        with self._lock:
            if self.calls.get((kind, key)) != "recorded":
                self.calls[(kind, key)] = "missing" if fixture is None else "replayed"
        return fixture

    def get(self, kind: str, key: str) -> Fixture | None:
        return self._track(kind, key, self.inner.get(kind, key))

    def get_replayed(self, kind: str, key: str) -> Fixture | None:
        return self._track(kind, key, replay_reader(self.inner)(kind, key))

    def put(self, fixture: Fixture) -> Path:
        path = self.inner.put(fixture)
        with self._lock:
            self.calls[(fixture.kind, fixture.key)] = "recorded"
        return path

    def path_for(self, kind: str, key: str) -> Path:
        return self.inner.path_for(kind, key)

    def iter_fixtures(self, kind: str | None = None) -> Iterator[Fixture]:
        return self.inner.iter_fixtures(kind)

    def recorded_requests(self, kind: str) -> Iterator[tuple[str, Any]]:
        return self.inner.recorded_requests(kind)

    def events(self, root: Path) -> list[dict[str, str]]:
        """What this test did, one JSON-ready record per call; paths relative to `root`."""
        with self._lock:
            calls = list(self.calls.items())
        store = self.shown if self.shown is not None else _shown(self.location, root)
        return [{"test": self.nodeid, "outcome": outcome, "kind": kind, "key": key,
                 "store": store, "file": _shown(self.path_for(kind, key), root)}
                for (kind, key), outcome in calls]


def _shown(path: str | Path, root: Path) -> str:
    """`path` relative to the rootdir when inside it (portable reports), else absolute."""
    path = Path(path)
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


# --------------------------------------------------------------------------- what tests share


class _Shared:
    """What every test's Recorder is made of, built once per session: the configuration,
    one store per fixture directory, the run's secrets and redactor, the layer settings."""

    def __init__(self, config: pytest.Config, options: _Options, part: dict[str, Any]) -> None:
        self.config = config
        self.options = options
        self.part = part  # the session's share of the run (stand-in secrets go there)
        self.fixture_dirs: dict[tuple[str, Any], Path] = {}
        self.stores: dict[Path, FixtureStore] = {}
        self.ages = FixtureAges()  # git is asked once per fixture tree for the whole session
        # (whether it records, the environment read, the secrets): copied for each test
        self._secrets: tuple[bool, dict[Any, Any], RunSecrets] | None = None
        self._redactors: tuple[RunSecrets | None, Redactor] | None = None

    def fixture_dir(self, item: pytest.Item, marker_path: Any) -> Path:
        """The fixture directory of a test (worked out once per module and marker path)."""
        where = (str(item.path), None if marker_path is None else os.fspath(marker_path))
        if where not in self.fixture_dirs:
            self.fixture_dirs[where] = _fixture_dir(item, self.options.fixture_dir, marker_path)
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
    def layer_settings(self) -> tuple[VerifyRules, tuple[AnswerNormalizer, ...]]:
        """The verify rules and answer normalizers every test's layers share."""
        return self.project.verify.rules(), self.project.answers.normalizers()

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

    def store(self, directory: Path) -> FixtureStore:
        """The store of a fixture directory, one object for every test that uses it."""
        if directory not in self.stores:
            self.stores[directory] = (
                CassetteStore(directory.with_name(directory.name + ".json"))
                if self.options.store == "cassette" else FixtureDir(directory))
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
            self._redactors = (run, template)
        return self._redactors[1].over(secrets)

    def recorder(self, item: pytest.Item, slots: list[object],
                 on_drift: Callable[[DriftError], None] | None) -> Recorder:
        """The Recorder of one test."""
        settings = _settings_for(item)
        inner = self.store(settings.fixture_dir)
        store = TrackedStore(inner, item.nodeid, shown=_shown(inner.location,
                                                                self.config.rootpath))
        secrets = self.secrets(bool({settings.mode, settings.model_mode} & {"record", "auto"}),
                               slots)
        verify, normalizers = self.layer_settings
        max_age, on_expiry = self.expiry
        return Recorder(
            store, mode=settings.mode, model_mode=settings.model_mode, secrets=secrets,
            redactor=self.redactor(secrets), config=self.project, verify=verify,
            answer_normalizers=normalizers, max_age=max_age, on_expiry=on_expiry,
            ages=self.ages, label=item.nodeid, on_drift=on_drift,
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


# --------------------------------------------------------------------------- the run


def _defined_here(definition: Any) -> bool:
    return getattr(getattr(definition, "func", None), "__module__", "") == __name__


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


class _Run:
    """One process's share of the run: which tests use which fixture directory, the
    network guard around each guarded test, and what the tests replayed and recorded;
    xdist workers ship theirs to the controller, which reports."""

    def __init__(self, config: pytest.Config, options: _Options) -> None:
        self.config = config
        self.options = options
        self.part = new_part()
        self.shared = _Shared(config, options, self.part)
        self.stores: list[TrackedStore] = []  # of finished tests, made into events at the end
        self.worker_parts: list[dict[str, Any]] = []
        self.summary: RunSummary | None = None
        self.report_written: Path | None = None
        self.failed_unused = False
        self.dir_of: dict[str, str] = {}  # nodeid -> fixture directory, for collected tests
        self.marked_parents: dict[str, bool] = {}
        self.overrides: dict[str, bool] = {}
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
        names = getattr(item, "fixturenames", ())
        info = getattr(item, "_fixtureinfo", None)
        for name in REDACTKEY_FIXTURES.intersection(names):
            if name not in _GENERIC_FIXTURES:
                return True
            definitions = info.name2fixturedefs.get(name) if info is not None else None
            if definitions and _defined_here(definitions[-1]):
                return True
        return self.marked(item)

    def overridden(self, name: str) -> bool:
        """Whether the project defines fixture `name` too (then each test asks pytest)."""
        if name not in self.overrides:
            manager = getattr(self.config.pluginmanager.get_plugin("funcmanage"),
                              "_arg2fixturedefs", None)
            definitions = manager.get(name, []) if isinstance(manager, dict) else [None]
            self.overrides[name] = not all(_defined_here(d) for d in definitions)
        return self.overrides[name]

    def recorder(self, item: pytest.Item) -> Recorder:
        """The plugin's own Recorder of `item` (built once, on first use)."""
        recorder = item.stash.get(_RECORDER_KEY, None)
        if recorder is None:
            slots = (_request(item).getfixturevalue("redactkey_secret_slots")
                     if self.overridden("redactkey_secret_slots") else [])
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
            return _settings_for(item)
        except pytest.UsageError:
            return None  # reported when the test sets up

    def _dir_info(self, settings: RedactkeySettings) -> tuple[str, dict[str, Any]]:
        shown = _shown(settings.fixture_dir, self.config.rootpath)
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
            "test": nodeid, "file": _shown(error.path, self.config.rootpath),
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
        settings = _settings_for(item)  # a bad marker is reported here, in setup
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
        if guard is None:
            return (yield)
        with guard:
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        shown = self.dir_of.get(item.nodeid)
        if shown is not None:
            self.part["dirs"][shown]["ran"].append(item.nodeid)
        guard = item.stash.get(_GUARD_KEY, None)
        if guard is None:
            return (yield)
        with guard:
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        guard = item.stash.get(_GUARD_KEY, None)
        try:
            if guard is None:
                return (yield)
            with guard:
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
        notes = []
        blocked = self.part["blocked"].get(item.nodeid)
        settings = item.stash.get(_SETTINGS_KEY, None)
        if blocked and settings is not None:
            # An SDK may wrap or swallow the error; say what happened regardless.
            why = (f"in replay: {', '.join(blocked)}; {settings.how_to_record[1]}"
                   if settings.replays_only else
                   f"while recording: {', '.join(blocked)} (they went past every redactkey "
                   "face, so nothing of them would be recorded)")
            notes.append(f"{'network connection' if len(blocked) == 1 else 'network connections'}"
                         f" refused {why}")
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
            from .fixtures._format import dump_document
            from .fixtures._store import atomic_write

            mode = self.options.mode or "replay"
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, dump_document(summary.document(
                mode, self.options.model_mode or mode, root, path)))
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
        mode = self.options.mode or "replay"
        source = "" if self.options.mode else " (default)"
        return f"mode {mode}{source}, model calls {self.options.model_mode or mode}"

    def pytest_report_header(self) -> str:
        return f"redactkey: {self._modes_line()}"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = self.summary
        if summary is None:
            return
        line = terminalreporter.line
        terminalreporter.section("redactkey")
        line(self._modes_line())
        line(f"replayed {len(summary.replayed)}, recorded {len(summary.recorded)}, "
             f"missing {len(summary.missing)}, unused files {len(summary.unused)}")
        if summary.missing:
            line("missing (no recorded call; each failed test says how to record it):")
            for event in summary.missing:
                line(f"  {event['test']}: {event['kind']} {event['key'][:12]}… "
                     f"in {event['store']}")
        if summary.blocked:
            line("network connections refused:")
            for test, targets in sorted(summary.blocked.items()):
                line(f"  {test}: {', '.join(targets)}")
        if summary.drifted:
            line(f"drifted from their recordings (verify): {len(summary.drifted)}", red=True)
            for drift in summary.drifted:
                line(f"  {drift['test']}: {drift['file']}")
                for difference in drift["differences"]:
                    line(f"    {difference['pointer'] or '(root)'}: {difference['what']}")
            line(f"to re-record just these: {summary.rerecord_command()}")
        if summary.unused:
            line("unused fixture files (no test replayed or recorded them):")
            for path in summary.unused:
                line(f"  {path}")
        for note in summary.unchecked:
            line(f"unused files not checked in {note}")
        if summary.dummies:
            line("stand-in secrets skipped (nothing was recorded; recording needs the real "
                 "credential):")
            for slot, reason in sorted(summary.dummies.items()):
                line(f"  {slot}: {reason}")
        if self.report_written is not None:
            line(f"run report: {self.report_written}")
        if self.failed_unused:
            count = len(summary.unused)
            line(f"FAILED: {count} unused fixture file{'' if count == 1 else 's'} "
                 "(--redactkey-fail-unused); delete them or the tests that stopped using "
                 "them", red=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(path=None, mode=None, model_mode=None): redactkey fixture directory "
        "(relative to the test file) and record/replay mode for these tests",
    )
    run = _Run(config, _Options.of(config))
    config.stash[_RUN_KEY] = run
    config.pluginmanager.register(run, "redactkey-session")
    config.pluginmanager.register(_Fixtures(run), "redactkey-fixtures")


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(_RUN_KEY, None)
    if run is not None:
        for name in ("redactkey-fixtures", "redactkey-session"):
            config.pluginmanager.unregister(name=name)
        del config.stash[_RUN_KEY]


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


# --------------------------------------------------------------------------- fixtures


def _request(item: pytest.Item) -> pytest.FixtureRequest:
    """The fixture request of a test item (pytest keeps it on every item that takes
    fixtures, functions and doctests alike)."""
    request = getattr(item, "_request", None)
    if request is None:
        raise pytest.UsageError(
            f"{item.nodeid}: this kind of test item takes no fixtures, so it cannot use "
            "an override of a redactkey fixture; use the plugin's own fixture")
    return request  # type: ignore[no-any-return]


class _Fixtures:
    """The plugin's fixtures: views of the test's Recorder (the module docstring says why
    they take no fixtures; the test being set up is the one the setup hook saw last)."""

    def __init__(self, run: _Run) -> None:
        self.run = run

    def _item(self) -> pytest.Item:
        if self.run.item is None:
            raise pytest.UsageError(
                "redactkey's fixtures are set up for a test; no test is being set up")
        return self.run.item

    def _recorder(self) -> Recorder:
        """The test's Recorder: the project's `redactkey` fixture when it has one."""
        item = self._item()
        if self.run.overridden("redactkey"):
            return _request(item).getfixturevalue("redactkey")  # type: ignore[no-any-return]
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
        return _settings_for(self._item())

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
        inner = (_request(self._item()).getfixturevalue("redactkey_inner_transport")
                 if self.run.overridden("redactkey_inner_transport") else None)
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
