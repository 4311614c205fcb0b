"""RunSecrets and collect_run_secrets: slots, sources, variants, refusal, no value ever shown."""

from __future__ import annotations

import base64
import copy
import json
import logging
import pickle
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from pydantic import BaseModel, SecretBytes, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from redactkey import (
    DeclaresSecrets,
    Redactor,
    RunSecrets,
    SecretError,
    UsageError,
    collect_run_secrets,
)
from redactkey._errors import DummySecretWarning
from redactkey.secrets._environment import looks_secret_env_name
from redactkey.secrets._run_secrets import dummy_reason, mask
from redactkey.secrets._variants import value_variants

TOKEN = "sk-proj-" + "A1b2" * 12
OTHER = "gh" + "p_" + "Z9y8" * 9
RECORDING = {"REDACTKEY_MODE": "record"}


class TestStandIns:
    """A stand-in value: skipped with one warning while nothing records, refused otherwise."""

    @pytest.mark.parametrize("value", ["dummy", "sk-test-key", "your-api-key-here", "x" * 40])
    def test_replay_skips_with_one_warning(self, value: str) -> None:
        """In replay (the default) a dummy key is skipped, listed, and warned about once."""
        with pytest.warns(DummySecretWarning, match="OPENAI_API_KEY") as caught:
            secrets = RunSecrets.from_env({"OPENAI_API_KEY": value, "A_TOKEN": TOKEN})
        assert len(caught) == 1
        assert caught[0].filename == __file__
        assert list(secrets) == ["A_TOKEN"]
        assert set(secrets.dummies) == {"OPENAI_API_KEY"}
        assert value not in str(caught[0].message)

    def test_model_override_recording_refuses(self) -> None:
        """Recording model calls alone is recording: a short value is refused, naming the
        slot and the setting that lowers the minimum."""
        env = {"OPENAI_API_KEY": "dummy", "REDACTKEY_MODEL_MODE": "auto"}
        with pytest.raises(SecretError, match="OPENAI_API_KEY") as info:
            RunSecrets.from_env(env)
        assert "min-secret-length" in str(info.value)
        assert "redactkey_min_secret_length" in str(info.value)

    def test_long_placeholder_is_kept_when_recording(self) -> None:
        """A placeholder long enough to redact safely is used when recording (a fake server)."""
        secrets = RunSecrets.from_env({"OPENAI_API_KEY": "sk-test-key-for-ci", **RECORDING})
        assert list(secrets) == ["OPENAI_API_KEY"]

    def test_real_looking_keys_are_not_placeholders(self) -> None:
        """Keys with random characters are never taken for placeholders."""
        assert dummy_reason(TOKEN) is None
        assert dummy_reason("sk_test_" + "51HabcDEF123ghiJKL") is None
        assert dummy_reason("x" * 5000 + "Z") is None

    def test_explicit_skip_is_quiet(self) -> None:
        """`skip_short=True` skips without a warning: the caller reports `.dummies` itself."""
        secrets = RunSecrets({}, skip_short=True)
        secrets.add("PIN_TOKEN", "1234")
        assert secrets.dummies == {
            "PIN_TOKEN": "its value is shorter than the safe minimum of 8 characters"}

    def test_collect_follows_the_same_rule(self) -> None:
        """collect_run_secrets skips a dummy declared slot in replay."""
        with pytest.warns(DummySecretWarning):
            secrets = collect_run_secrets([{"PIN_TOKEN": lambda: "abc"}], environ={})
        assert secrets.skipped == {"PIN_TOKEN"}


