"""The redactkey pytest plugin: record once, replay offline in CI, and know what was used.

Registered through the ``pytest11`` entry point ``redactkey``; ``-p no:redactkey``
turns it off. The plugin is glue: the store, the redactor, the record/replay layer
and the transport do the work. It adds

- ``--redactkey-mode`` / ``--redactkey-model-mode`` (same meaning as
  ``REDACTKEY_MODE`` / ``REDACTKEY_MODEL_MODE``; the option wins; default
  ``replay``) and the ``redactkey(path=..., mode=..., model_mode=...)`` marker;
- fixtures: ``run_secrets``, ``redactor``, ``fixture_store``, ``model_fixtures``,
  ``redactkey_transport`` (for openai / anthropic clients, httpx and httpx2);
- a per-test network guard in replay (``--redactkey-allow-loopback`` for local servers);
- ``--redactkey-verify=fail|report`` for ``--redactkey-mode=verify``: a drift fails its
  test, or every drift of the run is collected into the summary and the run report;
- ``--redactkey-max-age`` / ``--redactkey-on-expiry`` (or ``max-age`` / ``on-expiry`` in
  ``[tool.redactkey]``): what happens to a replayed fixture older than that (by git);
- an end-of-session summary and a JSON run report, merged across pytest-xdist workers.

Nothing is patched at import time; the network guard exists only while a guarded
test runs.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import socket
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import pytest

from ._errors import DriftError, FixtureError, MissingFixtureError, RedactkeyError, UsageError
from .fixtures._age import EXPIRY_ACTIONS, ExpiryAction, FixtureAges, parse_duration
from .fixtures._store import CassetteStore, FixtureDir, kind_for_file_name, replay_reader
from .record._config import Config, load_config
from .record._replay import (
    DEFAULT_MODE,
    MODE_ENV,
    MODEL_MODE_ENV,
    MODES,
    Mode,
    ModelFixtures,
    ToolFixtures,
    parse_mode,
)
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

# Fixtures whose use makes a test a "redactkey test" (network guard, unused accounting).
REDACTKEY_FIXTURES = frozenset({
    "fixture_store",
    "model_fixtures",
    "redactkey_settings",
    "redactkey_tool_transport",
    "redactkey_transport",
    "redactor",
    "run_secrets",
    "tool_fixtures",
})
STORES = ("dir", "cassette")

# Fixtures that hand a test a redactkey transport: in record mode its other connections
# are a bypass.
TRANSPORT_FIXTURES = frozenset({"redactkey_tool_transport", "redactkey_transport"})

_STATE_KEY = pytest.StashKey["_SessionState"]()
_SETTINGS_KEY = pytest.StashKey["RedactkeySettings"]()
_PIECES_KEY = pytest.StashKey["_TestPieces"]()
_GUARD_KEY = pytest.StashKey["_NetworkGuard | None"]()
_USES_KEY = pytest.StashKey[bool]()

HOW_TO_RECORD = "run with --redactkey-mode=record (or auto) to record it"
HOW_TO_RECORD_MODEL = (
    "run with --redactkey-mode=record, or --redactkey-mode=auto to record only what is "
    "missing (--redactkey-model-mode=auto for model calls alone)"
)


class NetworkRefusedError(FixtureError):
    """A test tried to reach the network while redactkey replays.

    Deliberately not an ``OSError``: HTTP clients turn ``OSError`` into their own
    connection errors and SDKs retry those, hiding the message.
    """

    def __init__(self, nodeid: str, target: str, mode: str) -> None:
        self.nodeid = nodeid
        self.target = target
        self.mode = mode
        if mode == "replay":
            why = (f"redactkey replays (mode {mode}) and a replay run never reaches the "
                   f"network; {HOW_TO_RECORD}, pass the client")
        else:
            # Recording: the connection bypassed the transport, so nothing of it would be
            # recorded and its replay would reach the network (docs/clients.md).
            why = (f"it did not go through a redactkey transport (mode {mode}), so it would "
                   "not be recorded and its replay would reach the network; give every "
                   "client slot, sync and async, (docs/clients.md)")
        super().__init__(
            f"{nodeid}: network connection to {target} refused: {why} "
            "the redactkey_transport fixture "
            "(http_client=httpx2.Client(transport=redactkey_transport)), or allow local "
            "servers with --redactkey-allow-loopback"
        )


# --------------------------------------------------------------------------- options


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("redactkey", "redactkey: record and replay model and tool calls")
    group.addoption(
        "--redactkey-mode", dest="redactkey_mode", choices=MODES, default=None,
        help=f"live | record | replay | auto | verify for tool and model calls (default: "
        f"${MODE_ENV}, else replay)",
    )
    group.addoption(
        "--redactkey-model-mode", dest="redactkey_model_mode", choices=MODES, default=None,
        help=f"override the mode for model calls only (default: ${MODEL_MODE_ENV}, else the "
        "--redactkey-mode)",
    )
    group.addoption(
        "--redactkey-allow-loopback", dest="redactkey_allow_loopback", action="store_true",
        default=None, help="in replay, allow connections to loopback addresses (local servers)",
    )
    group.addoption(
        "--redactkey-fail-unused", dest="redactkey_fail_unused", action="store_true",
        default=False, help="fail the run when fixture files were not used by any test",
    )
    group.addoption(
        "--redactkey-verify", dest="redactkey_verify", choices=VERIFY_POLICIES, default=None,
        help="in verify mode: fail a test whose live answer drifted from its recording "
        "(default), or report every drift in the summary and run report",
    )
    group.addoption(
        "--redactkey-max-age", dest="redactkey_max_age", default=None, metavar="DURATION",
        help="fixtures last committed longer ago than this (30d, 12h, 2w) are expired "
        "(default: max-age in [tool.redactkey], else never)",
    )
    group.addoption(
        "--redactkey-on-expiry", dest="redactkey_on_expiry", choices=EXPIRY_ACTIONS,
        default=None, help="what an expired fixture does: warn (default), fail, or rerecord "
        "(record it again; the network guard is off)",
    )
    group.addoption(
        "--redactkey-block-network", dest="redactkey_block_network", action="store_true",
        default=False, help="in replay, refuse network connections in every test, not only "
        "in those that use redactkey (like pytest-recording's --block-network)",
    )
    group.addoption(
        "--redactkey-store", dest="redactkey_store", choices=STORES, default=None,
        help="dir: one file per call in the fixture directory (default); cassette: one "
        "JSON cassette per fixture directory, <dir>.json",
    )
    group.addoption(
        "--redactkey-report", dest="redactkey_report", default=None, metavar="PATH",
        help="where to write the JSON run report (default: ini redactkey_report)",
    )
    parser.addini(
        "redactkey_fixture_dir",
        "fixture directory, relative to the rootdir; {module} is the test module's name and "
        "{module_path} its path without .py (default: <test dir>/fixtures/<module>)",
        default="",
    )
    parser.addini(
        "redactkey_store", "dir (one file per call, default) or cassette (<dir>.json)",
        default="dir",
    )
    parser.addini(
        "redactkey_allow_loopback", "in replay, allow connections to loopback addresses",
        type="bool", default=False,
    )
    parser.addini(
        "redactkey_network_guard",
        "which tests get the replay network guard: used (tests using redactkey fixtures or "
        "the marker), all, off",
        default="used",
    )
    parser.addini(
        "redactkey_verify", "in verify mode: fail (default) or report", default="fail",
    )
    parser.addini(
        "redactkey_hosts",
        "host aliases, one 'alias = canonical' per line (127.0.0.1:8765 = api.openai.com): "
        "calls to a proxy or fake server key as calls to the real host (added to "
        "[tool.redactkey] hosts)",
        type="linelist", default=[],
    )
    parser.addini(
        "redactkey_min_secret_length",
        "secrets shorter than this are refused when recording and skipped in replay "
        "(default: min-secret-length of [tool.redactkey], else 8)",
        default="",
    )
    parser.addini(
        "redactkey_report", "JSON run report path, relative to the rootdir ('' to not write it)",
        default=".redactkey-report.json",
    )


def _check_mode(value: str | None, source: str) -> Mode | None:
    try:
        return parse_mode(value, source)
    except RedactkeyError:
        raise pytest.UsageError(
            f"{source}={value!r} is not a redactkey mode; use one of {', '.join(MODES)}"
        ) from None


def _env(name: str) -> str | None:
    # Read as the record/replay layer reads it: surrounding blanks and case do not matter.
    value = os.environ.get(name)
    return None if value is None else value.strip().lower()


@dataclass(frozen=True)
class _ConfigSettings:
    """Session-wide settings, resolved once from options, environment and ini."""

    mode: Mode | None  # explicit session mode (option, else env), None for the default
    model_mode: Mode | None
    allow_loopback: bool
    guard: str
    fixture_dir: str
    report_path: Path | None
    fail_unused: bool
    verify: str = "fail"
    max_age: str | None = None
    on_expiry: ExpiryAction | None = None
    store: str = "dir"

    @classmethod
    def from_config(cls, config: pytest.Config) -> _ConfigSettings:
        mode = _check_mode(config.getoption("redactkey_mode"), "--redactkey-mode") or _check_mode(
            _env(MODE_ENV), MODE_ENV
        )
        model_mode = _check_mode(
            config.getoption("redactkey_model_mode"), "--redactkey-model-mode"
        ) or _check_mode(_env(MODEL_MODE_ENV), MODEL_MODE_ENV)
        loopback_opt = config.getoption("redactkey_allow_loopback")
        allow_loopback = (
            bool(config.getini("redactkey_allow_loopback")) if loopback_opt is None
            else bool(loopback_opt)
        )
        guard = str(config.getini("redactkey_network_guard")).strip() or "used"
        if guard not in GUARD_SCOPES:
            raise pytest.UsageError(
                f"ini redactkey_network_guard={guard!r}: use one of {', '.join(GUARD_SCOPES)}"
            )
        if config.getoption("redactkey_block_network"):
            guard = "all"
        store_opt = config.getoption("redactkey_store")
        store = str(config.getini("redactkey_store")).strip() or "dir" if store_opt is None \
            else str(store_opt)
        if store not in STORES:
            raise pytest.UsageError(
                f"ini redactkey_store={store!r}: use one of {', '.join(STORES)}"
            )
        report_opt = config.getoption("redactkey_report")
        report_text = str(config.getini("redactkey_report")) if report_opt is None else report_opt
        report_path = config.rootpath / report_text if report_text.strip() else None
        verify_opt = config.getoption("redactkey_verify")
        verify = str(config.getini("redactkey_verify")).strip() if verify_opt is None \
            else str(verify_opt)
        if verify not in VERIFY_POLICIES:
            raise pytest.UsageError(
                f"ini redactkey_verify={verify!r}: use one of {', '.join(VERIFY_POLICIES)}"
            )
        max_age = config.getoption("redactkey_max_age")
        if max_age is not None:
            try:
                parse_duration(max_age)
            except UsageError as exc:
                raise pytest.UsageError(f"--redactkey-max-age: {exc}") from None
        return cls(
            mode=mode,
            model_mode=model_mode,
            allow_loopback=allow_loopback,
            guard=guard,
            fixture_dir=str(config.getini("redactkey_fixture_dir")).strip(),
            report_path=report_path,
            fail_unused=bool(config.getoption("redactkey_fail_unused")),
            verify=verify,
            max_age=max_age,
            on_expiry=config.getoption("redactkey_on_expiry"),
            store=store,
        )


@dataclass(frozen=True)
class RedactkeySettings:
    """What redactkey does for one test: its modes and its fixture directory."""

    nodeid: str
    mode: Mode
    model_mode: Mode
    fixture_dir: Path
    allow_loopback: bool

    @property
    def replays_only(self) -> bool:
        """True when neither tool nor model calls may go live: the network guard applies."""
        return self.mode == "replay" and self.model_mode == "replay"


def _marker_kwargs(item: pytest.Item) -> dict[str, Any]:
    # Closest marker wins per keyword: a function marker overrides a module's pytestmark.
    merged: dict[str, Any] = {}
    for marker in reversed(list(item.iter_markers(MARKER))):
        if marker.args:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARKER} takes keywords only "
                "(path=..., mode=..., model_mode=...)"
            )
        unknown = set(marker.kwargs) - {"path", "mode", "model_mode"}
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARKER} got unknown "
                f"{'keyword' if len(unknown) == 1 else 'keywords'} "
                f"{', '.join(sorted(unknown))}; it takes path, mode and model_mode"
            )
        merged.update(marker.kwargs)
    return merged


def _module_path(item: pytest.Item) -> Path:
    return Path(str(item.path))


def _fixture_dir(item: pytest.Item, conf: _ConfigSettings, marker_path: Any) -> Path:
    test_file = _module_path(item)
    if marker_path is not None:
        path = Path(os.fspath(marker_path))
        # normalised, so the summary shows shared/chat rather than tests/../shared/chat
        return Path(os.path.normpath(path if path.is_absolute() else test_file.parent / path))
    module = test_file.stem
    if conf.fixture_dir:
        rootpath = item.config.rootpath
        try:
            rel = test_file.relative_to(rootpath).with_suffix("")
        except ValueError:
            rel = Path(module)
        prefix = Path(conf.fixture_dir.split("{module_path}", 1)[0])
        if (
            "{module_path}" in conf.fixture_dir and prefix.parts and len(rel.parts) > 1
            and rel.parts[0] == prefix.parts[0]
        ):
            # tests/recorded/{module_path} for tests/test_x.py is tests/recorded/test_x,
            # not tests/recorded/tests/test_x
            rel = rel.relative_to(rel.parts[0])
        text = conf.fixture_dir.replace("{module_path}", rel.as_posix()).replace(
            "{module}", module
        )
        path = Path(text)
        return Path(os.path.normpath(path if path.is_absolute() else rootpath / path))
    return test_file.parent / "fixtures" / module


def _settings_for(item: pytest.Item) -> RedactkeySettings:
    cached = item.stash.get(_SETTINGS_KEY, None)
    if cached is not None:
        return cached
    state = item.config.stash[_STATE_KEY]
    conf = state.conf
    kwargs = _marker_kwargs(item) if state.marked(item) else {}
    marker_mode = marker_model_mode = None
    if kwargs:  # (the message is built only for a marker that names a mode)
        where = f"{item.nodeid}: @pytest.mark.{MARKER}"
        marker_mode = _check_mode(kwargs.get("mode"), f"{where} mode")
        marker_model_mode = _check_mode(kwargs.get("model_mode"), f"{where} model_mode")
    # The marker is the most specific: it beats the option, which beats the environment.
    mode: Mode = marker_mode or conf.mode or DEFAULT_MODE
    model_mode: Mode = marker_model_mode or marker_mode or conf.model_mode or mode
    settings = RedactkeySettings(
        nodeid=item.nodeid,
        mode=mode,
        model_mode=model_mode,
        fixture_dir=state.fixture_dir(item, kwargs.get("path")),
        allow_loopback=conf.allow_loopback,
    )
    item.stash[_SETTINGS_KEY] = settings
    return settings


# Names common enough that a project may define fixtures of its own with them: they make
# a test a redactkey test only when they are the plugin's.
_GENERIC_FIXTURES = frozenset({"redactor", "run_secrets"})


def _ours(item: pytest.Item, name: str) -> bool:
    if name not in _GENERIC_FIXTURES:
        return True
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.get(name) if info is not None else None
    if not definitions:
        return False
    return _defined_here(definitions[-1])


def _defined_here(definition: Any) -> bool:
    return getattr(getattr(definition, "func", None), "__module__", "") == __name__


def _visible_is_ours(item: pytest.Item, name: str) -> bool:
    """Whether the closest fixture `name` visible to `item` is the plugin's; False when
    pytest cannot tell us (the fixture is then asked of pytest, which always works)."""
    if pytest.version_tuple < (8, 1):  # getfixturedefs took a node id before 8.1
        return False
    try:
        manager = item.session._fixturemanager
        definitions = manager.getfixturedefs(name, item)
    except Exception:  # a pytest whose internals moved: take the general path
        return False
    if not definitions:
        return False
    return _defined_here(definitions[-1])


def _uses_redactkey(item: pytest.Item) -> bool:
    uses = item.stash.get(_USES_KEY, None)
    if uses is None:  # worked out once per test (at collection, reused in setup)
        names = getattr(item, "fixturenames", ())
        uses = item.stash[_USES_KEY] = (
            not REDACTKEY_FIXTURES.isdisjoint(names)
            and any(_ours(item, name) for name in REDACTKEY_FIXTURES.intersection(names))
        ) or item.config.stash[_STATE_KEY].marked(item)
    return uses


def _uses_transport(item: pytest.Item) -> bool:
    names = getattr(item, "fixturenames", ())
    return any(name in TRANSPORT_FIXTURES for name in names)


# --------------------------------------------------------------------------- network guard


def _target(address: Any) -> tuple[str, str] | None:
    """(host, "host:port") for an internet address, None for anything else (AF_UNIX, ...)."""
    if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[0], str):
        host, port = address[0], address[1]
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        return host, shown
    return None


def _is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


class _NetworkGuard:
    """Refuses outgoing internet connections while one test runs, then restores `socket`."""

    def __init__(self, settings: RedactkeySettings, blocked: dict[str, list[str]]) -> None:
        self.settings = settings
        self.blocked = blocked  # test -> what it was refused (a test refused nothing: absent)
        self._saved: tuple[Any, Any] = (_INHERITED, _INHERITED)
        # Built once per test and installed in each of its phases, unless what they wrap
        # changed in between (another plugin's patch): then built again over that.
        self._wrapped: tuple[Any, Any, Any] | None = None
        self._patched: tuple[Callable[..., Any], Callable[..., Any]] | None = None

    def check(self, sock: socket.socket, address: Any) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        target = _target(address)
        if target is None:
            return
        host, shown = target
        if self.settings.allow_loopback and _is_loopback(host):
            return
        from .record._exchange import sending_live

        if sending_live():
            return  # the transport's own live call
        self.blocked.setdefault(self.settings.nodeid, []).append(shown)
        # socket.create_connection closes its socket only on OSError; close it here so a
        # refused connection leaves no unclosed-socket ResourceWarning behind.
        sock.close()
        raise NetworkRefusedError(self.settings.nodeid, shown, self.settings.mode)

    def _patch(
        self,
        original_connect: Callable[[socket.socket, Any], None],
        original_connect_ex: Callable[[socket.socket, Any], int],
    ) -> tuple[Callable[..., Any], Callable[..., Any]]:
        guard = self

        def connect(self: socket.socket, address: Any) -> None:
            guard.check(self, address)
            original_connect(self, address)

        def connect_ex(self: socket.socket, address: Any) -> int:
            guard.check(self, address)
            return original_connect_ex(self, address)

        return connect, connect_ex

    def active(self) -> _NetworkGuard:
        """The guard as a context manager: `socket` is patched inside, restored after."""
        return self

    def release(self) -> None:
        """Drop the wrappers once the test is over: they refer to the guard, which refers
        to them, a cycle only the garbage collector would free (once per test)."""
        self._patched = self._wrapped = None

    def __enter__(self) -> None:
        # asyncio's selector loop (create_connection, sock_connect) ends in sock.connect,
        # and ssl.SSLSocket subclasses socket.socket, so these two cover every path
        # that goes through the socket module. What to put back: the class's own
        # attribute, or none (then the inherited one).
        cls = socket.socket
        own = cls.__dict__
        self._saved = (own.get("connect", _INHERITED), own.get("connect_ex", _INHERITED))
        wrapped = (cls, cls.connect, cls.connect_ex)
        patched = self._patched
        if patched is None or self._wrapped != wrapped:
            patched = self._patched = self._patch(cls.connect, cls.connect_ex)
            self._wrapped = wrapped
        cls.connect, cls.connect_ex = patched  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        cls = socket.socket
        connect, connect_ex = self._saved
        if connect is _INHERITED and connect_ex is _INHERITED:  # (both inherited: common)
            del cls.connect, cls.connect_ex
            return
        for name, value in (("connect", connect), ("connect_ex", connect_ex)):
            if value is _INHERITED:
                delattr(cls, name)
            else:
                setattr(cls, name, value)


_INHERITED = object()

# The store of the session's layer templates, which no call ever reaches: each test's
# layer is the template over the test's own store.
_NO_STORE = cast("FixtureStore", None)


# --------------------------------------------------------------------------- accounting


class TrackedStore:
    """A fixture store that tells the session which calls a test replayed or recorded.

    It delegates to the real store (a `FixtureDir` by default); the plugin hands it to
    `ModelFixtures` and `FixtureTransport`, so the summary needs nothing from them.
    """

    def __init__(self, inner: FixtureStore, nodeid: str, *, shown: str | None = None) -> None:
        self.inner = inner
        self.nodeid = nodeid
        self._shown = shown  # the store's location as reports show it, when known
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

    def get(self, kind: str, key: str) -> Fixture | None:
        fixture = self.inner.get(kind, key)
        self._track(kind, key, fixture)
        return fixture

    def _track(self, kind: str, key: str, fixture: Fixture | None) -> None:
        with self._lock:
            if self.calls.get((kind, key)) != "recorded":
                self.calls[(kind, key)] = "missing" if fixture is None else "replayed"

    def get_replayed(self, kind: str, key: str) -> Fixture | None:
        fixture = replay_reader(self.inner)(kind, key)
        self._track(kind, key, fixture)
        return fixture

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
        if not calls:
            return []
        store = self._shown if self._shown is not None else _shown(self.location, root)
        inner = self.inner
        if isinstance(inner, FixtureDir):
            # The shown directory and the file's name: the same text, built without a Path.
            def file(kind: str, key: str) -> str:
                name = inner.file_name(kind, key)
                return name if store == "." else f"{store}/{name}"
        else:
            def file(kind: str, key: str) -> str:
                return _shown(self.path_for(kind, key), root)
        return [
            {
                "test": self.nodeid,
                "outcome": outcome,
                "kind": kind,
                "key": key,
                "store": store,
                "file": file(kind, key),
            }
            for (kind, key), outcome in calls
        ]


def _shown(path: str | Path, root: Path) -> str:
    """`path` relative to the rootdir when inside it (portable reports), else absolute."""
    text, base = str(path), str(root)
    if not base.endswith(os.sep):
        base += os.sep
    if text.startswith(base):  # the common case, without building paths
        return text[len(base):].replace(os.sep, "/")
    path = Path(path)
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _new_part() -> dict[str, Any]:
    # One process's share of the run; JSON data only so xdist can ship it to the controller.
    return {"events": [], "dirs": {}, "blocked": {}, "used": False, "drifts": [],
            "deselected": 0, "collect_errors": 0, "partial": [], "dummies": {}}


def _merge_parts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    merged = _new_part()
    for part in parts:
        merged["events"].extend(part["events"])
        merged["used"] = merged["used"] or part["used"]
        merged["drifts"].extend(part.get("drifts", []))
        # every xdist worker collects (and deselects) the whole suite
        merged["deselected"] = max(merged["deselected"], part.get("deselected", 0))
        merged["collect_errors"] = max(merged["collect_errors"], part.get("collect_errors", 0))
        merged["partial"].extend(r for r in part.get("partial", [])
                                 if r not in merged["partial"])
        merged["dummies"].update(part.get("dummies", {}))
        for nodeid, targets in part["blocked"].items():
            merged["blocked"].setdefault(nodeid, []).extend(targets)
        for path, info in part["dirs"].items():
            into = merged["dirs"].setdefault(
                path, {"tests": [], "ran": [], "deselected": 0, "live": False}
            )
            # Every xdist worker collects every test; only the runs differ.
            into["tests"] = sorted(set(into["tests"]) | set(info["tests"]))
            into["ran"] = sorted(set(into["ran"]) | set(info["ran"]))
            into["deselected"] = max(into["deselected"], info["deselected"])
            into["live"] = into["live"] or info["live"]
    merged["events"].sort(key=lambda e: (e["test"], e["file"], e["outcome"]))
    merged["drifts"].sort(key=lambda d: (d["test"], d["file"]))
    return merged


@dataclass
class _Summary:
    replayed: list[dict[str, str]]
    recorded: list[dict[str, str]]
    missing: list[dict[str, str]]
    unused: list[str]
    unchecked: list[str]  # directories whose unused files were not checked, with why
    blocked: dict[str, list[str]]
    dummies: dict[str, str]
    drifted: list[dict[str, Any]]
    fixture_dirs: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)  # why the run did not cover every test

    def rerecord_command(self) -> str:
        """The pytest command that re-records just the tests whose answers drifted."""
        tests = sorted({d["test"] for d in self.drifted})
        return " ".join(["pytest", "--redactkey-mode=record", *map(shlex.quote, tests)])

    def document(self, mode: str, model_mode: str, root: Path, report: Path) -> dict[str, Any]:
        """The run report. Its paths are relative to the report's directory, which is
        how `redact audit --run-report` resolves them."""
        from .record._report import report_document

        def relocated(shown: str) -> str:
            try:
                return Path(os.path.relpath(root / shown, report.parent)).as_posix()
            except ValueError:  # another drive (Windows)
                return (root / shown).as_posix()

        directories: dict[str, str] = {}

        def moved(shown: str) -> str:
            # Relocated once per directory: a run's files share a few directories.
            head, _, name = shown.rpartition("/")
            if not head or name in ("", ".", ".."):
                return relocated(shown)
            base = directories.get(head)
            if base is None:
                base = directories[head] = relocated(head)
            if base == head:  # (the report in the rootdir: every path stays as it is)
                return shown
            return name if base == "." else f"{base}/{name}"

        def events(items: list[dict[str, str]]) -> list[dict[str, str]]:
            out = []
            for event in items:
                store, file = moved(event["store"]), moved(event["file"])
                if store is not event["store"] or file is not event["file"]:
                    event = {**event, "store": store, "file": file}
                out.append(event)  # (report_document copies each event it writes)
            return out

        return report_document(
            [*events(self.replayed), *events(self.recorded), *events(self.missing)],
            (moved(path) for path in self.unused),
            mode=mode,
            model_mode=model_mode,
            unchecked=self.unchecked,
            fixture_dirs=[moved(path) for path in self.fixture_dirs],
            partial=self.partial,
            blocked=[
                {"test": test, "target": target}
                for test, targets in sorted(self.blocked.items()) for target in targets
            ],
            drifted=[{**d, "file": moved(d["file"])} for d in self.drifted],
            **({"rerecord": self.rerecord_command()} if self.drifted else {}),
        )


def _summarise(merged: dict[str, Any], root: Path) -> _Summary:
    from .commands._issues import counted  # (the run's end only: the checks' module)

    events = merged["events"]
    touched = {e["file"] for e in events if e["outcome"] in ("replayed", "recorded")}
    unused: list[str] = []
    unchecked: list[str] = []
    for path, info in sorted(merged["dirs"].items()):
        not_run = len(set(info["tests"]) - set(info["ran"])) + info["deselected"]
        if info["live"]:
            unchecked.append(f"{path}: some tests ran live")
        elif not_run:
            unchecked.append(f"{path}: {counted(not_run, 'test')} using it did not run")
        else:
            # `path` is shown relative to the rootdir (or absolute): so are its files
            names = FixtureDir(root / path).file_names()
            files = names if path == "." else (f"{path}/{name}" for name in names)
            unused.extend(f for f in files if f not in touched)

    def pick(outcome: str) -> list[dict[str, str]]:
        return [e for e in events if e["outcome"] == outcome]

    return _Summary(
        replayed=pick("replayed"),
        recorded=pick("recorded"),
        missing=pick("missing"),
        unused=sorted(set(unused)),
        unchecked=unchecked,
        blocked={k: v for k, v in merged["blocked"].items() if v},
        drifted=merged["drifts"],
        fixture_dirs=sorted(merged["dirs"]),
        partial=_partial_reasons(merged),
        dummies=dict(merged["dummies"]),
    )


def _partial_reasons(merged: dict[str, Any]) -> list[str]:
    """Why a run did not cover every test (so its unused files are not all unused)."""
    from .commands._issues import counted

    reasons = list(merged["partial"])
    if merged["deselected"]:
        reasons.append(f"{counted(merged['deselected'], 'test')} deselected")
    if merged["collect_errors"]:
        reasons.append(f"{counted(merged['collect_errors'], 'collection error')}")
    return reasons


# --------------------------------------------------------------------------- session state


class _SessionState:
    """Per-process bookkeeping; xdist workers ship theirs to the controller."""

    def __init__(self, config: pytest.Config, conf: _ConfigSettings) -> None:
        self.config = config
        self.conf = conf
        self.part = _new_part()
        self.tracked: list[TrackedStore] = []  # stores of finished tests: see add_events
        self.worker_parts: list[dict[str, Any]] = []
        self.summary: _Summary | None = None
        self.report_written: Path | None = None
        self.failed_unused = False
        self.dir_of: dict[str, str] = {}  # nodeid -> fixture directory, for collected tests
        self.project_config: Config | None = None  # [tool.redactkey], read on first use
        # ((records, min length), the environment read, the secrets): what `run_secrets`
        # copies for each test
        self.base_secrets: tuple[tuple[bool, int], dict[Any, Any], RunSecrets] | None = None
        # the configured Redactor with no secrets, and (secrets, Redactor) over the run's
        self.redactor_template: Redactor | None = None
        self.base_redactor: tuple[RunSecrets, Redactor] | None = None
        self.stores: dict[tuple[str, Path], FixtureStore] = {}  # one per fixture directory
        self.hidden: dict[str, frozenset[str]] = {}  # see `overridden`
        self.marked_parents: dict[str, bool] = {}  # see `marked`
        self.layer_settings: tuple[VerifyRules, tuple[AnswerNormalizer, ...]] | None = None
        self.shown_dirs: dict[Path, str] = {}
        self.shown_locations: dict[str, str] = {}
        self.expiry_settings: tuple[str | None, ExpiryAction] | None = None
        self.min_length: int | None = None
        self.fixture_dirs: dict[tuple[str, Any], Path] = {}
        self.ages = FixtureAges()  # git is asked once per fixture tree for the whole session
        self.layers: dict[str, ModelFixtures] = {}  # see `layer`
        self.shared_options: dict[str, Any] | None = None
        self.item: pytest.Item | None = None  # the test being set up, for the fixtures
        self.fixtures = _Fixtures(self)

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def _dir_info(self, shown: str) -> dict[str, Any]:
        dirs = self.part["dirs"]
        info: dict[str, Any] | None = dirs.get(shown)
        if info is None:
            info = dirs[shown] = {"tests": [], "ran": [], "deselected": 0, "live": False}
        return info

    def _shown_dir(self, settings: RedactkeySettings) -> str:
        shown = self.shown_dirs.get(settings.fixture_dir)
        if shown is None:
            shown = self.shown_dirs[settings.fixture_dir] = _shown(
                settings.fixture_dir, self.config.rootpath
            )
        return shown

    # -- collection: which tests use which fixture directory

    def marked(self, item: pytest.Item) -> bool:
        """Whether a redactkey marker applies to `item`: its own, or one of its parents'
        (worked out once for the tests of a module or class)."""
        for marker in item.own_markers:
            if marker.name == MARKER:
                return True
        parent = item.parent
        if parent is None:
            return False
        where = parent.nodeid
        known = self.marked_parents.get(where)
        if known is None:
            known = self.marked_parents[where] = parent.get_closest_marker(MARKER) is not None
        return known

    def _settings_or_none(self, item: pytest.Item) -> RedactkeySettings | None:
        if not _uses_redactkey(item):
            return None
        try:
            return _settings_for(item)
        except pytest.UsageError:
            return None  # reported when the test sets up

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.part["collect_errors"] += 1

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.part["deselected"] += len(items)
        for item in items:
            settings = self._settings_or_none(item)
            if settings is not None:
                self._dir_info(self._shown_dir(settings))["deselected"] += 1

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for item in session.items:
            settings = self._settings_or_none(item)
            if settings is not None:
                shown = self._shown_dir(settings)
                info = self._dir_info(shown)
                info["tests"].append(settings.nodeid)
                self.dir_of[settings.nodeid] = shown
                if not info["live"] and "live" in (settings.mode, settings.model_mode):
                    info["live"] = True

    def add_drift(self, nodeid: str, error: DriftError) -> None:
        """Verify with --redactkey-verify=report: keep the drift for the summary and report."""
        self.part["used"] = True
        self.part["drifts"].append({
            "test": nodeid,
            "file": _shown(Path(error.path), self.config.rootpath),
            "kind": error.kind,
            "key": error.key,
            "differences": [{"pointer": p, "what": w} for p, w in error.differences],
        })

    def add_events(self, store: TrackedStore) -> None:
        """Keep what a test's store replayed or recorded: made into the run's events at
        its end (`_collect_events`), one loop for all rather than a step in each test."""
        self.part["used"] = True
        if store.calls:
            self.tracked.append(store)

    def _collect_events(self) -> None:
        root = self.config.rootpath
        events = self.part["events"]
        for store in self.tracked:
            events.extend(store.events(root))
        self.tracked.clear()

    # -- the network guard, around every phase of a guarded test

    def project(self) -> Config:
        """`[tool.redactkey]` of the rootdir, read on first use."""
        if self.project_config is None:
            config = load_config(self.config.rootpath)
            aliases = _ini_hosts(self.config)
            if aliases:
                from pydantic import ValidationError

                try:
                    config = config.model_validate({
                        **config.model_dump(), "source": config.source,
                        "hosts": {**config.hosts, **aliases},
                    })
                except ValidationError as exc:
                    problem = "; ".join(str(e["msg"]).removeprefix("Value error, ")
                                        for e in exc.errors())
                    raise pytest.UsageError(f"ini redactkey_hosts: {problem}") from None
            self.project_config = config
        return self.project_config

    # -- what every test shares: built once per session

    def fixture_dir(self, item: pytest.Item, marker_path: Any) -> Path:
        """The fixture directory of a test (worked out once per module and marker path)."""
        where = (str(item.path), None if marker_path is None else os.fspath(marker_path))
        directory = self.fixture_dirs.get(where)
        if directory is None:
            directory = self.fixture_dirs[where] = _fixture_dir(item, self.conf, marker_path)
        return directory

    def overridden(self, item: pytest.Item) -> frozenset[str]:
        """The plugin's fixtures that `item` sees defined elsewhere: a project's override,
        or a parametrization of the same name by the test itself."""
        parent = item.parent
        where = parent.nodeid if parent is not None else ""
        overridden = self.hidden.get(where)
        if overridden is None:  # what the tests of one module or class see: asked once
            overridden = self.hidden[where] = frozenset(
                name for name in _BUILDERS if not _visible_is_ours(item, name)
            )
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            return overridden
        requested = info.name2fixturedefs
        for name in _BUILDERS:
            definitions = requested.get(name)
            # The test asks for it itself: its own closest definition decides.
            if definitions and _defined_here(definitions[-1]) == (name in overridden):
                overridden = overridden ^ {name}
        return overridden

    def shown_location(self, location: str) -> str:
        """A store's location as the summary and the run report show it."""
        shown = self.shown_locations.get(location)
        if shown is None:
            shown = self.shown_locations[location] = _shown(location, self.config.rootpath)
        return shown

    def store(self, directory: Path) -> FixtureStore:
        """The store of a fixture directory, one object for every test that uses it."""
        kind = self.conf.store
        store = self.stores.get((kind, directory))
        if store is None:
            store = self.stores[(kind, directory)] = (
                CassetteStore(directory.with_name(directory.name + ".json"))
                if kind == "cassette" else FixtureDir(directory)
            )
        return store

    def run_secrets(self, records: bool, min_length: int) -> RunSecrets:
        """The run's secrets, collected again only when the environment or the rule changed
        (never handed out: each test gets a copy)."""
        known = self.base_secrets
        if known is None or known[0] != (records, min_length) or not _same_environment(known[1]):
            environment = _environment()
            base = RunSecrets.from_env(min_length=min_length, skip_short=not records)
            try:
                base.collect(*self.project().secret_env)
            finally:
                self.part["dummies"].update(base.dummies)
            self.base_secrets = known = ((records, min_length), environment, base)
        return known[2]

    def redactor_over(self, secrets: RunSecrets | None) -> Redactor:
        """A configured `Redactor` over `secrets`, sharing everything compiled with the
        session's (the known-value automaton too, while `secrets` holds the run's values)."""
        template = self.redactor_template
        if template is None:
            config = self.project()
            template = self.redactor_template = Redactor(
                None,
                placeholder=config.placeholder,
                sensitive_keys=config.sensitive_keys,
                extra_patterns=config.extra_patterns(),
            )
        if secrets is None:
            return template.over(RunSecrets({}))
        run = self.base_secrets[2] if self.base_secrets is not None else None
        if run is None:
            return template.over(secrets)
        if self.base_redactor is None or self.base_redactor[0] is not run:
            self.base_redactor = (run, template.over(run))
        return self.base_redactor[1].over(secrets)

    def layer_options(self) -> dict[str, Any]:
        """What every test's record/replay layers share: verify rules, expiry, the
        fixture ages, the configuration and its answer normalizers."""
        options = self.shared_options
        if options is None:
            max_age, on_expiry = self.expiry()
            options = self.shared_options = {
                "verify": self.verify_rules(),
                "max_age": max_age,
                "on_expiry": on_expiry,
                "ages": self.ages,
                "config": self.project(),
                "answer_normalizers": self.answer_normalizers(),
            }
        return dict(options)

    def layer(self, mode: Mode) -> ModelFixtures:
        """The model-call layer of `mode`, built once per session: each test gets it over
        its own store and redactor (`ModelFixtures.over`)."""
        layer = self.layers.get(mode)
        if layer is None:
            layer = self.layers[mode] = ModelFixtures(
                _NO_STORE, mode=mode, how_to_record=HOW_TO_RECORD_MODEL,
                redactor=self.redactor_over(None), **self.layer_options(),
            )
        return layer

    def verify_rules(self) -> VerifyRules:
        return self._layer_settings()[0]

    def answer_normalizers(self) -> tuple[AnswerNormalizer, ...]:
        return self._layer_settings()[1]

    def _layer_settings(self) -> tuple[VerifyRules, tuple[AnswerNormalizer, ...]]:
        if self.layer_settings is None:
            project = self.project()
            self.layer_settings = (project.verify.rules(), project.answers.normalizers())
        return self.layer_settings

    def expiry(self) -> tuple[str | None, ExpiryAction]:
        """(max age, action on expiry): the options, else `[tool.redactkey]`."""
        if self.expiry_settings is None:
            project = self.project()
            self.expiry_settings = (self.conf.max_age or project.max_age,
                                    self.conf.on_expiry or project.on_expiry)
        return self.expiry_settings

    def min_secret_length(self) -> int:
        """The shortest secret that is redacted (ini, else `[tool.redactkey]`)."""
        if self.min_length is None:
            self.min_length = _min_secret_length(self.config, self.project())
        return self.min_length

    def _guarded(self, item: pytest.Item) -> _NetworkGuard | None:
        if self.conf.guard == "off":
            return None
        max_age, on_expiry = self.expiry()
        if max_age is not None and on_expiry == "rerecord":
            return None  # an expired fixture is recorded again, live
        if self.conf.guard == "used" and not _uses_redactkey(item):
            return None
        settings = _settings_for(item)  # a bad marker is reported here, in setup
        # Replay refuses every connection; recording (no mode "live") refuses those that
        # bypass the transport of a test that took one, e.g. an async slot left empty.
        if not settings.replays_only and not (
            "live" not in (settings.mode, settings.model_mode) and _uses_transport(item)
        ):
            return None
        self.part["used"] = True  # (a run whose tests were guarded gets its summary)
        return _NetworkGuard(settings, self.part["blocked"])

    # The guard is decided once, in setup; the call and teardown phases reuse the
    # decision. The same wrappers count a test that uses redactkey: it set up, and its
    # call phase ran (counted where the test runs: an xdist controller's reports come
    # from the workers, which count for themselves).

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        self.item = item  # the fixtures set up now are this test's
        if item.nodeid in self.dir_of:
            self.part["used"] = True
        guard = item.stash[_GUARD_KEY] = self._guarded(item)
        if guard is None:
            return (yield)
        with guard.active():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        shown = self.dir_of.get(item.nodeid)
        if shown is not None:
            self.part["dirs"][shown]["ran"].append(item.nodeid)
        guard = item.stash.get(_GUARD_KEY, None)
        if guard is None:
            return (yield)
        with guard.active():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, None, None]:
        guard = item.stash.get(_GUARD_KEY, None)
        try:
            if guard is None:
                return (yield)
            with guard.active():
                return (yield)
        finally:
            if guard is not None:
                del item.stash[_GUARD_KEY]  # the test's last phase: nothing of it is kept
                guard.release()
            # The test's fixtures are torn down: what it replayed or recorded joins the run.
            pieces = item.stash.get(_PIECES_KEY, None)
            if pieces is not None:
                del item.stash[_PIECES_KEY]
                if pieces.store is not None:
                    self.add_events(pieces.store)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not report.failed:
            return report
        notes = []
        blocked = self.part["blocked"].get(item.nodeid)
        if blocked:
            # An SDK may wrap or swallow the error; say what happened regardless.
            notes.append(
                f"{'network connection' if len(blocked) == 1 else 'network connections'} "
                f"refused in replay: {', '.join(blocked)}; "
                f"{HOW_TO_RECORD}"
            )
        if call.excinfo is not None and _missing_in(call.excinfo.value):
            notes.append(f"a recorded call is missing; to record it: {HOW_TO_RECORD_MODEL}")
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
        output = getattr(node, "workeroutput", None) or {}
        part = output.get("redactkey")
        if part is not None:
            self.worker_parts.append(part)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._collect_events()
        if self.is_worker:
            self.config.workeroutput["redactkey"] = self.part  # type: ignore[attr-defined]
            return
        self.part["partial"].extend(self._selection_reasons(session))
        merged = _merge_parts([self.part, *self.worker_parts])
        if not (merged["used"] or merged["blocked"]):
            # A session that ran no redactkey test (none collected, --collect-only)
            # gets no summary and no report.
            return
        summary = self.summary = _summarise(merged, self.config.rootpath)
        if self.conf.report_path is not None:
            mode = self.conf.mode or DEFAULT_MODE
            self.report_written = _write_report(
                self.conf.report_path,
                summary.document(mode, self.conf.model_mode or mode, self.config.rootpath,
                                 self.conf.report_path),
            )
        if self.conf.fail_unused and summary.unused:
            self.failed_unused = True
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if summary.drifted and session.exitstatus == pytest.ExitCode.OK:
            # report mode lets every test finish; the run still says that answers drifted
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _selection_reasons(self, session: pytest.Session) -> list[str]:
        """What in the invocation narrowed the run to a subset of the suite."""
        option = self.config.option
        reasons = []
        if getattr(option, "keyword", ""):
            reasons.append(f"-k {option.keyword!r} selected a subset of the tests")
        if getattr(option, "markexpr", ""):
            reasons.append(f"-m {option.markexpr!r} selected a subset of the tests")
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
        mode = self.conf.mode or DEFAULT_MODE
        model_mode = self.conf.model_mode or mode
        source = "" if self.conf.mode else " (default)"
        return f"mode {mode}{source}, model calls {model_mode}"

    def pytest_report_header(self) -> str:
        return f"redactkey: {self._modes_line()}"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        summary = self.summary
        if summary is None:
            return
        tr = terminalreporter
        tr.section("redactkey")
        tr.line(self._modes_line())
        tr.line(
            f"replayed {len(summary.replayed)}, recorded {len(summary.recorded)}, "
            f"missing {len(summary.missing)}, unused files {len(summary.unused)}"
        )
        if summary.missing:
            tr.line("missing (no recorded call; " + HOW_TO_RECORD + "):")
            for event in summary.missing:
                tr.line(f"  {event['test']}: {event['kind']} {event['key'][:12]}… "
                        f"in {event['store']}")
        if summary.blocked:
            tr.line("network connections refused in replay:")
            for test, targets in sorted(summary.blocked.items()):
                tr.line(f"  {test}: {', '.join(targets)}")
        if summary.drifted:
            tr.line(f"drifted from their recordings (verify): {len(summary.drifted)}", red=True)
            for drift in summary.drifted:
                tr.line(f"  {drift['test']}: {drift['file']}")
                for difference in drift["differences"]:
                    tr.line(f"    {difference['pointer'] or '(root)'}: {difference['what']}")
            tr.line(f"to re-record just these: {summary.rerecord_command()}")
        if summary.unused:
            tr.line("unused fixture files (no test replayed or recorded them):")
            for path in summary.unused:
                tr.line(f"  {path}")
        for note in summary.unchecked:
            tr.line(f"unused files not checked in {note}")
        if summary.dummies:
            tr.line("stand-in secrets skipped (nothing was recorded; recording needs the real "
                    "credential):")
            for slot, reason in sorted(summary.dummies.items()):
                tr.line(f"  {slot}: {reason}")
        if self.report_written is not None:
            tr.line(f"run report: {self.report_written}")
        if self.failed_unused:
            from .commands._issues import counted

            tr.line(
                f"FAILED: {counted(len(summary.unused), 'unused fixture file')} "
                "(--redactkey-fail-unused); delete them or the tests that stopped using them",
                red=True,
            )


