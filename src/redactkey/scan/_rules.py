"""The detector rules, read from `rules.toml` (its header lists the fields): one `Rule` per
entry, with its examples. Why rules are data and every pattern linear:
docs/decisions/0070-rules-as-data-and-linear-patterns.md.
"""

from __future__ import annotations

import ast
import base64
import functools
import importlib
import logging
import os
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from importlib.util import find_spec
from typing import Any

import tomli

from .._errors import UsageError
from ._validators import ALPHABETS, VALIDATORS, fake, with_checksum

__all__ = ["DEFAULT_RULES", "NEAR_MISS_RULES", "Rule", "custom_rules", "grows_linearly"]

# The longest window a pattern may read from its start: an unbounded pattern (a plugin's
# `{70,}`) is tried on this much and no more, so no text makes one attempt long.
MAX_WIDTH = 65536 + 256
# Characters a key is glued to when they touch it: it is then part of something bigger.
TOKEN_GLUE = "A-Za-z0-9_\\-"

try:  # the regular-expression parser of the running Python (`sre_parse` before 3.11)
    _parser: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover - Python 3.10
    _parser = importlib.import_module("sre_parse")

_FLAGS = {"i": re.IGNORECASE, "s": re.DOTALL, "x": re.VERBOSE}


@functools.cache
def _class_chars(spec: str) -> frozenset[str]:
    """The characters of a regex character-class body such as `A-Za-z0-9_\\-`."""
    return frozenset(c for c in map(chr, range(128)) if re.fullmatch(f"[{spec}]", c))


