"""`[tool.redactkey]` configuration: pyproject.toml or .redactkey.toml, validated by pydantic.

Every setting, with an example, is in docs/configuration.md. `.redactkey.toml` holds the
same keys at its top level. `load_config(start)` looks in `start` and its parents for the
first of `.redactkey.toml` or a `pyproject.toml` with a `[tool.redactkey]` table; none
found means defaults.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._errors import ConfigError, UsageError
from ..fixtures._answers import AnswerNormalizer, DropFields, PinFields, preset
from ..keys._keys import KeySpec, default_spec

if TYPE_CHECKING:
    from ..fixtures._verify import VerifyRules


__all__ = [
    "AllowEntry",
    "AnswerSettings",
    "Config",
    "DetectorSpec",
    "KeySpecSettings",
    "VerifySettings",
    "load_config",
    "load_config_file",
]

_PRIVATE_FILE = ".redactkey.toml"
T = TypeVar("T")


def _checked(check: Callable[[Any], object], value: T, prefix: str = "") -> T:
    """`value` once `check(value)` passed; its `UsageError` as pydantic's `ValueError`."""
    try:
        check(value)
    except UsageError as exc:
        raise ValueError(str(exc).removeprefix(prefix)) from None
    return value


class _Model(BaseModel):
    # Each model's validator is built the first time it validates: a run reads one
    # configuration (or none), and building them all costs an import more than that.
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, defer_build=True,
        alias_generator=lambda name: name.replace("_", "-"),
    )


class DetectorSpec(_Model):
    """An extra detector: a rule name and a regular expression (the whole match is the secret)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    pattern: str = Field(min_length=1)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        if compiled.match(""):
            raise ValueError("the pattern matches the empty string; it would flag everything")
        return value

    def compiled(self) -> re.Pattern[str]:
        """The compiled regular expression."""
        return re.compile(self.pattern)


class AllowEntry(_Model):
    """An accepted finding: a file (glob), a rule, and optionally the finding's fingerprint."""

    path: str = Field(min_length=1)
    rule: str = Field(min_length=1)
    fingerprint: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$")
    reason: str = ""

    def matches(self, path: str, rule: str, fingerprint: str) -> bool:
        """Whether this entry accepts a finding of `rule` in `path` with `fingerprint`."""
        if rule != self.rule and self.rule != "*":
            return False
        if self.fingerprint is not None and fingerprint != self.fingerprint:
            return False
        posix = PurePosixPath(path.replace("\\", "/")).as_posix()
        return fnmatch.fnmatchcase(posix, self.path) or posix.endswith("/" + self.path) or (
            posix == self.path
        )


class KeySpecSettings(_Model):
    """Per-kind key-spec overrides: fields that count, fields that never count, headers."""

    fields: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()
    drop_query: tuple[str, ...] = ()

    def apply(self, spec: KeySpec) -> KeySpec:
        """`spec` widened/narrowed by these settings."""
        if self.fields is not None:
            spec = spec.only(*self.fields)
        if self.ignore:
            spec = spec.narrow(*self.ignore)
        if self.headers:
            spec = spec.with_headers(*self.headers)
        if self.drop_query:
            spec = spec.with_drop_query(*self.drop_query)
        return spec


class VerifySettings(_Model):
    """`[tool.redactkey.verify]`: what verify mode ignores or pins, and number tolerance."""

    ignore: tuple[str, ...] = ()
    exact: tuple[str, ...] = ()
    rel_tol: float = Field(default=1e-6, ge=0)
    abs_tol: float = Field(default=1e-9, ge=0)
    presets: bool = True

    @field_validator("ignore", "exact")
    @classmethod
    def _pointers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pointer in value:
            if not pointer.startswith("/"):
                raise ValueError(f"{pointer!r} is not a JSON pointer; start it with '/'")
        return value

    def rules(self) -> VerifyRules:
        """These settings as `VerifyRules` (one object: the settings are frozen)."""
        return self._rules

    @functools.cached_property
    def _rules(self) -> VerifyRules:
        from ..fixtures._verify import VerifyRules

        return VerifyRules(ignore=self.ignore, exact=self.exact, rel_tol=self.rel_tol,
                           abs_tol=self.abs_tol, presets=self.presets)


class AnswerSettings(_Model):
    """`[tool.redactkey.answers]`: answer normalizers run before a recorded answer is written."""

    presets: tuple[str, ...] = ()
    pin: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()

    @field_validator("presets")
    @classmethod
    def _known_presets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _checked(lambda names: [preset(name) for name in names], value)

    @field_validator("pin", "drop")
    @classmethod
    def _pointers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _checked(lambda pointers: PinFields(*pointers), value)

    def normalizers(self) -> tuple[AnswerNormalizer, ...]:
        """The answer normalizers these settings describe: presets, then pin, then drop
        (built once: the settings are frozen, the normalizers hold no state)."""
        return self._normalizers

    @functools.cached_property
    def _normalizers(self) -> tuple[AnswerNormalizer, ...]:
        out: list[AnswerNormalizer] = [preset(name) for name in self.presets]
        if self.pin:
            out.append(PinFields(*self.pin))
        if self.drop:
            out.append(DropFields(*self.drop))
        return tuple(out)