def _missing_in(exc: BaseException) -> bool:
    """Whether a MissingFixtureError is `exc` or in its cause / context / group chain."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, MissingFixtureError):
            return True
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        todo.extend(getattr(current, "exceptions", ()))
    return False


def _write_report(path: Path, document: dict[str, Any]) -> Path:
    from .fixtures._format import dump_document
    from .fixtures._store import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, dump_document(document))
    return path


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(path=None, mode=None, model_mode=None): redactkey fixture directory "
        "(relative to the test file) and record/replay mode for these tests",
    )
    state = _SessionState(config, _ConfigSettings.from_config(config))
    config.stash[_STATE_KEY] = state
    config.pluginmanager.register(state, "redactkey-session")
    config.pluginmanager.register(state.fixtures, "redactkey-fixtures")


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
    return True if _holds_fixtures_only(collection_path) else None


def _holds_fixtures_only(path: Path) -> bool:
    """Whether `path` is a directory of fixture files and nothing else (no other file, no
    subdirectory), with at least one."""
    try:
        with os.scandir(path) as entries:
            seen = False
            for entry in entries:
                if kind_for_file_name(entry.name) is None or not entry.is_file(
                    follow_symlinks=False
                ):
                    return False
                seen = True
            return seen
    except OSError:  # not a directory (a data file next to the tests), or unreadable
        return False


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE_KEY, None)
    if state is not None:
        config.pluginmanager.unregister(state.fixtures)
        config.pluginmanager.unregister(state)
        del config.stash[_STATE_KEY]


# --------------------------------------------------------------------------- fixtures
#
# A test that asks for `model_fixtures` gets it from one fixture: the pieces it is made
# of (settings, store, run secrets, redactor) are built here on first use, once per
# test, from what the session built once. A piece comes from pytest's own fixture of
# that name only when the project overrides it, so an override still counts while the
# common case costs no fixture setups of its own.
#
# The fixtures are methods of an object registered with the session, and take no
# `request`: pytest builds a fixture definition of its own for every `request` a fixture
# asks for, which costs a test about as much as the rest of what the plugin does for it.
# The test being set up is the one the session's setup hook saw last.


class _TestPieces:
    """What redactkey built for one test, each piece once and on first use."""

    __slots__ = ("built", "item", "nodeid", "overridden", "state", "store")

    def __init__(self, state: _SessionState, item: pytest.Item) -> None:
        self.state = state
        self.item = item
        self.nodeid = item.nodeid
        self.built: dict[str, Any] = {}
        # The pieces this test takes from pytest's fixture of that name (an override).
        self.overridden = state.overridden(item)
        self.store: TrackedStore | None = None

    def own(self, name: str) -> Any:
        """The plugin's own fixture `name` for this test (built at most once)."""
        built = self.built
        value = built.get(name, _UNBUILT)
        if value is _UNBUILT:
            value = built[name] = _BUILDERS[name](self)
        return value

    def use(self, name: str) -> Any:
        """Fixture `name` as this test sees it: the project's override when there is one
        (pytest sets it up once for the test, as it does any fixture)."""
        if name not in self.overridden:
            return self.own(name)
        return _fixture_request(self.item).getfixturevalue(name)


