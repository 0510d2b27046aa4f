"""Cloud SQL with IAM database authentication: the URI grammar and the connector wiring, offline.

No Cloud SQL instance is reachable here, so what is proven is everything up
to the network: the URI, what the connector is asked for, that building the
store performs no I/O, and that a worker without credentials fails with a
typed store error naming the instance. The sign-in itself is not exercised.
"""

from __future__ import annotations

import asyncio
import pickle
from pathlib import Path

import pytest
from google.auth.compute_engine import _metadata

from beam_agents import AgentConfig
from beam_agents.errors import ConfigurationError
from beam_agents.memory.stores import InvalidStoreURIError, StoreError, open_store, parse_store_uri
from beam_agents.memory.stores.cloudsql import connect_arguments
from beam_agents.memory.stores.sql import SqlMemoryStore

URI = "postgresql+cloudsql://triage-worker%40acme-prod.iam@acme-prod:europe-west1:triage/triage"


def test_a_cloudsql_uri_names_the_instance_database_and_iam_user() -> None:
    parsed = parse_store_uri(URI)
    assert (parsed.backend, parsed.dialect, parsed.driver) == ("sql", "postgresql", "cloudsql")
    assert parsed.instance == "acme-prod:europe-west1:triage"
    assert (parsed.database, parsed.user, parsed.ip_type) == (
        "triage",
        "triage-worker@acme-prod.iam",
        "private",
    )


def test_the_connector_is_asked_for_an_iam_sign_in_over_the_chosen_ip() -> None:
    assert connect_arguments(parse_store_uri(f"{URI}?ip_type=psc&iam=true")) == {
        "instance_connection_string": "acme-prod:europe-west1:triage",
        "driver": "asyncpg",
        "user": "triage-worker@acme-prod.iam",
        "db": "triage",
        "enable_iam_auth": True,
        "ip_type": "psc",
    }


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("postgresql+cloudsql://w:Pw-9@acme-prod:europe-west1:triage/triage", "takes no password"),
        ("postgresql+cloudsql://acme-prod:europe-west1:triage/triage", "IAM database user"),
        ("postgresql+cloudsql://w@acme-prod:europe-west1/triage", "IAM database user"),
        (f"{URI}?iam=false", "always signs in with IAM"),
        (f"{URI}?ip_type=internet", "ip_type must be one of"),
        (f"{URI}?password=Pw-9", "not ['password']"),
    ],
)
def test_a_malformed_cloudsql_uri_is_refused_saying_why(uri: str, problem: str) -> None:
    with pytest.raises(InvalidStoreURIError, match=problem.replace("[", r"\[")) as caught:
        parse_store_uri(uri)
    assert "Pw-9" not in str(caught.value)


def test_an_agent_config_with_a_cloudsql_store_pickles_no_credential() -> None:
    config = AgentConfig(longterm_memory=URI)
    assert pickle.loads(pickle.dumps(config)).longterm_memory == URI


def test_a_password_in_a_cloudsql_uri_is_refused_by_the_config() -> None:
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.longterm_memory") as caught:
        AgentConfig(longterm_memory=URI.replace("iam@", "iam:Pw-9@"))
    assert "Pw-9" not in str(caught.value)


@pytest.fixture
def no_google_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ADC anywhere, and the metadata server looked for on a dead loopback port."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)


def test_a_worker_without_credentials_fails_with_a_store_error_naming_the_instance(
    no_google_credentials: None,
) -> None:
    """The real connector runs up to asking for credentials; nothing is reached."""

    async def main() -> StoreError:
        store = open_store(URI)
        assert isinstance(store, SqlMemoryStore)
        try:
            with pytest.raises(StoreError) as caught:
                await store.check_provisioned()
            return caught.value
        finally:
            await store.close()

    error = asyncio.run(asyncio.wait_for(main(), 60))
    assert "Cloud SQL instance acme-prod:europe-west1:triage" in str(error)
    assert "'triage-worker@acme-prod.iam'" in str(error)
    assert "DefaultCredentialsError" in str(error)
