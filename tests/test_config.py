"""`[tool.redactkey]` configuration: discovery, validation and allowlist matching."""

from __future__ import annotations

from pathlib import Path

import pytest

from redactkey._config import Config, load_config, load_config_file
from redactkey._errors import ConfigError


class TestLoadConfig:
    """Finding and validating the configuration file."""

    def test_defaults_without_a_file(self, tmp_path: Path) -> None:
        """No configuration file means the defaults."""
        assert load_config(tmp_path) == Config()

    def test_pyproject_table(self, tmp_path: Path) -> None:
        """`[tool.redactkey]` in pyproject.toml is read, kebab-case keys included."""
        (tmp_path / "pyproject.toml").write_text(
            '[project]\nname = "x"\n[tool.redactkey]\nplaceholder = "<gone>"\n'
            'sensitive-keys = ["x-internal"]\nmin-secret-length = 12\n'
            '[[tool.redactkey.detectors]]\nname = "acme"\npattern = "acme_[a-z]{8}"\n',
            encoding="utf-8",
        )
        sub = tmp_path / "tests" / "cassettes"
        sub.mkdir(parents=True)
        config = load_config(sub)
        assert config.placeholder == "<gone>"
        assert config.sensitive_keys == ("x-internal",)
        assert config.min_secret_length == 12
        assert config.detectors[0].compiled().fullmatch("acme_abcdefgh")
        assert config.source == str(tmp_path / "pyproject.toml")

    def test_private_file_wins(self, tmp_path: Path) -> None:
        """`.redactkey.toml` holds the keys at its top level and wins over pyproject."""
        (tmp_path / "pyproject.toml").write_text('[tool.redactkey]\nplaceholder = "a"\n')
        (tmp_path / ".redactkey.toml").write_text('placeholder = "b"\n')
        assert load_config(tmp_path).placeholder == "b"

    def test_pyproject_without_table_is_skipped(self, tmp_path: Path) -> None:
        """A pyproject.toml without our table does not stop the search upwards."""
        (tmp_path / ".redactkey.toml").write_text('placeholder = "top"\n')
        inner = tmp_path / "pkg"
        inner.mkdir()
        (inner / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
        assert load_config(inner).placeholder == "top"

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('[tool.redactkey]\nplaceholdr = "x"\n', "tool.redactkey.placeholdr: unknown setting"),
            ("[tool.redactkey]\nmin-secret-length = 2\n", "tool.redactkey.min-secret-length"),
            ('[[tool.redactkey.detectors]]\nname = "a"\npattern = "(["\n',
             "detectors.0.pattern: not a valid regular expression"),
            ('[[tool.redactkey.detectors]]\nname = "a"\npattern = ".*"\n',
             "matches the empty string"),
            ('[[tool.redactkey.allowlist]]\npath = "a"\nrule = "r"\nfingerprint = "zz"\n',
             "allowlist.0.fingerprint"),
            ("[tool.redactkey\n", "not valid TOML"),
        ],
    )
    def test_errors_name_file_and_key(self, tmp_path: Path, text: str, message: str) -> None:
        """A bad setting is a ConfigError naming the file and the key."""
        path = tmp_path / "pyproject.toml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=r"pyproject\.toml") as info:
            load_config_file(path)
        assert message in str(info.value)


class TestAllowlist:
    """Allowlist entries by file glob, rule and fingerprint."""

    @pytest.mark.parametrize(
        ("path", "rule", "fingerprint", "allowed"),
        [
            ("tests/cassettes/a.yaml", "hex-high-entropy", "0123456789abcdef", True),
            ("tests/cassettes/a.yaml", "hex-high-entropy", "fedcba9876543210", False),
            ("tests/cassettes/a.yaml", "openai-api-key", "0123456789abcdef", False),
            ("other/a.yaml", "hex-high-entropy", "0123456789abcdef", False),
        ],
    )
    def test_entry_matching(self, path: str, rule: str, fingerprint: str, allowed: bool) -> None:
        """Only the named file, rule and fingerprint are accepted."""
        config = Config.model_validate({"allowlist": [{
            "path": "tests/cassettes/*.yaml", "rule": "hex-high-entropy",
            "fingerprint": "0123456789abcdef", "reason": "a content hash"}]})
        assert (config.allowed(path, rule, fingerprint) is not None) is allowed


class TestKeySpecSettings:
    """`[tool.redactkey.keys.<kind>]` widens or narrows the default key spec."""

    def test_http_headers_and_model_ignore(self) -> None:
        """Headers count for http; an ignored model field no longer counts."""
        config = Config.model_validate({"keys": {
            "http": {"headers": ["X-Tenant"]}, "chat": {"ignore": ["temperature"]}}})
        assert "x-tenant" in config.key_spec("http").headers
        assert not config.key_spec("chat").counts("temperature")
        assert config.key_spec("text") == Config().key_spec("text")

    def test_unknown_key_setting_is_named(self, tmp_path: Path) -> None:
        """A misspelt key-spec setting names its table."""
        path = tmp_path / ".redactkey.toml"
        path.write_text('[keys.http]\nheaderz = ["x"]\n', encoding="utf-8")
        with pytest.raises(ConfigError, match=r"keys\.http\.headerz: unknown setting"):
            load_config_file(path)