_UNBUILT: Final = object()  # (a fixture's value may be None)


def _fixture_request(item: pytest.Item) -> pytest.FixtureRequest:
    """The fixture request of a test item (pytest keeps it on every item that takes
    fixtures, functions and doctests alike)."""
    request = getattr(item, "_request", None)
    if request is None:
        raise pytest.UsageError(
            f"{item.nodeid}: this kind of test item takes no fixtures, so it cannot use "
            "an override of a redactkey fixture; use the plugin's own fixture"
        )
    return request  # type: ignore[no-any-return]


def _ini_hosts(config: pytest.Config) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for line in config.getini("redactkey_hosts"):
        alias, sep, canonical = str(line).partition("=")
        if not sep or not alias.strip() or not canonical.strip():
            raise pytest.UsageError(
                f"ini redactkey_hosts line {line!r}: write 'alias = canonical', e.g. "
                "'127.0.0.1:8765 = api.openai.com'"
            )
        aliases[alias.strip()] = canonical.strip()
    return aliases


def _min_secret_length(pytest_config: pytest.Config, config: Config) -> int:
    text = str(pytest_config.getini("redactkey_min_secret_length")).strip()
    if not text:
        return config.min_secret_length
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 4 <= value <= 256:
        raise pytest.UsageError(
            f"ini redactkey_min_secret_length={text!r}: use a whole number from 4 to 256"
        )
    return value