class TestRunSecrets:
    """Registering, reading and refusing slot values."""

    def test_add_registers_and_iterates_slot_names(self) -> None:
        """`add` registers a slot; `len` and iteration show slot names only, sorted."""
        secrets = RunSecrets({})
        secrets.add("ZED_TOKEN", OTHER)
        secrets.add("OPENAI_API_KEY", TOKEN)
        assert len(secrets) == 2
        assert list(secrets) == ["OPENAI_API_KEY", "ZED_TOKEN"]
        assert "OPENAI_API_KEY" in secrets

    def test_read_resolves_from_environment_and_registers(self) -> None:
        """`read` returns the value of the environment variable and registers it."""
        secrets = RunSecrets({"OPENAI_API_KEY": TOKEN})
        assert secrets.read("OPENAI_API_KEY") == TOKEN
        assert list(secrets) == ["OPENAI_API_KEY"]

    def test_read_missing_slot_names_it(self) -> None:
        """Reading an unset slot is a SecretError naming the slot and what to do."""
        with pytest.raises(SecretError, match=r"'NOPE_TOKEN'.*set NOPE_TOKEN"):
            RunSecrets({}).read("NOPE_TOKEN")

    @pytest.mark.parametrize("value", ["", "tiny", "1234567"])
    def test_short_value_is_refused_naming_the_slot(self, value: str) -> None:
        """A value under 8 characters is refused; the message names the slot, not the value."""
        with pytest.raises(SecretError) as info:
            RunSecrets(RECORDING).add("DB_PASSWORD", value)
        assert info.value.slot == "DB_PASSWORD"
        assert "DB_PASSWORD" in str(info.value)
        if value:
            assert value not in str(info.value)

    def test_min_length_is_configurable(self) -> None:
        """`min_length` lowers the floor for users who accept the risk."""
        secrets = RunSecrets({}, min_length=4)
        secrets.add("PIN_SECRET", "abcd")
        assert len(secrets) == 1

    def test_repr_str_never_show_values(self) -> None:
        """`repr` and `str` list slot names only."""
        secrets = RunSecrets({})
        secrets.add("OPENAI_API_KEY", TOKEN)
        assert TOKEN not in repr(secrets)
        assert TOKEN not in str(secrets)
        assert "OPENAI_API_KEY" in repr(secrets)

    def test_nothing_is_logged(self, caplog: pytest.LogCaptureFixture) -> None:
        """Collecting, reading and redacting write no log record holding the value."""
        caplog.set_level(logging.DEBUG)
        secrets = collect_run_secrets(["OPENAI_API_KEY"], environ={"OPENAI_API_KEY": TOKEN})
        secrets.read("OPENAI_API_KEY")
        Redactor(secrets).redact({"a": TOKEN})
        assert all(TOKEN not in r.getMessage() for r in caplog.records)

    def test_pickle_and_copy_are_refused(self) -> None:
        """Pickling or copying would carry values out; both are refused with a UsageError."""
        secrets = RunSecrets({})
        secrets.add("OPENAI_API_KEY", TOKEN)
        with pytest.raises(UsageError, match="cannot be pickled"):
            pickle.dumps(secrets)
        with pytest.raises(UsageError):
            copy.deepcopy(secrets)

    def test_version_grows_only_on_new_values(self) -> None:
        """Re-adding the same value does not change the version; a new value does."""
        secrets = RunSecrets({})
        secrets.add("A_TOKEN", TOKEN)
        before = secrets.version
        secrets.add("A_TOKEN", TOKEN)
        assert secrets.version == before
        secrets.add("A_TOKEN", OTHER)
        assert secrets.version == before + 1

    def test_file_source_is_read_without_trailing_newline(self, tmp_path: Path) -> None:
        """A Path source reads the file and strips the trailing newline."""
        path = tmp_path / "token"
        path.write_text(TOKEN + "\n")
        secrets = RunSecrets({})
        secrets.declare("FILE_TOKEN", path)
        assert secrets.read("FILE_TOKEN") == TOKEN

    def test_unreadable_file_names_slot_and_path(self, tmp_path: Path) -> None:
        """A missing file is a SecretError naming the slot and the path."""
        secrets = RunSecrets({})
        secrets.declare("FILE_TOKEN", tmp_path / "absent")
        with pytest.raises(SecretError, match=r"FILE_TOKEN.*absent"):
            secrets.read("FILE_TOKEN")

    def test_callable_source_registers_each_new_value(self) -> None:
        """A callable source is called on every read; refreshed tokens are all registered."""
        values = iter([TOKEN, OTHER])
        secrets = RunSecrets({})
        secrets.declare("OAUTH_TOKEN", lambda: next(values))
        secrets.read("OAUTH_TOKEN")
        secrets.read("OAUTH_TOKEN")
        redacted = Redactor(secrets, detectors=False).redact(f"{TOKEN} {OTHER}")
        assert redacted == "[REDACTED] [REDACTED]"

    def test_failing_callable_hides_its_message(self) -> None:
        """A raising source is reported by slot and exception type, never its message."""

        def boom() -> str:
            raise RuntimeError(TOKEN)

        secrets = RunSecrets({})
        secrets.declare("OAUTH_TOKEN", boom)
        with pytest.raises(SecretError) as info:
            secrets.read("OAUTH_TOKEN")
        assert TOKEN not in str(info.value)
        assert "RuntimeError" in str(info.value)

    @pytest.mark.parametrize("source", ["OPENAI_API_KEY", b"bytes", 42])
    def test_ambiguous_sources_are_refused(self, source: object) -> None:
        """A str/bytes/other source is refused without echoing it back."""
        with pytest.raises(SecretError) as info:
            RunSecrets({}).declare("SLOT_TOKEN", source)  # type: ignore[arg-type]
        assert "SLOT_TOKEN" in str(info.value)


