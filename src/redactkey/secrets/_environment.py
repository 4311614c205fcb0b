"""The environment of a run: which variables hold credentials, and whether it records.

A variable holds a credential when its name says so (`*_KEY`, `*_TOKEN`, `*PASSWORD*`,
...); a URL or DSN under such a name, or named as a connection, gives its password.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping

__all__ = ["looks_secret_env_name", "records_secrets", "secret_variables"]

_SECRET_NAME = re.compile(
    r"""(?x)
    (?:^|_)(?:API_?KEY|APIKEY|KEY|TOKEN|SECRET|PAT|ACCESS_KEY|PRIVATE_KEY|SECRET_KEY)$  # suffixes
    | PASSWORD | PASSWD | CREDENTIAL | SECRET | ACCESS_KEY | PRIVATE_KEY
    | (?:^|_)AUTH(?!OR)(?:_|$) | _AUTH(?!OR) | (?:^|_)(?:DSN)$
    """
)
_URL_NAME = re.compile(r"(?:^|_)(?:URL|URI|DSN|CONN|CONNECTION|CONNECTION_STRING)$")
_ORDINARY_NAMES = frozenset({
    "HOME", "PATH", "LANG", "LANGUAGE", "SHELL", "USER", "LOGNAME", "PWD", "OLDPWD", "TERM",
    "TMPDIR", "TMP", "TEMP", "HOSTNAME", "EDITOR", "PAGER", "DISPLAY", "PYTHONPATH",
    "PYTHONHASHSEED", "VIRTUAL_ENV", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "XAUTHORITY",
    "KEYTIMEOUT",
})
_FLAG_VALUES = frozenset({"", "0", "1", "true", "false", "yes", "no", "on", "off", "none", "null"})
_URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/@\s:]*:([^/@\s]+)@")
_MODE_VARIABLES = ("REDACTKEY_MODE", "REDACTKEY_MODEL_MODE")
_RECORDING_MODES = frozenset({"record", "auto"})


def looks_secret_env_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    upper = name.upper()
    if upper in _ORDINARY_NAMES or upper.startswith("LC_"):
        return False
    return bool(_SECRET_NAME.search(upper))


def secret_variables(environ: Mapping[str, str]) -> Iterator[tuple[str, str, str | None]]:
    """(name, value, what the value is) of each variable that holds a credential, in name
    order: "its value", or "its URL's password" for a URL or DSN; None for a flag-like
    value (empty, `0`, `1`, `true`, `no`, ...), which holds none."""
    for name in sorted(environ):
        value = environ[name]
        upper = name.upper()
        password = _URL_PASSWORD.match(value)
        if password and (_URL_NAME.search(upper) or looks_secret_env_name(name)):
            yield name, password.group(1), "its URL's password"
        elif not looks_secret_env_name(name):
            continue
        elif value.strip().lower() in _FLAG_VALUES:
            yield name, value, None
        else:
            yield name, value, "its value"


def records_secrets(environ: Mapping[str, str] | None = None) -> bool:
    """Whether `REDACTKEY_MODE` / `REDACTKEY_MODEL_MODE` say this run records (record, auto).

    The rule for stand-in secrets: skipped (with a warning) when nothing is recorded,
    refused when something may be.
    """
    env = os.environ if environ is None else environ
    return any(
        (env.get(name) or "").strip().lower() in _RECORDING_MODES for name in _MODE_VARIABLES
    )
