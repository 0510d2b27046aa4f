"""What each real provider's ProviderError says about a 429: the wait asked for, and quota."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from beam_agents.model import GeminiProvider, LlmRequest, OpenAICompatibleProvider
from beam_agents.testing.rate_limited_server import RateLimitedServer
from tests.model.exchange import KEY_ENV, fails

PATH = "/v1beta/models/gemini-test:generateContent"
HELLO = LlmRequest(model_id="m", messages=[{"role": "user", "content": "hello"}])


def _resource_exhausted(quota_id: str) -> dict[str, Any]:
    return {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaMetric": "generate_content", "quotaId": quota_id}],
                },
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "26s"},
            ],
        }
    }


@pytest.mark.parametrize(
    ("quota_id", "exhausted"),
    [
        ("GenerateRequestsPerDayPerProjectPerModel-FreeTier", True),
        ("GenerateRequestsPerMinutePerProjectPerModel", False),
    ],
)
def test_gemini_429_carries_its_retry_delay_and_whether_a_daily_quota_is_spent(
    httpserver: HTTPServer, secret_key: str, quota_id: str, exhausted: bool
) -> None:
    httpserver.expect_request(PATH).respond_with_json(_resource_exhausted(quota_id), status=429)
    provider = GeminiProvider(
        "gemini-test", base_url=httpserver.url_for("/"), api_key_env=KEY_ENV, max_retries=0
    )
    error = fails(provider, HELLO)
    assert error.error_class == "rate_limited"
    assert error.retry_after_s == 26.0
    assert error.quota_exhausted is exhausted


@pytest.mark.usefixtures("secret_key")
def test_openai_429_carries_the_servers_retry_after() -> None:
    with RateLimitedServer() as server:
        server.refuse_next(1, retry_after_s=2.5)
        provider = OpenAICompatibleProvider(
            "m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0
        )
        error = fails(provider, HELLO)
    assert error.error_class == "rate_limited"
    assert error.retry_after_s == 2.5
    assert error.quota_exhausted is False


@pytest.mark.usefixtures("secret_key")
def test_openai_insufficient_quota_is_an_exhausted_quota() -> None:
    with RateLimitedServer() as server:
        server.quota_exhausted = True
        provider = OpenAICompatibleProvider(
            "m", base_url=server.base_url, api_key_env=KEY_ENV, max_retries=0
        )
        error = fails(provider, HELLO)
    assert error.status == 429
    assert error.quota_exhausted is True