class Config(_Model):
    """Validated `[tool.redactkey]` settings; `Config()` is the defaults."""

    placeholder: str = Field(default="[REDACTED]", min_length=1)
    min_secret_length: int = Field(default=8, ge=4, le=256)
    sensitive_keys: tuple[str, ...] = ()
    secret_env: tuple[str, ...] = ()
    detectors: tuple[DetectorSpec, ...] = ()
    keys: dict[str, KeySpecSettings] = Field(default_factory=dict)
    hosts: dict[str, str] = Field(default_factory=dict)
    answers: AnswerSettings = Field(default_factory=AnswerSettings)
    allowlist: tuple[AllowEntry, ...] = ()
    max_fixture_bytes: int = Field(default=1024 * 1024, ge=1)
    verify: VerifySettings = Field(default_factory=VerifySettings)
    max_age: str | None = None
    on_expiry: Literal["warn", "fail", "rerecord"] = "warn"
    source: str | None = Field(default=None, exclude=True)

    @field_validator("max_age")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        from ..fixtures._age import parse_duration

        return value if value is None else _checked(parse_duration, value)

    @field_validator("sensitive_keys", "secret_env")
    @classmethod
    def _non_empty_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not name.strip():
                raise ValueError("names must not be empty")
        return value

    @field_validator("hosts")
    @classmethod
    def _host_aliases(cls, value: dict[str, str]) -> dict[str, str]:
        return _checked(KeySpec.http().with_hosts, value, "KeySpec.hosts: ")

    def with_hosts(self, hosts: dict[str, str]) -> Config:
        """These settings with more host aliases (`hosts` win over the configured ones)."""
        try:
            return self.model_validate({**self.model_dump(), "source": self.source,
                                        "hosts": {**self.hosts, **hosts}})
        except ValidationError as exc:
            problem = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
            raise UsageError(f"hosts: {problem}") from None

    def extra_patterns(self) -> dict[str, re.Pattern[str]]:
        """The extra detectors, as `Redactor(extra_patterns=...)` takes them."""
        return {spec.name: spec.compiled() for spec in self.detectors}

    def key_spec(self, kind: str) -> KeySpec:
        """The key spec for `kind`: the default spec with `[tool.redactkey.keys.<kind>]` applied
        (worked out once per kind: the settings and the specs are frozen)."""
        specs = self._key_specs
        spec = specs.get(kind)
        if spec is None:
            spec = self._key_spec(kind)
            if len(specs) < 1024:
                specs[kind] = spec
        return spec

    @functools.cached_property
    def _key_specs(self) -> dict[str, KeySpec]:
        return {}

    def _key_spec(self, kind: str) -> KeySpec:
        spec = default_spec(kind)
        if self.hosts and spec.shape == "http":
            spec = spec.with_hosts(self.hosts)
        settings = self.keys.get(kind)
        return settings.apply(spec) if settings is not None else spec

    def allowed(self, path: str, rule: str, fingerprint: str) -> AllowEntry | None:
        """The allowlist entry accepting this finding, if any.

        Entry paths are relative to the directory of the configuration file, so a run
        from a subdirectory accepts the same findings; a file outside that directory
        (or a configuration not read from a file) is matched by its path as printed."""
        if not self.allowlist:
            return None
        relative = self._from_config_dir(path)
        return next((e for e in self.allowlist if e.matches(relative, rule, fingerprint)), None)

    def _from_config_dir(self, path: str) -> str:
        if self.source is None:
            return path
        base = os.path.dirname(os.path.realpath(self.source))
        full = os.path.realpath(path)
        try:
            inside = os.path.commonpath([base, full]) == base
        except ValueError:  # another drive
            return path
        return os.path.relpath(full, base) if inside else path


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"] if part != "__root__")
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown setting (check the spelling; see docs/configuration.md)"
    return f"{where or '(table)'}: {message}"


def _validate(table: Any, source: str, prefix: str) -> Config:
    if not isinstance(table, dict):
        raise ConfigError(source, f"{prefix or 'the file'} must be a table")
    if "source" in table:
        raise ConfigError(source, f"{prefix}source: unknown setting (see docs/configuration.md)")
    if not prefix and isinstance(table.get("tool"), dict) and "redactkey" in table["tool"]:
        raise ConfigError(
            source, "[tool.redactkey] belongs in pyproject.toml; .redactkey.toml holds the "
            "same settings at its top level: remove the [tool.redactkey] header line "
            "(and the 'tool.redactkey.' of sub-tables such as [tool.redactkey.keys.http])"
        )
    try:
        return Config.model_validate({**table, "source": source})
    except ValidationError as exc:
        problems = "; ".join(
            f"{prefix}{_describe(err)}" if prefix else _describe(err) for err in exc.errors()
        )
        raise ConfigError(source, f"invalid configuration: {problems}") from None