def _environment() -> dict[Any, Any]:
    """The process environment, less what pytest changes for every test by itself."""
    data = getattr(os.environ, "_data", None)  # a plain copy costs no decoding
    environment: dict[Any, Any] = dict(data) if isinstance(data, dict) else dict(os.environ)
    for name in _PER_TEST_VARIABLES:
        environment.pop(name, None)
    return environment


# PYTEST_CURRENT_TEST names the running test and phase: no secret, but new every test.
_PER_TEST_VARIABLES = ("PYTEST_CURRENT_TEST", b"PYTEST_CURRENT_TEST")


def _same_environment(seen: dict[Any, Any]) -> bool:
    """Whether the process environment still holds what `seen` (an `_environment()`) held.
    `seen` takes the per-test variables' current values, so the process environment is
    compared as it is, without a copy."""
    data = getattr(os.environ, "_data", None)
    if not isinstance(data, dict):
        return _environment() == seen
    for name in _PER_TEST_VARIABLES:
        if name in data:
            seen[name] = data[name]
        else:
            seen.pop(name, None)
    return data == seen


def _build_settings(pieces: _TestPieces) -> RedactkeySettings:
    return _settings_for(pieces.item)


def _build_store(pieces: _TestPieces) -> TrackedStore:
    settings: RedactkeySettings = pieces.use("redactkey_settings")
    state = pieces.state
    inner = state.store(settings.fixture_dir)
    store = TrackedStore(inner, pieces.nodeid, shown=state.shown_location(inner.location))
    if pieces.store is None:
        pieces.store = store  # its calls join the run report when the test ends
    return store


