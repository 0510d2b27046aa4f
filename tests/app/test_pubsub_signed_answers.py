"""The triage app on Pub/Sub under an answer signing key: only the console's signed answer resumes.

The real CLI runs the streaming pipeline on the DirectRunner against the Pub/Sub emulator
with `--answer_signing_secret env:NAME`. An unsigned answer and a forged one (signed under
another key) are dead-lettered; the console's own Pub/Sub sink (`PubSubAnswers`, holding the
key) then answers the same approval, and the P1 is paged.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path

import pytest

from app.triage.alerts import Alert
from beam_agents.answer_signing import signed_answer_bytes
from beam_agents.console.activity import RunActivity
from beam_agents.console.pubsub import PubSubAnswers
from tests.app.pubsub_streams import PROJECT, Streams, log_tail, streaming_run

RUN_BUDGET_S = 90.0
KEY_ENV = "TRIAGE_TEST_ANSWER_SIGNING"


@pytest.mark.pipeline
def test_a_signed_pubsub_run_dead_letters_unsigned_and_forged_answers_and_resumes_a_signed_one(
    pubsub_emulator_host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = secrets.token_hex(32)
    monkeypatch.setenv(KEY_ENV, key)  # the run's subprocess inherits it: its worker reads it
    streams = Streams(["alerts", "answers", "outputs", "intents", "errors", "lifecycle"])
    longterm = f"sqlite+aiosqlite:///{tmp_path / 'longterm.sqlite'}"
    argv = [
        "-m", "app.triage", "run",
        f"--input_subscription={streams.subscription('alerts')}",
        f"--answers_subscription={streams.subscription('answers')}",
        f"--outputs_topic={streams.topic('outputs')}",
        f"--intents_topic={streams.topic('intents')}",
        f"--errors_topic={streams.topic('errors')}",
        f"--lifecycle_topic={streams.topic('lifecycle')}",
        f"--answer_signing_secret=env:{KEY_ENV}",
        "--model=rules",
        f"--longterm={longterm}",
        "--provision",
        "--runner=DirectRunner",
    ]  # fmt: skip
    now = int(time.time() * 1000)
    p1 = Alert("checkout", "checkout-1", "critical", "checkout: payments API unreachable", now)
    log = tmp_path / "pipeline.log"
    spool = tmp_path / "console"
    spool.mkdir()
    with streaming_run(argv, log) as run:
        deadline = time.monotonic() + RUN_BUDGET_S
        streams.publish(
            "alerts", p1.to_bytes(), service=p1.service, event_time=str(p1.event_time_ms)
        )
        # An answer without an intent id: it makes the answers' first pull return at once.
        streams.publish("answers", b'{"answer": "approve"}', service="checkout")

        first = streams.pull_until("intents", 1, deadline=deadline, alive=run)
        approvals = [m for m in first if m.json().get("awaits_answer")]
        assert len(approvals) == 1, log_tail(log)
        intent_id = str(approvals[0].json()["intent_id"])

        unsigned = {"answer": "approve", "intent_id": intent_id, "service": "checkout"}
        streams.publish("answers", json.dumps(unsigned).encode(), service="checkout")
        forged = json.loads(
            signed_answer_bytes(
                secrets.token_bytes(32),
                intent_id=intent_id,
                entity_key=b"checkout",
                answer="approve",
                approver="mallory",
                expires_at_ms=int(time.time() * 1000) + 600_000,
            )
        )
        forged.update(intent_id=intent_id, service="checkout")
        streams.publish("answers", json.dumps(forged).encode(), service="checkout")
        refused = streams.pull_until("errors", 3, deadline=deadline, alive=run)
        reasons = sorted(m.attributes["reason"] for m in refused)
        assert reasons == ["bad_answer_signature", "invalid_event", "unsigned_answer"], log_tail(
            log
        )

        # The console: it sees the approval in its spool and publishes a signed answer.
        (spool / "intents.jsonl").write_bytes(approvals[0].data.rstrip(b"\n") + b"\n")
        activity = RunActivity(spool, approval_timeout_ms=15 * 60_000)
        activity.refresh()
        sink = PubSubAnswers(
            f"pubsub://{PROJECT}/{streams.topic('answers').rsplit('/', 1)[1]}",
            spool,
            activity,
            signing_key=key.encode(),
        )
        line = sink.submit(intent_id, "approve", "", "alice")
        assert line["signature"]

        intents = streams.pull_until(
            "intents",
            0,
            deadline=deadline,
            alive=run,
            done=lambda got: any(m.attributes["tool"] == "page_oncall" for m in got),
        )
        outputs = streams.pull_until("outputs", 1, deadline=deadline, alive=run)
        lifecycle = streams.pull_until(
            "lifecycle",
            0,
            deadline=deadline,
            alive=run,
            done=lambda got: any(m.attributes["kind"] == "resumed" for m in got),
        )
    streams.close()

    pages = [m.json() for m in intents if m.attributes["tool"] == "page_oncall"]
    assert [p["args"]["alert_id"] for p in pages] == ["checkout-1"], log_tail(log)
    assert [m.json()["decision"] for m in outputs] == ["paged"]
    resumed = [m.json() for m in lifecycle if m.attributes["kind"] == "resumed"]
    assert [r["detail"] for r in resumed] == [f"{intent_id} by alice"]
    assert key not in log.read_text(errors="replace")
