"""Secrets in plain (pickled) name/value settings: one rule for names and values, as for URLs."""

from __future__ import annotations

import pytest

from beam_agents._connections.plain_settings import check_plain_settings
from beam_agents._connections.secret_names import (
    REFERENCE_SUFFIX,
    SECRET_NAMES,
    is_secret_name,
    normal_name,
)
from beam_agents._connections.url_credentials import is_secret_query_key
from beam_agents.errors import ConfigurationError

SECRET = "pl41n-S3cret-Zq9x"

SECRET_LOOKING_NAMES = [
    "AWS_SECRET_ACCESS_KEY",
    "STRIPE_SECRET_KEY",
    "SECRET_KEY",
    "JWT_SECRET",
    "GITHUB_CLIENT_SECRET",
    "SLACK_SIGNING_SECRET",
    "NPM_AUTH",
    "GITHUB_TOKEN",
    "OPENAI_API_KEY",
    "DB_PASS",
    "DB_PASSWORD",
    "MYSQL_PWD",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "GPG_PRIVATE_KEY",
    "Authorization",
    "Proxy-Authorization",
    "Cookie",
    "Set-Cookie",
    "X-Api-Key",
    "X-Auth-Token",
    "X-Hub-Signature",
]
PLAIN_NAMES = [
    "AWS_ACCESS_KEY_ID",
    "SORT_KEY",
    "KEY_ID",
    "BYPASS_CACHE",
    "TICKETS_TOKEN_SHA256",
    "LOG_LEVEL",
    "PATH",
    "X-Team",
    "Content-Type",
    "api_key_env",
]


@pytest.mark.parametrize("name", SECRET_LOOKING_NAMES)
def test_a_secret_looking_name_is_refused_naming_the_field_and_the_name_never_the_value(
    name: str,
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        check_plain_settings("Tool.env", {name: SECRET}, twin="secret_env")
    assert caught.value.field == f"Tool.env[{name!r}]"
    assert "secret_env=" in caught.value.problem
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    "value",
    [
        f"postgres://app:{SECRET}@db.internal:5432/x",
        f"https://{SECRET}@github.com/acme/repo.git",
        f"https://api.example.com/v1?token={SECRET}",
        f"--url=redis://:{SECRET}@10.0.0.3:6379/0 --verbose",
        f"Bearer {SECRET}",
        f"basic {SECRET}==",
    ],
)
def test_a_credential_inside_a_value_is_refused_without_echoing_it(value: str) -> None:
    with pytest.raises(ConfigurationError, match=r"Tool\.env\['DATABASE_URL'\]") as caught:
        check_plain_settings("Tool.env", {"DATABASE_URL": value}, twin="secret_env")
    assert "the value carries" in caught.value.problem
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_plain_names_with_plain_values_are_kept(name: str) -> None:
    settings = {name: "postgres://app@db.internal/x", "MODE": "Basic"}
    assert check_plain_settings("Tool.env", settings, twin="secret_env") == settings


def test_names_and_values_must_be_str() -> None:
    with pytest.raises(ConfigurationError, match=r"Tool\.env: names and values must be str"):
        check_plain_settings("Tool.env", {"PORT": 8080}, twin="secret_env")


@pytest.mark.parametrize("name", [*SECRET_LOOKING_NAMES, *PLAIN_NAMES, "api_key_secret"])
def test_a_url_refuses_the_query_parameters_a_plain_setting_refuses(name: str) -> None:
    """One rule: only a `*_secret` parameter, a reference in a URL, is read differently."""
    normal = normal_name(name)
    reference = normal.endswith(REFERENCE_SUFFIX) and normal not in SECRET_NAMES
    assert is_secret_query_key(name) == (is_secret_name(name) and not reference)
