"""Run secrets: every credential a run's components read, by slot (docs/redaction.md,
"Run secrets"). The forms each travels in are `_variants`'s, where a slot reads its value
from `_sources`'s. A value is never shown: not in `repr`, `str`, an error or a pickle.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel, SecretBytes, SecretStr

from .._errors import DummySecretWarning, SecretError, UsageError, raised_at_entry, warn_at_caller
from ._environment import records_secrets, secret_variables
from ._sources import (
    DeclaresSecrets,
    SecretSource,
    check_slot,
    check_source,
    decoded,
    read_source,
)
from ._variants import value_variants

__all__ = [
    "DEFAULT_MIN_LENGTH",
    "DeclaresSecrets",
    "RunSecrets",
    "SecretSource",
    "collect_run_secrets",
    "dummy_reason",
    "mask",
]

DEFAULT_MIN_LENGTH = 8
# A credential learned from a request is matched in every form it travels in, at about
# 3 KB of matcher per character: a longer "credential" (a 1 MB header) is not learned.
# Most servers refuse a request whose headers pass 8 KB, so no working credential does.
MAX_LEARNED_LENGTH = 8192


def mask(value: str) -> str:
    """A preview that shows at most a quarter of `value` (and never more than 4 characters)."""
    shown = min(4, len(value) // 4)
    return value[:shown] + "…"


# --- stand-in values -------------------------------------------------------------------

# A replay machine runs with dummy keys: `OPENAI_API_KEY=dummy`, `sk-test-key`, `xxxxxxxx`.
# A value made only of these words (after a provider prefix) is a stand-in, not a secret.
_PLACEHOLDER = re.compile(
    r"""(?ix)
    (?:sk-(?:ant-|proj-)?|sk_|ghp_|gsk_|hf_|xai-|pk_)?
    (?:dummy|fake|tests?|testing|for|only|ci|invalid|bogus|placeholder|changeme|change|me|example|sample|secret|key|token
      |password|not|real|replace|your|api|here|foo|bar|baz|none|null|mock|local|dev
      |x|\*|0|1|2|3|4|[-_.:\s<>])+
    """
)
_MIN_LENGTH_FIX = (
    "record with the real credential; or, if you accept the risk, lower the minimum: "
    "min-secret-length in [tool.redactkey] (pytest: ini redactkey_min_secret_length; "
    "Python: RunSecrets(min_length=...))"
)


def dummy_reason(value: str, min_length: int = DEFAULT_MIN_LENGTH) -> str | None:
    """Why `value` is a stand-in rather than a credential (too short, placeholder), or None."""
    if len(value) < min_length:
        return f"its value is shorter than the safe minimum of {min_length} characters"
    if len(value) <= 64 and _PLACEHOLDER.fullmatch(value):
        return "its value looks like a placeholder, not a credential"
    return None


# --- the collector ----------------------------------------------------------------------


class RunSecrets:
    """The secret values of a run, by slot name. Values are never shown.

    A stand-in value (shorter than `min_length`, or a placeholder such as `dummy`) is
    skipped and listed in `.dummies` or refused as docs/redaction.md says ("Too short is
    an error when recording"); `skip_short` fixes the choice, `None` decides by the mode
    in `environ` (else the process environment).
    """

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        *,
        min_length: int = DEFAULT_MIN_LENGTH,
        skip_short: bool | None = None,
    ) -> None:
        if min_length < 1:
            raise UsageError("RunSecrets(min_length=...) must be at least 1")
        self._environ = environ
        self._min_length = min_length
        self._warn = skip_short is None
        self._skip_short = not records_secrets(environ) if skip_short is None else skip_short
        self._dummies: dict[str, str] = {}
        self._values: dict[str, list[str]] = {}
        self._sources: dict[str, SecretSource] = {}
        self._missing: set[str] = set()
        self._skipped: set[str] = set()
        self._version = 0
        self._generation = object()  # (see `generation`)
        # False while the containers above are shared with a copy: copied before a write.
        self._owned = True
        self._lock = threading.Lock()
        # (version, patterns): the patterns are assembled once per version of the values,
        # and each value's encoded variants once (an added value adds its own only).
        self._patterns: tuple[int, tuple[tuple[str, str], ...]] | None = None
        self._variants: dict[str, tuple[str, ...]] = {}

    def copy(self) -> RunSecrets:
        """An independent copy: values added to either later are not seen by the other.
        Until then the two share what they hold (copied on the first write to either)
        and what is derived from it (the encoded variants, the patterns)."""
        other = object.__new__(RunSecrets)
        with self._lock:
            self._owned = False
            # The lock too: a copy and its original never hold it while calling each
            # other, and a new lock per copy costs a test more than sharing this one.
            other.__dict__.update(self.__dict__)
        return other

    def _own(self) -> None:
        """Make the containers this object's own before writing to them (under the lock)."""
        if not self._owned:
            self._dummies = dict(self._dummies)
            self._values = {slot: list(values) for slot, values in self._values.items()}
            self._sources = dict(self._sources)
            self._missing = set(self._missing)
            self._skipped = set(self._skipped)
            self._owned = True

    # -- construction helpers --

    @classmethod
    @raised_at_entry
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        *,
        min_length: int = DEFAULT_MIN_LENGTH,
        skip_short: bool | None = None,
    ) -> RunSecrets:
        """Collect every environment variable whose name looks secret (flag-like values
        are listed in `.skipped`; URLs and DSNs give their password); stand-in values as
        `RunSecrets(skip_short=...)` says."""
        env = os.environ if environ is None else environ
        secrets = cls(env, min_length=min_length, skip_short=skip_short)
        for name, value, hint in secret_variables(env):
            if hint is None:
                secrets._skipped.add(name)
            else:
                secrets._register(name, value, source_hint=hint)
        return secrets

    # -- registration --

    @raised_at_entry
    def declare(self, slot: str, source: SecretSource = None) -> None:
        """Say where `slot` is read from, without reading it yet."""
        check_slot(slot)
        check_source(slot, source)
        with self._lock:
            self._own()
            self._sources[slot] = source

    @raised_at_entry
    def collect(self, *components: object) -> None:
        """Register every slot the components declare or hold, as `collect_run_secrets` does."""
        for component in components:
            _collect(self, component)

    @raised_at_entry
    def add(self, slot: str, value: str | bytes | SecretStr | SecretBytes) -> None:
        """Register a value for `slot` (a slot may hold several, e.g. a refreshed token)."""
        check_slot(slot)
        self._register(slot, decoded(slot, value))

    @raised_at_entry
    def read(self, slot: str) -> str:
        """Resolve `slot` from its source, register the value and return it."""
        check_slot(slot)
        value = self._resolve(slot)
        if value is None:
            raise SecretError(
                slot,
                "is not set (no environment variable of that name, no declared source)",
                f"set {slot} or declare a source with RunSecrets.declare",
            )
        self._register(slot, value)
        return value

    def _resolve(self, slot: str) -> str | None:
        return read_source(slot, self._sources.get(slot), self._environ)

    def learn(self, slot: str, value: str) -> None:
        """Register a credential a request sent (see `Redactor.learn`): a stand-in value
        long enough to redact is kept even in replay, so a dummy key echoed into a prompt
        keys the way the live one did; a short one is refused as by `add`; one longer
        than `MAX_LEARNED_LENGTH` is passed over (it is still redacted where it was sent
        by name)."""
        check_slot(slot)
        if len(value) > MAX_LEARNED_LENGTH:
            return
        self._register(slot, value, keep_stand_in=len(value) >= self._min_length)

    def holds(self, slot: str, value: str) -> bool:
        """Whether `value` is registered under `slot` already (registering it again would
        change nothing)."""
        return value in self._values.get(slot, ())

    def _register(self, slot: str, value: str, *, source_hint: str = "its value",
                  keep_stand_in: bool = False) -> None:
        reason = None if keep_stand_in else dummy_reason(value, self._min_length)
        if reason is not None and self._skip_short:
            with self._lock:
                self._own()
                first = slot not in self._dummies
                self._dummies[slot] = reason.replace("its value", source_hint, 1)
                self._skipped.add(slot)
            if first and self._warn:
                warn_at_caller(DummySecretWarning(slot, self._dummies[slot]))
            return
        if len(value) < self._min_length:
            raise SecretError(
                slot,
                f"{source_hint} is shorter than the safe minimum of {self._min_length} "
                "characters, so it cannot be redacted without destroying ordinary text",
                _MIN_LENGTH_FIX,
            )
        with self._lock:
            if self.holds(slot, value):
                return  # nothing new: a shared copy stays shared
            self._own()
            values = self._values.setdefault(slot, [])
            self._missing.discard(slot)
            if value not in values:
                values.append(value)
                self._version += 1
                self._generation = object()

    def _mark_missing(self, slot: str) -> None:
        with self._lock:
            if slot not in self._values and slot not in self._missing:
                self._own()
                self._missing.add(slot)

    # -- read-only views (slot names only) --

    @property
    def version(self) -> int:
        """Grows whenever a value is registered; a `Redactor` rebuilds its matcher on change."""
        return self._version

    @property
    def generation(self) -> object:
        """An opaque token of the values held: a new one whenever a value is registered,
        the same in a copy until either registers one. Two objects with the same
        generation hold the same values, so redactors over them share one scan."""
        return self._generation

    @property
    def min_length(self) -> int:
        return self._min_length

    @property
    def missing(self) -> frozenset[str]:
        """Slots a component declared that had no value in this run."""
        return frozenset(self._missing)

    @property
    def skipped(self) -> frozenset[str]:
        """Slots skipped: flag-like environment values (`1`, `true`) and stand-in values."""
        return frozenset(self._skipped)

    @property
    def dummies(self) -> dict[str, str]:
        """Slots skipped for a stand-in value (too short, placeholder), with the reason."""
        with self._lock:
            return dict(sorted(self._dummies.items()))

    def patterns(self) -> list[tuple[str, str]]:
        """Every (variant, slot) to search for, sorted; for the redactor, never for display."""
        with self._lock:
            cached = self._patterns
            version = self._version
            items = [(slot, list(values)) for slot, values in self._values.items()]
        if cached is not None and cached[0] == version:
            return list(cached[1])
        seen: dict[str, str] = {}
        known = self._variants
        for slot, values in sorted(items):
            for value in values:
                variants = known.get(value)
                if variants is None:
                    variants = known[value] = tuple(value_variants(value))
                for variant in variants:
                    seen.setdefault(variant, slot)
        patterns = tuple(sorted(seen.items()))
        with self._lock:
            if self._version == version:
                self._patterns = (version, patterns)
        return list(patterns)

    def values(self) -> list[tuple[str, str]]:
        """Every (slot, value), sorted; for the redactor's masked-preview check, never for
        display."""
        with self._lock:
            return sorted((slot, value) for slot, values in self._values.items()
                          for value in values)

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._values))

    def __contains__(self, slot: object) -> bool:
        return slot in self._values

    def __repr__(self) -> str:
        return f"RunSecrets(slots={sorted(self._values)!r})"

    def __reduce__(self) -> Any:
        raise UsageError(
            "RunSecrets cannot be pickled: it would write secret values; "
            "build it again in each process with collect_run_secrets(...)"
        )

    def __copy__(self, memo: Any = None) -> RunSecrets:
        raise UsageError("RunSecrets cannot be copied; share the one instance instead")

    __deepcopy__ = __copy__


