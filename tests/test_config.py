"""`[tool.redactkey]` configuration: discovery, validation and allowlist matching."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import redactkey.record._config as config_module
from redactkey._errors import ConfigError
from redactkey.record._config import Config, load_config, load_config_file


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


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as settled, however recently written (as a file that has sat in a
    checkout for a while is): the search's results are remembered at once."""
    monkeypatch.setattr(config_module, "_SETTLED_NS", 0)


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The TOML files the configuration search parses, in order."""
    files: list[Path] = []
    real = config_module._parse_toml

    def counting(file: Path, source: str) -> dict[str, object]:
        files.append(file)
        return real(file, source)

    monkeypatch.setattr(config_module, "_parse_toml", counting)
    return files


def _written_later(path: Path, text: str) -> None:
    """Write `text` to `path`, stamped a second after its last write."""
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 10**9, before + 10**9))


class TestConfigFoundBefore:
    """A search whose files have not changed gives the configuration already read."""

    @pytest.mark.usefixtures("settled")
    def test_unchanged_files_are_not_read_again(
        self, tmp_path: Path, parsed: list[Path]
    ) -> None:
        """The same settled files give the same configuration, without parsing them."""
        path = tmp_path / "pyproject.toml"
        path.write_text('[tool.redactkey]\nplaceholder = "<one>"\n', encoding="utf-8")
        first = load_config(tmp_path)
        parsed.clear()
        assert load_config(tmp_path) is first
        assert load_config(tmp_path / "sub" / "..") is first  # the same place spelled otherwise
        assert parsed == []
        _written_later(path, '[tool.redactkey]\nplaceholder = "<two>"\n')
        assert load_config(tmp_path).placeholder == "<two>"
        assert parsed == [path]

    @pytest.mark.usefixtures("settled")
    def test_a_written_file_is_read_anew(self, tmp_path: Path) -> None:
        """Content written again at the same size is what the next search reads."""
        path = tmp_path / "pyproject.toml"
        path.write_text('[tool.redactkey]\nplaceholder = "<one>"\n', encoding="utf-8")
        assert load_config(tmp_path).placeholder == "<one>"
        _written_later(path, '[tool.redactkey]\nplaceholder = "<two>"\n')
        assert load_config(tmp_path).placeholder == "<two>"

    def test_a_file_written_just_now_is_read_at_every_search(
        self, tmp_path: Path, parsed: list[Path]
    ) -> None:
        """A file whose times are recent is not trusted by them: a second write in the
        same clock tick at the same size would keep every time and size it has."""
        path = tmp_path / "pyproject.toml"
        path.write_text('[tool.redactkey]\nplaceholder = "<one>"\n', encoding="utf-8")
        assert load_config(tmp_path).placeholder == "<one>"
        assert load_config(tmp_path).placeholder == "<one>"
        assert parsed == [path, path]

    @pytest.mark.usefixtures("settled")
    def test_a_nearer_file_added_or_removed_governs(self, tmp_path: Path) -> None:
        """A file added on the way up, or the governing file removed, changes the result."""
        top = tmp_path / "pyproject.toml"
        top.write_text('[tool.redactkey]\nplaceholder = "<top>"\n', encoding="utf-8")
        inner = tmp_path / "pkg"
        inner.mkdir()
        assert load_config(inner).placeholder == "<top>"
        private = inner / ".redactkey.toml"
        private.write_text('placeholder = "<inner>"\n', encoding="utf-8")
        assert load_config(inner).placeholder == "<inner>"
        private.unlink()
        top.unlink()
        assert load_config(inner) == Config()

    @pytest.mark.usefixtures("settled")
    def test_a_broken_file_is_reported_every_time(self, tmp_path: Path) -> None:
        """An error is not remembered as a result: each search reports it."""
        path = tmp_path / "pyproject.toml"
        path.write_text("[tool.redactkey]\nplaceholdr = 1\n", encoding="utf-8")
        for _ in range(2):
            with pytest.raises(ConfigError, match="placeholdr"):
                load_config(tmp_path)


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

    def test_what_a_configuration_derives_follows_its_own_settings(self) -> None:
        """Key specs, verify rules and answer normalizers are worked out once per
        configuration; a configuration made from another with more hosts derives its own."""
        config = Config.model_validate({"verify": {"ignore": ["/id"]},
                                        "answers": {"drop": ["/created"]}})
        before = config.key_spec("http")
        assert config.key_spec("http") is before
        assert config.verify.rules() is config.verify.rules()
        assert config.answers.normalizers() is config.answers.normalizers()
        aliased = config.with_hosts({"127.0.0.1:8765": "api.openai.com"})
        assert aliased.key_spec("http") != before
        assert dict(aliased.key_spec("http").hosts) == {"127.0.0.1:8765": "https://api.openai.com"}
        assert list(aliased.verify.rules().ignore) == ["/id"]
        assert not Config().verify.rules().ignore

    def test_unknown_key_setting_is_named(self, tmp_path: Path) -> None:
        """A misspelt key-spec setting names its table."""
        path = tmp_path / ".redactkey.toml"
        path.write_text('[keys.http]\nheaderz = ["x"]\n', encoding="utf-8")
        with pytest.raises(ConfigError, match=r"keys\.http\.headerz: unknown setting"):
            load_config_file(path)