@dataclass(frozen=True, eq=False)
class Rule:
    """One detector, declared once in `rules.toml` (see the field list at its top)."""

    name: str
    keywords: tuple[str, ...]
    pattern_text: str = ""
    plugin: str = ""
    flags: int = 0
    caseless: bool = False
    before: int = 0
    group: int = 0
    bounded: bool = False
    lead: bool = True
    lead_glue: frozenset[str] = field(default_factory=lambda: _class_chars(TOKEN_GLUE),
                                      repr=False)
    validate: Callable[[str], bool] | None = None
    ids: bool = False
    near_miss: bool = False
    also: tuple[str, ...] = ()
    across: bool = False
    shape: str = ""
    examples: tuple[str, ...] = field(default=(), repr=False)
    not_examples: tuple[str, ...] = field(default=(), repr=False)

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern (a plugin's is imported the first time a rule needs it)."""
        if self.plugin:
            return _plugin_pattern(self.plugin)
        return re.compile(self.pattern_text, self.flags)

    @functools.cached_property
    def width(self) -> int:
        """The longest text a match can span from its start (capped at `MAX_WIDTH`)."""
        widest: int = _parser.parse(self.regex.pattern, self.regex.flags).getwidth()[1]
        return min(MAX_WIDTH, widest)

    def example_texts(self) -> list[str]:
        return [expand(t, f"{self.name}:{i}") for i, t in enumerate(self.examples)]

    def not_example_texts(self) -> list[str]:
        return [expand(t, f"{self.name}:not:{i}") for i, t in enumerate(self.not_examples)]


# --- examples ---------------------------------------------------------------------------

_TEMPLATE = re.compile(r"\{([a-z0-9-]+)(?::([^}:]*))?(?::([a-z]+))?\}")
_JWT_HEAD = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
_JWT_NONE = base64.urlsafe_b64encode(b'{"alg":"none"}').decode().rstrip("=")
_JWT_BODY = base64.urlsafe_b64encode(
    b'{"sub":"1234567890","name":"Example","iat":1516239022}').decode().rstrip("=")


def expand(template: str, seed: str) -> str:
    """An example text from its template (`{fake:40:hex}`, `{checksummed:ghp_}`, …): the
    same on every run, and never a real key in the source."""
    count = 0

    def one(match: re.Match[str]) -> str:
        nonlocal count
        count += 1
        kind, arg, alphabet = match.group(1), match.group(2) or "", match.group(3)
        where = f"{seed}:{count}"
        if kind == "fake":
            return fake(int(arg), ALPHABETS[alphabet or "alnum"], seed=where)
        if kind == "checksummed":
            return with_checksum(arg, where)
        if kind == "checksummed-broken":
            good = with_checksum(arg, where)
            return good[:-1] + ("0" if good[-1] != "0" else "1")
        if kind == "basic":
            return base64.b64encode(f"{arg}:{fake(16, seed=where)}".encode()).decode()
        if kind == "basic-latin1":
            return base64.b64encode(b"j\xf6rg:" + fake(12, seed=where).encode()).decode()
        if kind == "jwt":
            return f"{_JWT_HEAD}.{_JWT_BODY}.{fake(43, ALPHABETS['urlsafe'], seed=where)}"
        if kind == "jwt-none":
            return f"{_JWT_NONE}.{_JWT_BODY}"
        raise ValueError(f"rules.toml: unknown example template {{{kind}}}")

    return _TEMPLATE.sub(one, template)


# --- loading ----------------------------------------------------------------------------

_FIELDS = {"id", "keywords", "pattern", "plugin", "flags", "caseless", "before", "group",
           "bounded", "lead", "lead-glue", "validate", "ids", "near-miss", "also", "across",
           "shape",
           "examples", "not-examples"}


def _rule(entry: Mapping[str, Any]) -> Rule:
    unknown = set(entry) - _FIELDS
    if unknown or ("pattern" in entry) == ("plugin" in entry):
        raise ValueError(f"rules.toml: rule {entry.get('id')!r}: unknown fields "
                         f"{sorted(unknown)} or not exactly one of pattern/plugin")
    validate = entry.get("validate", "")
    if validate and validate not in VALIDATORS:
        raise ValueError(f"rules.toml: rule {entry['id']!r}: no validator {validate!r}")
    flags = 0
    for letter in entry.get("flags", ""):
        flags |= _FLAGS[letter]
    return Rule(
        name=entry["id"], keywords=tuple(entry["keywords"]),
        pattern_text=entry.get("pattern", ""), plugin=entry.get("plugin", ""), flags=flags,
        caseless=entry.get("caseless", False), before=entry.get("before", 0),
        group=entry.get("group", 0), bounded=entry.get("bounded", False),
        lead=entry.get("lead", entry.get("before", 0) == 0),
        lead_glue=_class_chars(entry.get("lead-glue", TOKEN_GLUE)),
        validate=VALIDATORS[validate] if validate else None,
        ids=entry.get("ids", False), near_miss=entry.get("near-miss", False),
        also=tuple(entry.get("also", ())), across=entry.get("across", False),
        shape=entry.get("shape", ""),
        examples=tuple(entry.get("examples", ())),
        not_examples=tuple(entry.get("not-examples", ())),
    )


def load_rules() -> tuple[Rule, ...]:
    data = tomli.loads(resources.files(__package__).joinpath("rules.toml").read_text("utf-8"))
    return tuple(_rule(entry) for entry in data["rule"])


DEFAULT_RULES: tuple[Rule, ...] = load_rules()
#: Rule names whose findings are near misses (warnings in `redact check`).
NEAR_MISS_RULES: frozenset[str] = frozenset(r.name for r in DEFAULT_RULES if r.near_miss)


# --- detect-secrets' plugins ------------------------------------------------------------

_PLUGIN_LOAD = threading.Lock()


@contextmanager
def _host_state_kept() -> Iterator[None]:
    """Undo what detect-secrets does to process-wide logging and warnings when it loads
    (`logging.captureWarnings(True)` and a stderr handler on its logger)."""
    showwarning = warnings.showwarning
    logger = logging.getLogger("detect-secrets")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    try:
        yield
    finally:
        if warnings.showwarning is not showwarning:
            logging.captureWarnings(False)
            warnings.showwarning = showwarning
        logger.handlers = handlers
        logger.setLevel(level)
        logger.propagate = propagate


@functools.cache
def _plugin_pattern(where: str) -> re.Pattern[str]:
    """Pattern `index` of a detect-secrets plugin class's `denylist` (`module.Class:index`).
    Only the class attribute is read: never detect-secrets' settings, which stay as the
    host left them. One thread at a time, so no thread saves another's half-done state."""
    path, index = where.rsplit(":", 1)
    module, name = path.rsplit(".", 1)
    denylist = _class_denylist(module, name)
    if denylist is None:
        with _PLUGIN_LOAD, _host_state_kept():
            plugin = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
        denylist = plugin.denylist
    pattern: re.Pattern[str] = denylist[int(index)]
    return pattern


def _class_denylist(module: str, name: str) -> Any:
    """The `denylist` of class `name` in detect-secrets' plugin `module`, from the class
    body's plain assignments run on their own: importing a plugin module imports `requests`
    for its verifiers, which costs a `check` run about 0.2 CPU-s. None when the body needs
    more than `re` (then the module is imported)."""
    spec = find_spec("detect_secrets")  # (a dotted name imports its parents)
    if spec is None or not spec.submodule_search_locations:
        return None
    origin = os.path.join(spec.submodule_search_locations[0], "plugins", f"{module}.py")
    try:
        with open(origin, encoding="utf-8") as source:
            tree = ast.parse(source.read())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            body: list[ast.stmt] = [stmt for stmt in node.body if isinstance(stmt, ast.Assign)]
            namespace: dict[str, Any] = {"re": re}
            try:
                exec(compile(ast.Module(body=body, type_ignores=[]), origin, "exec"),
                     namespace)
            except Exception:  # anything but plain assignments: import the module
                return None
            return namespace.get("denylist")
    return None


# --- a user's own rules -----------------------------------------------------------------

# Probe lengths: small steps first (an exponential pattern explodes within a few dozen
# characters), then doubling (a quadratic one shows by a few thousand).
_PROBE_LENGTHS = (8, 12, 16, 20, 24, 28, 32, 64, 256, 1024, 4096, 16384, 65536)
_PROBE_SECONDS = 0.05
_PROBE_PER_CHAR = 1e-5


@functools.lru_cache(maxsize=256)
def grows_linearly(pattern: re.Pattern[str]) -> bool:
    """Whether `pattern` stays fast on long runs of the characters it mentions (and of
    letters, digits, spaces and punctuation): False for nested or overlapping repeats that
    backtrack, like `(a+)+b` or `[a-z]*://`. A probe, not a proof; it stops at the first
    slow length, so a pathological pattern costs a fraction of a second to refuse."""
    mentioned = sorted({c for c in pattern.pattern if c.isalnum() or c in "-_.:/@= "})
    chars = list(dict.fromkeys(["a", "A", "0", " ", "-", ".", "/", ":", *mentioned[:24]]))
    for char in chars:
        for length in _PROBE_LENGTHS:
            text = char * length + "\x00"
            start = time.perf_counter()
            for _ in pattern.finditer(text):
                pass
            if time.perf_counter() - start > _PROBE_SECONDS + _PROBE_PER_CHAR * length:
                return False
    return True


def custom_rules(patterns: Mapping[str, str | re.Pattern[str]]) -> tuple[Rule, ...]:
    """A user's own detectors: rule name -> regular expression; the whole match is the
    secret. They have no keyword, so they read every text: each must grow linearly."""
    rules = []
    for name, pattern in sorted(patterns.items()):
        try:
            compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        except re.error as exc:
            raise UsageError(
                f"extra pattern {name!r} is not a valid regular expression: {exc}") from None
        if compiled.match(""):
            raise UsageError(f"extra pattern {name!r} matches the empty string; it would "
                             "redact everything")
        if not grows_linearly(compiled):
            raise UsageError(
                f"extra pattern {name!r} is too slow on long input: its cost grows faster "
                "than linearly with the text (nested or overlapping repeats such as `(a+)+` "
                "or `[a-z]*x`); start it with a literal and bound each repeat, e.g. "
                "`acme_[0-9a-f]{16,64}`"
            )
        rules.append(Rule(name=name, keywords=(), pattern_text=compiled.pattern,
                          flags=compiled.flags, lead=False))
    return tuple(rules)