def load_config_file(path: Path) -> Config:
    """Read and validate one `pyproject.toml` (its `[tool.redactkey]`) or `.redactkey.toml`."""
    source = str(path)
    data = _parse_toml(path, source)
    if path.name == "pyproject.toml":
        return _from_pyproject(data, source)
    return _validate(data, source, "")


def _from_pyproject(data: dict[str, Any], source: str) -> Config:
    table = data.get("tool", {}).get("redactkey", {}) if isinstance(data, dict) else {}
    return _validate(table, source, "tool.redactkey.")


def _governing(
    start: Path, seen: list[tuple[str, _Signature | None]]
) -> tuple[Path, dict[str, Any] | None] | None:
    """The configuration file governing `start` and, for a pyproject.toml, its parsed
    table (read once: looking for the table already parsed it). `seen` collects every
    file looked at, with what the file system said of it then (`_signature`)."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for directory in (here, *here.parents):
        private = directory / _PRIVATE_FILE
        if _looked_at(private, seen):
            return private, None
        pyproject = directory / "pyproject.toml"
        if _looked_at(pyproject, seen):
            table = _with_table(pyproject)
            if table is not False:
                return pyproject, table or None
    return None


_Signature = tuple[int, int, int, int, int]


def _signature(path: str) -> _Signature | None:
    """What a file's content is known by without reading it (device, inode, size, and
    modification and change times in nanoseconds), or None when no regular file is there."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _looked_at(path: Path, seen: list[tuple[str, _Signature | None]]) -> bool:
    """Whether `path` is a regular file (`Path.is_file`), noted in `seen`."""
    signature = _signature(str(path))
    seen.append((str(path), signature))
    return signature is not None


def _with_table(pyproject: Path) -> dict[str, Any] | Literal[False] | None:
    """The parsed pyproject when it holds `[tool.redactkey]`, False when it does not, None
    when it cannot be parsed but names the table (the error is then ours to report)."""
    try:
        data = _parse_toml(pyproject, str(pyproject))
    except ConfigError:
        # a broken pyproject without our table is not ours to report; with it, it is
        try:
            names_ours = pyproject.is_file() and b"[tool.redactkey" in pyproject.read_bytes()
        except OSError:
            names_ours = False
        return None if names_ours else False
    tool = data.get("tool")
    return data if isinstance(tool, dict) and "redactkey" in tool else False


def _parse_toml(path: Path, source: str) -> dict[str, Any]:
    """A TOML file's table; every way it can be unusable is a `ConfigError` naming the file."""
    try:
        if path.exists() and not path.is_file():
            # a directory, or a FIFO / device that would block or never end
            raise ConfigError(source, "not a regular file; point --config at a TOML file")
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(source, f"cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            source, f"not UTF-8 (invalid byte at offset {exc.start}); save it as UTF-8"
        ) from None
    import tomli  # here: a run without a configuration file never needs a TOML parser

    try:
        return tomli.loads(text)
    except tomli.TOMLDecodeError as exc:
        raise ConfigError(source, f"not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(source, "not usable TOML: nested too deeply") from None


# The configuration found from a directory, and every file its search looked at with what
# the file system said of it then: while they all say the same, the same files govern
# with the same content, and the search and the TOML parse are not done again (a
# FixtureTransport or ModelFixtures made per test or per client finds its configuration).
_FOUND: dict[str, tuple[tuple[tuple[str, _Signature | None], ...], Config]] = {}
_FOUND_MAX: Final = 64


def load_config(start: Path | None = None, *, explicit: Path | None = None) -> Config:
    """The configuration for a run: `explicit` if given, else the nearest file, else defaults.

    A search from the same place whose files are unchanged (`_signature`, `_settled`)
    gives the configuration already read; a file added, removed or written is read anew."""
    if explicit is not None:
        return load_config_file(explicit)
    where = os.path.realpath(start if start is not None else os.getcwd())
    found_before = _FOUND.get(where)
    if found_before is not None:
        looked_at, config = found_before
        if all(_signature(path) == signature for path, signature in looked_at):
            return config
    seen: list[tuple[str, _Signature | None]] = []
    found = _governing(Path(where), seen)
    if found is None:
        config = Config()
    else:
        path, data = found
        config = load_config_file(path) if data is None else _from_pyproject(data, str(path))
    if _settled(seen):
        if len(_FOUND) >= _FOUND_MAX:
            _FOUND.clear()
        _FOUND[where] = (tuple(seen), config)
    return config


_SETTLED_NS: Final = 2_000_000_000


def _settled(seen: list[tuple[str, _Signature | None]]) -> bool:
    """Whether every file looked at was last written over two seconds ago. A file system
    stamps times at a coarse clock (milliseconds), so a file written twice in one tick,
    at the same size, keeps its signature: only a settled file's signature tells its
    content (the "racy clean" entry of git's index)."""
    recent = time.time_ns() - _SETTLED_NS
    return all(
        signature is None or (signature[3] < recent and signature[4] < recent)
        for _, signature in seen
    )