class TestFromEnv:
    """The environment heuristic."""

    @pytest.mark.parametrize(
        "name",
        [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "CLIENT_SECRET",
            "DB_PASSWORD",
            "MYSQL_PASSWD",
            "GOOGLE_CREDENTIALS",
            "BASIC_AUTH_HEADER",
            "GITLAB_PAT",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "X_AUTH",
            "HF_TOKEN",
            "SENTRY_DSN",
        ],
    )
    def test_secret_names(self, name: str) -> None:
        """Names that say credential are picked up."""
        assert looks_secret_env_name(name)

    @pytest.mark.parametrize(
        "name",
        [
            "HOME",
            "PATH",
            "LANG",
            "SHELL",
            "USER",
            "PWD",
            "TERM",
            "LC_ALL",
            "TOKENIZERS_PARALLELISM",
            "MAX_TOKENS",
            "AUTHOR",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "CERT_AUTHORITY",
            "KEYBOARD",
            "SSH_AUTH_SOCK",
            "PYTHONHASHSEED",
        ],
    )
    def test_ordinary_names(self, name: str) -> None:
        """Ordinary variables are never collected."""
        assert not looks_secret_env_name(name)

    def test_collects_secret_variables_only(self) -> None:
        """from_env registers credential-named variables and ignores the rest."""
        env = {"OPENAI_API_KEY": TOKEN, "HOME": "/home/someone-long", "GH_TOKEN": OTHER}
        assert list(RunSecrets.from_env(env)) == ["GH_TOKEN", "OPENAI_API_KEY"]

    def test_flag_values_are_skipped_and_listed(self) -> None:
        """Flag-like values (`1`, `true`, empty) are skipped and listed in `.skipped`."""
        env = {"HF_HUB_DISABLE_IMPLICIT_TOKEN": "1", "USE_AUTH": "true", "A_TOKEN": TOKEN}
        secrets = RunSecrets.from_env(env)
        assert list(secrets) == ["A_TOKEN"]
        assert secrets.skipped == {"HF_HUB_DISABLE_IMPLICIT_TOKEN", "USE_AUTH"}

    def test_short_secret_variable_is_refused(self) -> None:
        """A short credential-named value is an error naming the variable."""
        with pytest.raises(SecretError, match="DB_PASSWORD"):
            RunSecrets.from_env({"DB_PASSWORD": "abc", **RECORDING})

    def test_skip_short_lists_instead_of_raising(self) -> None:
        """With skip_short=True a short value is skipped and named in `.skipped`."""
        secrets = RunSecrets.from_env({"DB_PASSWORD": "abc", "A_TOKEN": TOKEN}, skip_short=True)
        assert list(secrets) == ["A_TOKEN"]
        assert secrets.skipped == {"DB_PASSWORD"}

    def test_url_password_is_collected(self) -> None:
        """A URL or DSN with a password contributes the password."""
        password = "s3cret-" + "pw" * 4
        env = {"DATABASE_URL": f"postgres://app:{password}@db.internal:5432/app"}
        secrets = RunSecrets.from_env(env)
        assert list(secrets) == ["DATABASE_URL"]
        assert Redactor(secrets, detectors=False).redact(f"pw is {password}") == "pw is [REDACTED]"

    def test_plain_url_is_not_collected(self) -> None:
        """A URL without a password is not a secret."""
        assert len(RunSecrets.from_env({"API_BASE_URL": "https://api.example.com/v1"})) == 0


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="APP_")

    openai_api_key: SecretStr
    name: str = "demo"


