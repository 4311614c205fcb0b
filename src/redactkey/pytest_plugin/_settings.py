"""The plugin's settings: its options and ini values, and each test's modes (after its
marker, the options, the environment and the ini) and fixture directory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .._errors import RedactkeyError
from ..fixtures._age import EXPIRY_ACTIONS, ExpiryAction, parse_duration
from ..record._modes import MODE_ENV, MODEL_MODE_ENV, MODES, Mode, parse_mode

__all__ = [
    "MARKER",
    "RUN_KEY",
    "SETTINGS_KEY",
    "Options",
    "RedactkeySettings",
    "fixture_dir",
    "pytest_addoption",
    "settings_for",
]

MARKER = "redactkey"
GUARD_SCOPES = ("used", "all", "off")
VERIFY_POLICIES = ("fail", "report")
STORES = ("dir", "cassette")

RUN_KEY = pytest.StashKey[Any]()  # the session's `Run` (`._run`, which imports this module)
SETTINGS_KEY = pytest.StashKey["RedactkeySettings"]()


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
class Options:
    """Session-wide settings, resolved once from options, environment and ini."""

    mode: Mode  # the session mode: option, else environment, else replay
    mode_from: str  # "option", "env" or "default"
    model_mode: Mode  # option, else environment, else the session mode
    model_mode_from: str  # "option", "env", or the session mode's when it follows that
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
    def of(cls, config: pytest.Config) -> Options:
        def settled(option: str, flag: str, variable: str,
                    fallback: tuple[Mode, str]) -> tuple[Mode, str]:
            given = _mode(config.getoption(option), flag)
            if given is not None:
                return given, "option"
            # Read as the record layer reads it: blanks and case do not matter.
            from_env = _mode(os.environ.get(variable, "").strip().lower(), variable)
            return (from_env, "env") if from_env is not None else fallback

        mode, mode_from = settled("redactkey_mode", "--redactkey-mode", MODE_ENV,
                                  ("replay", "default"))
        model_mode, model_mode_from = settled("redactkey_model_mode", "--redactkey-model-mode",
                                              MODEL_MODE_ENV, (mode, mode_from))
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


def fixture_dir(item: pytest.Item, template: str, marker_path: Any) -> Path:
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


def settings_for(item: pytest.Item) -> RedactkeySettings:
    settings = item.stash.get(SETTINGS_KEY, None)
    if settings is not None:
        return settings
    run = item.config.stash[RUN_KEY]
    options: Options = run.options
    kwargs = _marker_kwargs(item) if run.marked(item) else {}
    where = f"{item.nodeid}: @pytest.mark.{MARKER}"
    marker_mode = _mode(kwargs.get("mode"), f"{where} mode")
    marker_model_mode = _mode(kwargs.get("model_mode"), f"{where} model_mode")
    # The marker is the most specific: it beats the option, which beats the environment.
    mode: Mode = marker_mode or options.mode
    mode_from = "marker" if marker_mode else options.mode_from
    model_mode: Mode
    if marker_model_mode:
        model_mode, model_from = marker_model_mode, "marker"
    elif marker_mode:
        model_mode, model_from = marker_mode, "marker mode"
    else:
        model_mode, model_from = options.model_mode, options.model_mode_from
    settings = item.stash[SETTINGS_KEY] = RedactkeySettings(
        nodeid=item.nodeid, mode=mode, model_mode=model_mode,
        fixture_dir=run.shared.fixture_dir(item, kwargs.get("path")),
        allow_loopback=options.allow_loopback,
        how_to_record=_advice(mode, mode_from, model_mode, model_from),
    )
    return settings