def _build_slots(pieces: _TestPieces) -> list[object]:
    return []


def _build_nothing(pieces: _TestPieces) -> None:
    return None


def _build_secrets(pieces: _TestPieces) -> RunSecrets:
    state = pieces.state
    config = state.project()
    settings: RedactkeySettings = pieces.use("redactkey_settings")
    slots: list[object] = pieces.use("redactkey_secret_slots")
    # One rule everywhere: a stand-in value (OPENAI_API_KEY=dummy) is skipped while this
    # test records nothing and refused, naming the slot, when it may record.
    records = bool({settings.mode, settings.model_mode} & {"record", "auto"})
    min_length = state.min_secret_length()
    if slots:
        secrets = RunSecrets.from_env(min_length=min_length, skip_short=not records)
        try:
            secrets.collect(*config.secret_env, *slots)
        finally:
            state.part["dummies"].update(secrets.dummies)
        return secrets
    return state.run_secrets(records, min_length).copy()


def _build_redactor(pieces: _TestPieces) -> Redactor:
    secrets = pieces.use("run_secrets")
    return pieces.state.redactor_over(secrets)


def _build_model_fixtures(pieces: _TestPieces) -> ModelFixtures:
    settings: RedactkeySettings = pieces.use("redactkey_settings")
    return pieces.state.layer(settings.model_mode).over(
        pieces.use("fixture_store"),
        redactor=pieces.use("redactor"),
        label=pieces.nodeid,
        **_test_options(pieces),
    )


