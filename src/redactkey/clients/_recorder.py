"""`Recorder`: one object that holds what recording decides, and makes every client face
(docs/recorder.md). Each face is built from its settings, so no face reads a mode or a
setting of its own. The Recorder lives with the faces it builds (this stage); a face's
module is imported when the face is first asked for, because its client library is an
optional one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from .._errors import DriftError, DummySecretWarning, warn_at_caller
from ..fixtures._age import ExpiryAction, FixtureAges
from ..fixtures._answers import AnswerNormalizer
from ..fixtures._store import FixtureDir, FixtureStore
from ..fixtures._verify import VerifyRules
from ..keys._keys import KeySpec
from ..record._config import Config, load_config
from ..record._lookup import CallLog
from ..record._modes import MODE_ENV, Mode, how_to_record, parse_mode, settled_modes
from ..record._replay import ModelFixtures
from ..record._tools import ToolFixtures
from ..redact._redactor import Redactor
from ..secrets._run_secrets import RunSecrets

if TYPE_CHECKING:
    import aiohttp
    import requests

    from ._httpx import FixtureTransport
    from ._vcr import VcrHooks

__all__ = ["REPLAY_AWS_CREDENTIALS", "Recorder"]

REPLAY_AWS_CREDENTIALS: Final = {
    "aws_access_key_id": "REDACTKEY-REPLAY",
    "aws_secret_access_key": "redactkey-replay-signs-nothing-that-leaves",
}
"""What `Recorder.boto3_client` signs with in replay: nothing is sent, so no real
credential is needed, and botocore never looks for one (no instance metadata)."""

_DEFAULT_REGION: Final = "us-east-1"


def _advice(model_mode_given: bool) -> tuple[str, str]:
    """What a miss advises for tool and model calls of a Recorder built with arguments."""
    tool = "pass mode='record' (or 'auto', which records only what is missing) to the Recorder"
    if model_mode_given:
        return tool, ("pass model_mode='record' (or 'auto', which records only what is "
                      "missing) to the Recorder")
    return tool, tool + " (model_mode='auto' for model calls alone)"


class Recorder:
    """One object for every client: the store, the modes, the secrets, the redactor.

    `store_or_path` is a fixture store or a directory (a `FixtureDir`). `mode` covers
    tool and HTTP calls, `model_mode` (default: `mode`) model calls: "live", "record",
    "replay", "auto" (replay a hit, record a miss) or "verify". `Recorder.from_config()`
    takes them from ``REDACTKEY_MODE`` / ``REDACTKEY_MODEL_MODE`` instead (default
    "replay"), as a test suite wants.

    The other settings are in docs/recorder.md; `how_to_record` is a text, or one for
    tool calls and one for model calls. The HTTP faces record in the model mode; pass
    ``model=False`` for an API that is not a model.
    """

    def __init__(
        self,
        store_or_path: FixtureStore | str | os.PathLike[str],
        *,
        mode: str = "auto",
        model_mode: str | None = None,
        secrets: RunSecrets | None = None,
        redactor: Redactor | None = None,
        config: Config | None = None,
        spec: KeySpec | None = None,
        hosts: Mapping[str, str] | None = None,
        answer_normalizers: Iterable[AnswerNormalizer] | None = None,
        verify: VerifyRules | None = None,
        on_drift: Callable[[DriftError], None] | None = None,
        max_age: str | timedelta | None = None,
        on_expiry: ExpiryAction | None = None,
        ages: FixtureAges | None = None,
        report: CallLog | None = None,
        label: str | None = None,
        how_to_record: str | tuple[str, str] | None = None,
        how_to_rerecord: str | None = None,
    ) -> None:
        # (not isinstance(..., os.PathLike): an ABC's check costs a test more than this)
        self.store: FixtureStore = (
            FixtureDir(store_or_path)  # type: ignore[arg-type]
            if isinstance(store_or_path, str) or hasattr(store_or_path, "__fspath__")
            else store_or_path)
        self.mode: Mode = parse_mode(mode, "argument") or "auto"
        self.model_mode: Mode = parse_mode(model_mode, "argument") or self.mode
        self._model_mode = model_mode  # (None: it follows `mode`, also in `replace`)
        config = config if config is not None else load_config()
        self.config = config.with_hosts(dict(hosts)) if hosts else config
        if redactor is None:
            if secrets is None:
                secrets = self._environment_secrets()
            redactor = Redactor(secrets, placeholder=self.config.placeholder,
                                sensitive_keys=self.config.sensitive_keys,
                                extra_patterns=self.config.extra_patterns())
        self.secrets, self.redactor = secrets, redactor
        self.spec, self.hosts = spec, hosts
        self.answer_normalizers = (self.config.answers.normalizers()
                                   if answer_normalizers is None else tuple(answer_normalizers))
        self.verify = verify if verify is not None else self.config.verify.rules()
        self.on_drift = on_drift
        self.max_age = max_age if max_age is not None else self.config.max_age
        self.on_expiry: ExpiryAction = on_expiry or self.config.on_expiry
        self.ages = ages if ages is not None else FixtureAges()
        self.report, self.label = report, label
        if how_to_record is None:
            how_to_record = _advice(model_mode is not None)
        self.how_to_record = ((how_to_record, how_to_record) if isinstance(how_to_record, str)
                              else how_to_record)
        self.how_to_rerecord = how_to_rerecord or "pass mode='record' to the Recorder and run again"

    @classmethod
    def from_config(
        cls,
        store_or_path: FixtureStore | str | os.PathLike[str] | None = None,
        *,
        mode: str | None = None,
        model_mode: str | None = None,
        config: Config | None = None,
        environ: Mapping[str, str] | None = None,
        **options: Any,
    ) -> Recorder:
        """The Recorder a project's settings describe: `[tool.redactkey]` (or `config`),
        and the modes of ``REDACTKEY_MODE`` / ``REDACTKEY_MODEL_MODE`` unless `mode` /
        `model_mode` are given (default "replay"). The store defaults to
        ``tests/fixtures`` beside the configuration file (else in the current directory);
        the other keyword arguments are the constructor's."""
        config = config if config is not None else load_config()
        (tool, tool_from), (model, model_from) = settled_modes(mode, model_mode, environ)
        if store_or_path is None:
            base = Path(config.source).parent if config.source else Path()
            store_or_path = base / "tests" / "fixtures"
        options.setdefault("how_to_record", (how_to_record(tool_from, model=False),
                                             how_to_record(model_from, model=True)))
        if tool_from != "argument":  # (an argument keeps the constructor's advice)
            options.setdefault("how_to_rerecord",
                               f"set {MODE_ENV}=record for this test and run it again")
        return cls(store_or_path, mode=tool, model_mode=model, config=config, **options)

    def _environment_secrets(self) -> RunSecrets:
        # A stand-in key (OPENAI_API_KEY=dummy) is skipped with a warning unless this
        # recorder may record, where a short value is refused as everywhere else.
        records = bool({self.mode, self.model_mode} & {"record", "auto"})
        secrets = RunSecrets.from_env(min_length=self.config.min_secret_length,
                                      skip_short=not records)
        secrets.collect(*self.config.secret_env)
        for slot, reason in secrets.dummies.items():
            warn_at_caller(DummySecretWarning(slot, reason))
        return secrets

    def replace(self, **changes: Any) -> Recorder:
        """A Recorder with these settings changed (the constructor's keyword arguments,
        `store_or_path` too); new `secrets` get a redactor of their own."""
        given: dict[str, Any] = {
            "store_or_path": self.store, "mode": self.mode, "model_mode": self._model_mode,
            "secrets": self.secrets, "redactor": self.redactor, "config": self.config,
            "spec": self.spec, "hosts": self.hosts,
            "answer_normalizers": self.answer_normalizers, "verify": self.verify,
            "on_drift": self.on_drift, "max_age": self.max_age, "on_expiry": self.on_expiry,
            "ages": self.ages, "report": self.report, "label": self.label,
            "how_to_record": self.how_to_record, "how_to_rerecord": self.how_to_rerecord,
        }
        if "secrets" in changes and "redactor" not in changes:
            given["redactor"] = None
        return Recorder(**{**given, **changes})

    def __repr__(self) -> str:
        return f"Recorder({self.store!r}, mode={self.mode!r}, model_mode={self.model_mode!r})"

    def _options(self, model: bool) -> dict[str, Any]:
        """What every layer of this recorder is built with, for model or tool calls (what
        is unset is left out: the layers' defaults are the same)."""
        options = {
            "mode": self.model_mode if model else self.mode, "redactor": self.redactor,
            "spec": self.spec, "model": model, "config": self.config,
            "answer_normalizers": self.answer_normalizers, "verify": self.verify,
            "on_drift": self.on_drift, "max_age": self.max_age, "on_expiry": self.on_expiry,
            "ages": self.ages, "report": self.report, "label": self.label,
            "how_to_record": self.how_to_record[model], "how_to_rerecord": self.how_to_rerecord,
        }
        return {name: value for name, value in options.items() if value is not None}

    # -- faces -------------------------------------------------------------------------

    @cached_property
    def models(self) -> ModelFixtures:
        """The model-call layer (`ModelFixtures`), in the model mode."""
        return ModelFixtures(self.store, **self._options(True))

    @cached_property
    def tools(self) -> ToolFixtures:
        """The tool layer (`ToolFixtures`), in the tool mode."""
        return ToolFixtures(self.store, **self._options(False))

    def transport(self, *, inner: Any = None, model: bool = True) -> FixtureTransport:
        """A transport for httpx and httpx2 clients, sync and async (the SDKs built on
        them take it as ``http_client=httpx2.Client(transport=rec.transport())``); live
        calls go through `inner` (default: the library's own transport)."""
        from ._httpx import FixtureTransport

        return FixtureTransport(self.store, inner=inner, **self._options(model))

    def requests_session(self, *, inner: Any = None, model: bool = True) -> requests.Session:
        """A `requests.Session` with the recorder's adapter mounted for http and https."""
        import requests

        from ._requests import RequestsAdapter

        session = requests.Session()
        adapter = RequestsAdapter(self.store, inner=inner, **self._options(model))
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        return session

    def aiohttp_session(self, *, model: bool = True,
                        connector_options: Mapping[str, Any] | None = None,
                        **session_kwargs: Any) -> aiohttp.ClientSession:
        """An `aiohttp.ClientSession` (an async context manager); `session_kwargs` go to
        it. Call it inside a running event loop."""
        from ..record._exchange import HttpFixtures
        from ._aiohttp import session

        return session(HttpFixtures(self.store, **self._options(model)),
                       connector_options=connector_options, **session_kwargs)

    def boto3_client(self, service: str, *, model: bool = True, **client_kwargs: Any) -> Any:
        """``boto3.client(service, **client_kwargs)`` recorded and replayed through
        botocore's hooks; in replay it needs no AWS credentials (docs/clients.md). The
        region is part of the endpoint, so replay in the region you recorded in."""
        import boto3

        from ._botocore import use_botocore

        if (self.model_mode if model else self.mode) == "replay":
            if "aws_access_key_id" not in client_kwargs:
                client_kwargs.update(REPLAY_AWS_CREDENTIALS)
            if not client_kwargs.get("region_name"):
                client_kwargs["region_name"] = (boto3.session.Session().region_name
                                                or _DEFAULT_REGION)
        client = boto3.client(service, **client_kwargs)
        return use_botocore(client, self.store, **self._options(model))

    def vcr_hooks(self) -> VcrHooks:
        """The vcrpy interop hooks with this recorder's redactor and HTTP key spec."""
        from ._vcr import VcrHooks

        return VcrHooks(self.redactor, spec=self.spec or self.config.key_spec("http"))
