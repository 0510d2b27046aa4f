"""Credentials in URLs: refused wherever a URL would be pickled or passed as a pipeline option."""

from __future__ import annotations

import pickle
import re

import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from beam_agents import AgentConfig
from beam_agents._connections.url_credentials import (
    SECRET_QUERY_KEYS,
    SECRET_QUERY_NAME_REGEX,
    check_url_credentials,
    is_secret_query_key,
)
from beam_agents.errors import ConfigurationError
from beam_agents.telemetry_options import WorkerExport

SECRET = "hunter2-Zq9"


@pytest.mark.parametrize(
    ("uri", "named"),
    [
        (f"postgresql+asyncpg://app@10.0.0.3:5432/agents?password={SECRET}", "'password'"),
        (f"postgresql+asyncpg://app@10.0.0.3/agents?ssl=require&PassWord={SECRET}", "'PassWord'"),
        (f"postgresql+asyncpg://app@10.0.0.3/agents?sslpassword={SECRET}", "'sslpassword'"),
        (f"redis://10.0.0.3:6379/0?password={SECRET}", "'password'"),
        (f"rediss://10.0.0.3:6378/0?Token={SECRET}", "'Token'"),
        (f"postgresql+asyncpg://app:{SECRET}@10.0.0.3:5432/agents", "app:***@"),
        (f"redis://:{SECRET}@10.0.0.3:6379/0", ":***@"),
    ],
)
@pytest.mark.parametrize("field", ["longterm_memory", "tool_ledger"])
def test_a_store_uri_with_a_credential_is_refused_by_the_config_that_would_pickle_it(
    uri: str, named: str, field: str
) -> None:
    with pytest.raises(ConfigurationError, match=rf"AgentConfig\.{field}") as caught:
        AgentConfig(**{field: uri})  # type: ignore[arg-type]
    assert named in str(caught.value)
    assert "secretmanager://" in str(caught.value), "the error says where the URI belongs"
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    "uri",
    [
        "postgresql+asyncpg://app@10.0.0.3:5432/agents?ssl=verify-ca",
        "redis://10.0.0.3:6379/0",
        "secretmanager://projects/p/secrets/longterm/versions/3",
        "bigtable://p/i/t",
        "firestore://p/agents?database=(default)",
    ],
)
def test_a_store_uri_without_a_credential_is_accepted(uri: str) -> None:
    config = AgentConfig(longterm_memory=uri)
    assert pickle.loads(pickle.dumps(config)).longterm_memory == uri


@pytest.mark.parametrize(
    ("endpoint", "named"),
    [
        (f"https://otel.example.com/v1/traces?token={SECRET}", "'token'"),
        (f"https://otel.example.com/v1/traces?x=1&access_token={SECRET}", "'access_token'"),
        (f"https://tracer:{SECRET}@otel.example.com/v1/traces", "tracer:***@"),
        (f"https://{SECRET}@otel.example.com/v1/traces", "***@"),
    ],
)
def test_an_otlp_endpoint_with_a_credential_is_refused_as_the_option_is_read(
    endpoint: str, named: str
) -> None:
    options = PipelineOptions([f"--otlp_endpoint={endpoint}"])
    with pytest.raises(ConfigurationError, match="otlp_endpoint") as caught:
        WorkerExport.from_options(options)
    assert named in str(caught.value)
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    "base_url",
    [
        f"https://llm.example.com/v1?api_key={SECRET}",
        f"https://llm.example.com/v1?KEY={SECRET}",
        f"https://me:{SECRET}@llm.example.com/v1",
    ],
)
def test_a_model_base_url_with_a_credential_is_refused(base_url: str) -> None:
    from beam_agents.model._options import check_base_url

    with pytest.raises(ConfigurationError, match="base_url") as caught:
        check_base_url(base_url)
    assert SECRET not in str(caught.value)


def test_a_model_base_url_on_plain_http_to_a_remote_host_is_refused() -> None:
    """Every request to a model carries its API key: only loopback may be plain http."""
    from beam_agents.model._options import check_base_url

    with pytest.raises(ConfigurationError, match=r"base_url: must be https://"):
        check_base_url("http://vllm.internal:8000/v1")
    assert check_base_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert check_base_url("https://vllm.internal/v1") == "https://vllm.internal/v1"


@pytest.mark.parametrize(
    "name",
    [
        *sorted(SECRET_QUERY_KEYS),
        "API-KEY",
        "Client_Secret",
        "private_token",
        "X-Goog-Signature",
        "sslpassword",
    ],
)
def test_the_non_python_regex_refuses_every_name_the_python_check_refuses(name: str) -> None:
    assert is_secret_query_key(name)
    assert re.fullmatch(f"(?i){SECRET_QUERY_NAME_REGEX}", name)


@pytest.mark.parametrize(
    "name", ["ssl", "database", "namespace", "api_key_secret", "api_key_env", "sslrootcert", "iam"]
)
def test_names_that_hold_no_secret_pass_both_checks(name: str) -> None:
    assert not is_secret_query_key(name)
    assert not re.fullmatch(f"(?i){SECRET_QUERY_NAME_REGEX}", name)


def test_an_unparsable_url_is_refused_without_echoing_it() -> None:
    with pytest.raises(ConfigurationError, match="is not a valid URL") as caught:
        check_url_credentials("x", f"https://[::1/x?token={SECRET}")
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    "name", ["aws_secret_access_key", "access_key", "private_key", "cookie", "x-npm-auth"]
)
def test_a_url_refuses_the_key_and_auth_names_that_plain_settings_refuse(name: str) -> None:
    """The URL rule reads the names shared with env and headers, in Python and as a regex."""
    with pytest.raises(ConfigurationError, match=rf"secret query parameter {name!r}") as caught:
        check_url_credentials("x", f"https://api.example.com/v1?{name}={SECRET}")
    assert SECRET not in str(caught.value)
    assert re.fullmatch(f"(?i){SECRET_QUERY_NAME_REGEX}", name)