def _build_tool_fixtures(pieces: _TestPieces) -> ToolFixtures:
    settings: RedactkeySettings = pieces.use("redactkey_settings")
    options = _layer_options(pieces)
    options.pop("how_to_rerecord", None)
    return ToolFixtures(
        pieces.use("fixture_store"),
        mode=settings.mode,
        redactor=pieces.use("redactor"),
        label=pieces.nodeid,
        **options,
    )


_BUILDERS: dict[str, Callable[[_TestPieces], Any]] = {
    "fixture_store": _build_store,
    "model_fixtures": _build_model_fixtures,
    "redactkey_inner_transport": _build_nothing,
    "redactkey_secret_slots": _build_slots,
    "redactkey_settings": _build_settings,
    "redactor": _build_redactor,
    "run_secrets": _build_secrets,
    "tool_fixtures": _build_tool_fixtures,
}


def _test_options(pieces: _TestPieces) -> dict[str, Any]:
    """What verify and expiry say of this test: how to re-record it, where drifts go."""
    state = pieces.state
    nodeid = pieces.nodeid
    options: dict[str, Any] = {
        "how_to_rerecord": f"pytest --redactkey-mode=record {shlex.quote(nodeid)}",
    }
    if state.conf.verify == "report":
        options["on_drift"] = lambda error: state.add_drift(nodeid, error)
    return options