# --- collecting from components ---------------------------------------------------------


@raised_at_entry
def collect_run_secrets(
    components: Iterable[object],
    *,
    environ: Mapping[str, str] | None = None,
    min_length: int = DEFAULT_MIN_LENGTH,
    skip_short: bool | None = None,
) -> RunSecrets:
    """Gather the value of every slot any component declares or holds (the kinds of
    component are in docs/redaction.md). A declared slot with no value in this run is
    listed in `.missing`, not an error: there is nothing of it to leak.
    """
    secrets = RunSecrets(environ, min_length=min_length, skip_short=skip_short)
    secrets.collect(*components)
    return secrets


def _collect(secrets: RunSecrets, component: object) -> None:
    if isinstance(component, BaseModel):
        _collect_model(secrets, component, _model_prefix(component), set())
        return
    declared: Any = component
    if not isinstance(component, (str, Mapping)):
        if not hasattr(component, "secret_slots"):
            raise UsageError(
                f"collect_run_secrets cannot read secrets from a {type(component).__name__}: "
                "pass a slot name, a mapping of slot to source, a pydantic model, or an object "
                "with a `secret_slots` attribute"
            )
        declared = component.secret_slots
        if callable(declared):
            declared = declared()
    if isinstance(declared, str):
        declared = (declared,)
    pairs = declared.items() if isinstance(declared, Mapping) else [
        (slot, None) for slot in declared]
    for slot, source in pairs:
        secrets.declare(slot, source)  # (which checks both)
        value = secrets._resolve(slot)
        if value is None:
            secrets._mark_missing(slot)
        else:
            secrets._register(slot, value)


def _model_prefix(model: BaseModel) -> str:
    try:
        from pydantic_settings import BaseSettings
    except ImportError:  # pragma: no cover - pydantic-settings is optional
        return type(model).__name__ + "."
    if isinstance(model, BaseSettings):
        prefix = model.model_config.get("env_prefix") or ""
        return str(prefix).upper()
    return type(model).__name__ + "."


def _collect_model(secrets: RunSecrets, model: BaseModel, prefix: str, active: set[int]) -> None:
    if id(model) in active:
        return
    active = active | {id(model)}
    for name in type(model).model_fields:
        value = getattr(model, name, None)
        slot = prefix + (name.upper() if not prefix.endswith(".") else name)
        _collect_value(secrets, value, slot, active)


def _collect_value(secrets: RunSecrets, value: object, slot: str, active: set[int]) -> None:
    if isinstance(value, (SecretStr, SecretBytes)):
        secrets._register(slot, decoded(slot, value))
    elif isinstance(value, BaseModel):
        sep = "__" if not slot.count(".") else "."
        _collect_model(secrets, value, slot + sep, active)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _collect_value(secrets, item, f"{slot}[{key}]", active)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _collect_value(secrets, item, f"{slot}[{index}]", active)
