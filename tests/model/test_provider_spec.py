"""The `--model` grammar: every form parses, every malformed form names its bad part."""

from __future__ import annotations

import asyncio
import pickle

import pytest

from beam_agents import LlmRequest, LlmResponse
from beam_agents.errors import ConfigurationError
from beam_agents.model import FakeLLM, provider_from_spec
from beam_agents.model.provider import check_provider
from beam_agents.model.spec import FAKE_ANSWER, ImportedFactory, SpecFactory, on_network


def test_fake_answers_every_request_with_the_documented_text() -> None:
    factory = provider_from_spec("fake")
    provider = factory()
    answer = asyncio.run(provider.complete(LlmRequest(model_id="m", messages=["anything"])))
    assert answer.response == FAKE_ANSWER
    assert answer.model_id == "fake-1"
    assert factory == FakeLLM(default=FAKE_ANSWER, name="spec:fake", keep_calls=False)
    assert provider.calls() == []  # a long-running demo keeps no call log


def test_openai_model_alone_keeps_every_default() -> None:
    assert provider_from_spec("openai:gpt-4o-mini") == SpecFactory("openai", "gpt-4o-mini")


def test_openai_with_every_option_parses_typed_values() -> None:
    factory = provider_from_spec(
        "openai:llama3.1:8b?base_url=http://127.0.0.1:11434/v1&api_key_env=LOCAL_KEY"
        "&api_key_secret=projects/p/secrets/s/versions/3&timeout_s=2.5&max_retries=0"
    )
    assert factory == SpecFactory(
        "openai",
        "llama3.1:8b",
        (
            ("api_key_env", "LOCAL_KEY"),
            ("api_key_secret", "projects/p/secrets/s/versions/3"),
            ("base_url", "http://127.0.0.1:11434/v1"),
            ("max_retries", 0),
            ("timeout_s", 2.5),
        ),
    )


def test_gemini_model_alone_and_with_api_options() -> None:
    assert provider_from_spec("gemini:gemini-2.5-flash") == SpecFactory(
        "gemini", "gemini-2.5-flash"
    )
    factory = provider_from_spec(
        "gemini:gemini-2.5-flash?api_key_env=MY_GEMINI_KEY&base_url=http://127.0.0.1:9"
        "&timeout_s=5&max_retries=2"
    )
    assert dict(factory.options) == {  # type: ignore[attr-defined]
        "api_key_env": "MY_GEMINI_KEY",
        "base_url": "http://127.0.0.1:9",
        "timeout_s": 5.0,
        "max_retries": 2,
    }


def test_gemini_on_vertex_takes_project_and_location() -> None:
    factory = provider_from_spec(
        "gemini:gemini-2.5-pro?vertex_project=my-proj&vertex_location=europe-west4"
    )
    assert dict(factory.options) == {  # type: ignore[attr-defined]
        "vertex_project": "my-proj",
        "vertex_location": "europe-west4",
    }


def test_option_values_are_percent_decoded() -> None:
    factory = provider_from_spec("openai:m?base_url=http://127.0.0.1:8000/v1%3Fx%3D1%26y%3D2")
    assert dict(factory.options)["base_url"] == "http://127.0.0.1:8000/v1?x=1&y=2"  # type: ignore[attr-defined]


def test_py_imports_a_users_zero_argument_factory() -> None:
    factory = provider_from_spec("py:beam_agents.model.fake:FakeLLM")
    assert factory == ImportedFactory("beam_agents.model.fake", "FakeLLM")
    assert isinstance(factory(), FakeLLM)


@pytest.mark.parametrize(
    "spec",
    [
        "fake",
        "openai:gpt-4o?base_url=http://127.0.0.1:1/v1&api_key_env=K&timeout_s=1",
        "gemini:g?vertex_project=p",
        "py:beam_agents.model.fake:FakeLLM",
    ],
)
def test_every_factory_survives_pickling_unchanged(spec: str) -> None:
    factory = provider_from_spec(spec)
    assert pickle.loads(pickle.dumps(factory)) == factory