class Nested(BaseModel):
    token: SecretStr


class NestedSettings(BaseSettings):
    model_config = SettingsConfigDict(env_nested_delimiter="__")

    github: Nested


class Inner(BaseModel):
    token: SecretBytes
    label: str = "x"


class Outer(BaseModel):
    inner: Inner
    keys: list[SecretStr]
    optional: SecretStr | None = None


class Tool:
    secret_slots = ("GITHUB_TOKEN", "ABSENT_TOKEN")


class TestCollectRunSecrets:
    """Gathering slots from components."""

    def test_secret_slots_attribute_reads_environment(self) -> None:
        """`secret_slots` names are read from the environment; unset ones are listed missing."""
        secrets = collect_run_secrets([Tool()], environ={"GITHUB_TOKEN": OTHER})
        assert list(secrets) == ["GITHUB_TOKEN"]
        assert secrets.missing == {"ABSENT_TOKEN"}

    def test_declaring_components_satisfy_the_protocol(self) -> None:
        """An object with `secret_slots` is a `DeclaresSecrets`; a plain object is not."""
        assert isinstance(Tool(), DeclaresSecrets)
        assert not isinstance(object(), DeclaresSecrets)

    def test_mapping_of_sources(self, tmp_path: Path) -> None:
        """A mapping component declares slots with file and callable sources."""
        path = tmp_path / "t"
        path.write_text(TOKEN)
        secrets = collect_run_secrets([{"FILE_TOKEN": path, "CALL_TOKEN": lambda: OTHER}])
        assert list(secrets) == ["CALL_TOKEN", "FILE_TOKEN"]

    def test_slot_name_component(self) -> None:
        """A bare slot name is read from the environment given."""
        secrets = collect_run_secrets(["OPENAI_API_KEY"], environ={"OPENAI_API_KEY": TOKEN})
        assert list(secrets) == ["OPENAI_API_KEY"]

    def test_pydantic_settings_fields(self) -> None:
        """BaseSettings SecretStr fields become slots named like their environment variable."""
        settings = Settings(openai_api_key=SecretStr(TOKEN))
        secrets = collect_run_secrets([settings])
        assert list(secrets) == ["APP_OPENAI_API_KEY"]

    def test_nested_settings_use_the_nested_delimiter(self) -> None:
        """A model nested in BaseSettings is named like its environment variable."""
        settings = NestedSettings(github=Nested(token=SecretStr(OTHER)))
        assert list(collect_run_secrets([settings])) == ["GITHUB__TOKEN"]

    def test_nested_models_and_containers(self) -> None:
        """SecretBytes in nested models and SecretStr in lists are collected; None is skipped."""
        model = Outer(inner=Inner(token=SecretBytes(OTHER.encode())), keys=[SecretStr(TOKEN)])
        secrets = collect_run_secrets([model])
        assert list(secrets) == ["Outer.inner.token", "Outer.keys[0]"]
        text = Redactor(secrets, detectors=False).redact(f"{TOKEN}|{OTHER}")
        assert text == "[REDACTED]|[REDACTED]"

    def test_short_model_secret_is_refused(self) -> None:
        """A short SecretStr is refused with the slot name."""
        with pytest.raises(SecretError, match=r"Outer\.keys\[0\]"):
            collect_run_secrets(
                [Outer(inner=Inner(token=SecretBytes(OTHER.encode())), keys=[SecretStr("short")])],
                environ=RECORDING,
            )

    def test_unknown_component_is_a_usage_error(self) -> None:
        """Anything else is a UsageError saying what can be passed."""
        with pytest.raises(UsageError, match="secret_slots"):
            collect_run_secrets([42])


