"""GeminiProvider on Vertex AI: Application Default Credentials, no key, all on loopback.

ADC here is an external-account credential file whose token exchange
endpoint is the loopback server, so google-auth really obtains a token and
the SDK really sends it; nothing is patched.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from beam_agents import LlmRequest, LlmResponse
from beam_agents.model import GeminiProvider, provider_from_spec
from tests.model.exchange import ask, fails

VERTEX_PATH = (
    "/v1beta1/projects/proj-1/locations/europe-west4/publishers/google/models/"
    "gemini-test:generateContent"
)
ACCESS_TOKEN = "ya29.loopback-access-token"
HI = LlmRequest(model_id="m", messages=["Hi"])


@pytest.fixture
def adc(httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ADC pointing at a token exchange served by the loopback server."""
    subject = tmp_path / "subject-token"
    subject.write_text("a-workload-identity-token")
    credentials = tmp_path / "adc.json"
    credentials.write_text(
        json.dumps(
            {
                "type": "external_account",
                "audience": "//iam.googleapis.com/locations/global/workforcePools/p/providers/x",
                "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
                "token_url": httpserver.url_for("/token"),
                "credential_source": {"file": str(subject)},
            }
        )
    )
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(credentials))


def vertex(httpserver: HTTPServer) -> GeminiProvider:
    factory = provider_from_spec(
        f"gemini:gemini-test?vertex_project=proj-1&vertex_location=europe-west4"
        f"&base_url={httpserver.url_for('/')}&max_retries=0"
    )
    provider = factory()
    assert isinstance(provider, GeminiProvider)
    return provider


def test_vertex_sends_the_adc_token_and_no_key(httpserver: HTTPServer, adc: None) -> None:
    httpserver.expect_request("/token", method="POST").respond_with_json(
        {
            "access_token": ACCESS_TOKEN,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer",
            "expires_in": 3600,
        }
    )
    httpserver.expect_request(VERTEX_PATH, method="POST").respond_with_json(
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": "From Vertex."}]}}],
            "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2},
            "modelVersion": "gemini-test-002",
        }
    )

    answer = ask(vertex(httpserver), HI)

    assert answer == LlmResponse(
        response=b"From Vertex.", model_id="gemini-test-002", input_tokens=3, output_tokens=2
    )
    request = next(r for r, _ in httpserver.log if r.path == VERTEX_PATH)
    assert request.headers["Authorization"] == f"Bearer {ACCESS_TOKEN}"
    assert "x-goog-api-key" not in request.headers


def test_credentials_that_yield_no_token_fail_as_an_auth_error(
    httpserver: HTTPServer, adc: None
) -> None:
    httpserver.expect_request("/token", method="POST").respond_with_json(
        {"error": "invalid_grant", "error_description": "subject token expired"}, status=400
    )

    error = fails(vertex(httpserver), HI)

    assert error.error_class == "auth"
    assert "credentials: " in str(error)
    assert all(r.path == "/token" for r, _ in httpserver.log)
