"""Answers the console signs, the pipeline verifies; the approver IAP vouches for, not a form."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from beam_agents import AgentConfig
from beam_agents.answer_signing import approval_intent_id, open_answer
from beam_agents.testing.streaming import Script, run_script
from tests.console.conftest import Served, approval, write_lines
from tests.runtime import agents

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

KEY_ENV = "BEAM_AGENTS_TEST_CONSOLE_SIGNING_KEY"
KEY = "console-and-pipeline-share-this-key-0123456789"
AUDIENCE = "/projects/123456789/global/backendServices/42"


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_an_answer_given_in_the_console_resumes_a_pipeline_holding_the_same_key(
    serve: Callable[..., Served],
    page: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)
    config = AgentConfig(answer_signing_key=f"env:{KEY_ENV}")
    # The approval the pipeline emits for the first event of svc-1 (seq 1, index 0).
    intent = approval_intent_id(
        KEY.encode(),
        b"svc-1",
        1,
        0,
        event=b"ask-1",
        event_time_ms=1_000,
        prompt=b"ok?",
        timeout_ms=60_000,
    )
    run = tmp_path / "run"
    run.mkdir()
    write_lines(run / "intents.jsonl", [approval("svc-1", "svc-1-0001", "down", intent)])
    sink = tmp_path / "answers.jsonl"
    served = serve(source=run, answers=sink, answer_signing_key=KEY.encode())

    page.goto(f"{served.url}/approvals")
    card = page.locator(f"#approval-{intent}")
    card.locator("input[name=approver]").fill("Ada on call")
    card.locator("button[value=approve]").click()
    page.wait_for_url(f"{served.url}/approvals?answered={intent}")
    [line] = sink.read_text().splitlines()

    script = Script()
    script.events(("svc-1", b"ask-1", 1_000)).watermark(2_000)
    script.answers(("svc-1", intent, line.encode(), 3_000)).watermark(4_000)
    result = run_script(
        agents.log_then_approve, config, script, clock_ms=agents.clock_at_zero, lifecycle=True
    )

    assert [i.intent_id for i in result.intents if i.awaits_answer] == [intent]
    assert result.errors == []
    assert result.outputs == [(b"svc-1", b"1:-")]
    [resumed] = [e for e in result.lifecycle if e.kind == "resumed"]
    assert resumed.detail == f"{intent} by Ada on call"


def test_a_console_without_the_key_writes_answers_the_pipeline_refuses(
    serve: Callable[..., Served], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_lines(run / "intents.jsonl", [approval("svc-1", "svc-1-0001", "down", "i-1")])
    sink = tmp_path / "answers.jsonl"
    served = serve(source=run, answers=sink, answer_signing_key=b"another-console-key-0123456789ab")

    with httpx.Client(base_url=served.url) as client:
        csrf = _csrf(client)
        client.post("/approvals/i-1", data={"csrf": csrf, "decision": "deny", "approver": "Eve"})

    [answer] = _lines(sink)
    from beam_agents.answer_signing import AnswerVerificationError

    with pytest.raises(AnswerVerificationError) as refused:
        open_answer(KEY.encode(), b"svc-1", "i-1", json.dumps(answer).encode(), now_ms=0)
    assert refused.value.unsigned is False


def test_a_console_answer_expires_one_approval_timeout_after_it_is_given(
    serve: Callable[..., Served], tmp_path: Path
) -> None:
    """The signed expiry bounds how long a copy of the line can be replayed: it verifies
    until then, and is `expired` (not forged) after."""
    from beam_agents.answer_signing import AnswerVerificationError

    run = tmp_path / "run"
    run.mkdir()
    write_lines(run / "intents.jsonl", [approval("svc-1", "svc-1-0001", "down", "i-1")])
    sink = tmp_path / "answers.jsonl"
    served = serve(source=run, answers=sink, answer_signing_key=KEY.encode())

    before_ms = int(time.time() * 1000)
    with httpx.Client(base_url=served.url) as client:
        csrf = _csrf(client)
        client.post("/approvals/i-1", data={"csrf": csrf, "decision": "approve", "approver": "Ada"})
    after_ms = int(time.time() * 1000)

    [answer] = _lines(sink)
    timeout_ms = approval("svc-1", "svc-1-0001", "down", "i-1")["args"]["timeout_ms"]
    assert before_ms + timeout_ms <= answer["expires_at_ms"] <= after_ms + timeout_ms
    line = json.dumps(answer).encode()
    at_expiry = open_answer(KEY.encode(), b"svc-1", "i-1", line, now_ms=answer["expires_at_ms"])
    assert at_expiry.approver == "Ada"
    with pytest.raises(AnswerVerificationError) as refused:
        open_answer(KEY.encode(), b"svc-1", "i-1", line, now_ms=answer["expires_at_ms"] + 1)
    assert refused.value.expired is True


# -- IAP ------------------------------------------------------------------------------


def _key_pair() -> tuple[str, str]:
    """A fresh ES256 key pair as (private PEM, public PEM), as IAP's would be."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    private = ec.generate_private_key(ec.SECP256R1())
    return (
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode(),
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode(),
    )