class TestVariants:
    """The forms a value travels in."""

    def test_every_listed_encoding_is_present(self) -> None:
        """Raw, JSON, percent (both cases, quote and quote_plus), base64 std/url, padded or not."""
        value = "p@ss/wörd+" + "x" * 8
        variants = value_variants(value)
        raw = value.encode()
        expected = {
            value,
            json.dumps(value)[1:-1],
            json.dumps(value)[1:-1].replace("/", "\\/"),
            quote(value, safe=""),
            quote(value, safe="").lower().replace("p%40ss", "p%40ss"),
            quote_plus(value),
            base64.b64encode(raw).decode(),
            base64.b64encode(raw).decode().rstrip("="),
            base64.urlsafe_b64encode(raw).decode(),
        }
        assert expected - variants == set()
        assert any("%c3%b6" in v for v in variants)

    @pytest.mark.parametrize("lead", [0, 1, 2])
    def test_base64_fragment_found_at_every_alignment(self, lead: int) -> None:
        """Some variant occurs inside the base64 of the value embedded at any byte offset."""
        blob = base64.b64encode(b"x" * lead + TOKEN.encode() + b"tail bytes").decode()
        assert any(v in blob for v in value_variants(TOKEN) if v != TOKEN)

    @pytest.mark.parametrize(("value", "shown"), [("abcdefgh", "ab…"), (TOKEN, "sk-p…")])
    def test_mask_shows_at_most_a_quarter(self, value: str, shown: str) -> None:
        """The preview shows at most a quarter of the value and at most 4 characters."""
        assert mask(value) == shown


class TestCopies:
    """A copy of the run's secrets: independent values, shared derived work."""

    def test_a_value_added_to_one_copy_is_not_in_the_other(self) -> None:
        """Each test gets its own copy; what one adds, the others do not see."""
        base = RunSecrets()
        base.add("A_TOKEN", "first-" + "k" * 12)
        mine, theirs = base.copy(), base.copy()
        mine.add("B_TOKEN", "second-" + "m" * 12)
        assert list(mine) == ["A_TOKEN", "B_TOKEN"]
        assert list(theirs) == list(base) == ["A_TOKEN"]
        assert mine.version > theirs.version == base.version

    def test_patterns_are_those_of_the_values(self) -> None:
        """A copy's patterns, and those after an addition, are what a fresh collector of
        the same values computes."""
        base = RunSecrets()
        base.add("A_TOKEN", "first-" + "k" * 12)
        assert base.copy().patterns() == base.patterns()
        grown = base.copy()
        grown.add("B_TOKEN", "second-" + "m" * 12)
        fresh = RunSecrets()
        fresh.add("A_TOKEN", "first-" + "k" * 12)
        fresh.add("B_TOKEN", "second-" + "m" * 12)
        assert grown.patterns() == fresh.patterns()
        assert base.patterns() != grown.patterns()

    def test_copies_share_until_either_side_writes(self) -> None:
        """A copy holds the same generation (same values) until a value is registered in
        it or in the original; then each holds only its own."""
        base = RunSecrets({})
        base.add("A_TOKEN", "first-" + "k" * 12)
        mine = base.copy()
        assert mine.generation is base.generation
        mine.add("A_TOKEN", "first-" + "k" * 12)  # nothing new: still the same values
        assert mine.generation is base.generation
        base.add("C_TOKEN", "third-" + "n" * 12)
        assert mine.generation is not base.generation
        assert list(mine) == ["A_TOKEN"]
        assert list(base) == ["A_TOKEN", "C_TOKEN"]

    def test_a_copy_keeps_declarations_and_stand_ins_to_itself(self) -> None:
        """Declared sources, skipped stand-ins and missing slots written to a copy stay
        out of the original, and the other way round."""
        base = RunSecrets({}, skip_short=True)
        mine = base.copy()
        mine.declare("FILE_TOKEN", lambda: "from-callable-" + "z" * 8)
        mine.add("SHORT_TOKEN", "dummy")
        assert mine.read("FILE_TOKEN").startswith("from-callable-")
        assert list(mine.dummies) == ["SHORT_TOKEN"]
        assert base.dummies == {}
        assert list(base) == []
        assert base.skipped == frozenset()
        with pytest.raises(SecretError):
            base.read("FILE_TOKEN")
        other = base.copy()
        base.add("LATE_TOKEN", "dummy")
        assert other.dummies == {}