def test_the_factory_holds_where_the_key_lives_never_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SPEC_TEST_KEY", "sk-spec-secret-value")
    factory = provider_from_spec("openai:gpt-4o?api_key_env=SPEC_TEST_KEY")
    assert b"sk-spec-secret-value" not in pickle.dumps(factory)
    assert "sk-spec-secret-value" not in repr(factory)


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        ("", "scheme"),
        ("anthropic:claude", "scheme"),
        ("FAKE", "scheme"),
        ("fake:x", "fake"),
        ("openai", "model"),
        ("openai:", "model"),
        ("openai:?timeout_s=1", "model"),
        ("gemini: gemini-2.5-flash", "model"),
        ("openai:m?temperature=0.2", "option 'temperature'"),
        ("openai:m?vertex_project=p", "option 'vertex_project'"),
        ("openai:m?timeout_s=abc", "timeout_s"),
        ("openai:m?timeout_s=-1", "timeout_s"),
        ("openai:m?timeout_s=inf", "timeout_s"),
        ("openai:m?max_retries=1.5", "max_retries"),
        ("openai:m?max_retries=-1", "max_retries"),
        ("openai:m?max_retries=99", "max_retries"),
        ("openai:m?base_url=ftp://127.0.0.1/", "base_url"),
        ("openai:m?base_url=not-a-url", "base_url"),
        ("openai:m?api_key_env=BAD-NAME", "api_key_env"),
        ("openai:m?api_key_secret=my-secret", "api_key_secret"),
        ("openai:m?timeout_s", "option"),
        ("openai:m?timeout_s=1&&max_retries=1", "option"),
        ("openai:m?timeout_s=", "timeout_s"),
        ("openai:m?timeout_s=1&timeout_s=2", "option 'timeout_s'"),
        ("gemini:g?vertex_location=us-central1", "vertex_location"),
        ("gemini:g?vertex_project=p&api_key_env=K", "api_key_env"),
        ("gemini:g?vertex_project=a/b", "vertex_project"),
        ("py:", "py"),
        ("py:module_only", "py"),
        ("py:not a module:x", "py module"),
        ("py:beam_agents.model.fake:", "py attribute"),
        ("py:no_such_module_for_spec_tests:factory", "py module"),
        ("py:beam_agents.model.fake:NoSuchFactory", "py attribute"),
        ("py:beam_agents.model.spec:FAKE_ANSWER", "py attribute"),
    ],
)
def test_malformed_spec_names_the_bad_part(spec: str, names: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        provider_from_spec(spec)
    assert raised.value.field == names


def test_a_spec_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="spec: must be a str"):
        provider_from_spec(b"fake")  # type: ignore[arg-type]


def test_credentials_in_base_url_are_refused_without_being_echoed() -> None:
    with pytest.raises(ConfigurationError) as raised:
        provider_from_spec("openai:m?base_url=http://user:hunter2@127.0.0.1:1/v1")
    assert raised.value.field == "base_url"
    assert "hunter2" not in str(raised.value)


class _CompleteOnly:
    """A provider with `complete` only: `aclose` is optional."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        return LlmResponse(b"ok")


def test_a_provider_without_aclose_is_accepted() -> None:
    provider = _CompleteOnly()

    assert check_provider(provider) is provider


def test_a_provider_without_complete_is_refused_saying_what_a_provider_is() -> None:
    with pytest.raises(ConfigurationError, match=r"AgentConfig\.provider_factory") as raised:
        check_provider(object())

    assert "without complete()" in str(raised.value)
    assert "optionally async aclose()" in str(raised.value)


def test_a_provider_with_the_whole_lifecycle_is_accepted() -> None:
    provider = FakeLLM(name="lifecycle")

    assert check_provider(provider) is provider


class _ServedClient:
    """A user's factory of a client of a served model, saying its calls wait."""

    calls_wait = True

    def __call__(self) -> FakeLLM:
        return FakeLLM()


class _Unsure(_ServedClient):
    calls_wait = "yes"  # type: ignore[assignment]


def test_a_factory_is_on_the_network_when_it_is_a_spec_s_or_says_its_calls_wait() -> None:
    assert on_network(provider_from_spec("openai:gpt-4o-mini"))
    assert on_network(_ServedClient())
    assert on_network(FakeLLM(latency_s=0.2, calls_wait=True))
    # Learned from the first call, as before: a script, an unsaid factory, a truthy non-bool.
    assert not on_network(provider_from_spec("fake"))
    assert not on_network(FakeLLM(latency_s=0.2))
    assert not on_network(_Unsure())