def _layer_options(pieces: _TestPieces) -> dict[str, Any]:
    """What verify and expiry need: the configured rules, where drifts go, the session's
    fixture ages, and how to re-record this test."""
    return {**pieces.state.layer_options(), **_test_options(pieces)}


class _Fixtures:
    """The plugin's fixtures, over the session's state (see the note above)."""

    def __init__(self, state: _SessionState) -> None:
        self.state = state

    def _pieces(self) -> _TestPieces:
        item = self.state.item
        if item is None:
            raise pytest.UsageError(
                "redactkey's fixtures are set up for a test; no test is being set up"
            )
        pieces = item.stash.get(_PIECES_KEY, None)
        if pieces is None:
            pieces = item.stash[_PIECES_KEY] = _TestPieces(self.state, item)
        return pieces

    @pytest.fixture
    def redactkey_settings(self) -> RedactkeySettings:
        """This test's modes and fixture directory (after marker, option, environment and
        ini)."""
        return self._pieces().own("redactkey_settings")  # type: ignore[no-any-return]

    @pytest.fixture
    def fixture_store(self) -> TrackedStore:
        """This test's fixture directory as a store (per test module unless configured), or
        with `--redactkey-store=cassette` the cassette `<fixture dir>.json`."""
        return self._pieces().own("fixture_store")  # type: ignore[no-any-return]

    @pytest.fixture
    def redactkey_secret_slots(self) -> list[object]:
        """Extra secret slots for `run_secrets`; override it to declare what your tools read.

        Return slot names (read from the environment), mappings of slot to source, pydantic
        settings models or objects with `secret_slots`, as `collect_run_secrets` takes them.
        """
        return []

    @pytest.fixture
    def run_secrets(self) -> RunSecrets:
        """The run's secrets: secret-looking environment variables, `[tool.redactkey]
        secret-env`, and the slots `redactkey_secret_slots` declares. Each test gets its
        own (a copy of the run's, built once while the environment stays the same)."""
        return self._pieces().own("run_secrets")  # type: ignore[no-any-return]

    @pytest.fixture
    def redactor(self) -> Redactor:
        """A `Redactor` over `run_secrets`, with `[tool.redactkey]` placeholder, credential
        field names and extra detectors."""
        return self._pieces().own("redactor")  # type: ignore[no-any-return]

    @pytest.fixture
    def model_fixtures(self) -> ModelFixtures:
        """`ModelFixtures` over this test's store, in the test's model mode."""
        return self._pieces().own("model_fixtures")  # type: ignore[no-any-return]

    @pytest.fixture
    def tool_fixtures(self) -> ToolFixtures:
        """`ToolFixtures` over this test's store, in the test's tool mode:
        ``tool_fixtures.call("search", {"q": "cats"}, live)`` or ``@tool_fixtures.tool``."""
        return self._pieces().own("tool_fixtures")  # type: ignore[no-any-return]

    @pytest.fixture
    def redactkey_inner_transport(self) -> Any:
        """The transport `redactkey_transport` sends live calls through (None: the client
        library's own). Override it to reach a proxy or a local fake provider."""
        return None

    def _transport(self, tool: bool) -> Iterator[FixtureTransport]:
        from .clients._httpx import FixtureTransport

        pieces = self._pieces()
        settings: RedactkeySettings = pieces.use("redactkey_settings")
        transport = FixtureTransport(
            pieces.use("fixture_store"),
            mode=settings.mode if tool else settings.model_mode,
            redactor=pieces.use("redactor"),
            inner=pieces.use("redactkey_inner_transport"),
            how_to_record=HOW_TO_RECORD_MODEL,
            **_layer_options(pieces),
        )
        try:
            yield transport
        finally:
            transport.close()

    @pytest.fixture
    def redactkey_transport(self) -> Iterator[FixtureTransport]:
        """A `FixtureTransport` for model SDK clients (openai, anthropic), in the model mode.

        One object serves httpx and httpx2, sync and async:
        ``openai.OpenAI(http_client=httpx2.Client(transport=redactkey_transport))``.
        """
        yield from self._transport(tool=False)

    @pytest.fixture
    def redactkey_tool_transport(self) -> Iterator[FixtureTransport]:
        """A `FixtureTransport` for the HTTP APIs your tools call, in the tool mode."""
        yield from self._transport(tool=True)