def _assertion(private_pem: str, *, email: str, audience: str = AUDIENCE, kid: str = "k1") -> str:
    from google.auth import jwt
    from google.auth.crypt import es256

    signer = es256.ES256Signer.from_string(private_pem, key_id=kid)
    now = int(time.time())
    claims = {
        "iss": "https://cloud.google.com/iap",
        "aud": audience,
        "sub": "accounts.google.com:1234",
        "email": f"accounts.google.com:{email}",
        "iat": now,
        "exp": now + 600,
    }
    return jwt.encode(signer, claims).decode()  # type: ignore[no-untyped-call]


def _csrf(client: httpx.Client) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/approvals").text)
    assert match is not None
    return match.group(1)


@pytest.fixture
def iap_console(serve: Callable[..., Served], tmp_path: Path) -> tuple[Served, Path, str]:
    """A console trusting one locally made IAP key; its sink and that key's private half."""
    from beam_agents.console.identity import IapIdentity

    private, public = _key_pair()
    run = tmp_path / "run"
    run.mkdir()
    write_lines(run / "intents.jsonl", [approval("svc-1", "svc-1-0001", "down", "i-1")])
    sink = tmp_path / "answers.jsonl"
    identity = IapIdentity(AUDIENCE, keys=lambda: {"k1": public})
    return serve(source=run, answers=sink, identity=identity), sink, private


def _answer(served: Served, assertion: str | None) -> httpx.Response:
    headers = {} if assertion is None else {"x-goog-iap-jwt-assertion": assertion}
    with httpx.Client(base_url=served.url, headers=headers) as client:
        form = {"csrf": _csrf(client), "decision": "approve", "approver": "Mallory"}
        return client.post("/approvals/i-1", data=form)


def test_behind_iap_the_approver_is_the_verified_identity_not_the_form(
    iap_console: tuple[Served, Path, str],
) -> None:
    served, sink, private = iap_console

    response = _answer(served, _assertion(private, email="ada@example.com"))

    assert response.status_code == 303
    [answer] = _lines(sink)
    assert answer["approver"] == "ada@example.com"


@pytest.mark.parametrize("forgery", ["missing", "another-key", "another-audience", "garbage"])
def test_behind_iap_an_unverifiable_assertion_answers_nothing(
    iap_console: tuple[Served, Path, str], forgery: str
) -> None:
    served, sink, private = iap_console
    other, _ = _key_pair()
    assertion = {
        "missing": None,
        "another-key": _assertion(other, email="mallory@example.com"),
        "another-audience": _assertion(
            private, email="mallory@example.com", audience="/projects/9/apps/other"
        ),
        "garbage": "not.a.jwt",
    }[forgery]

    response = _answer(served, assertion)

    assert response.status_code == 403
    assert _lines(sink) == []
