"""The triage pipeline, independent of where events come from and where results go.

`triage(events, answers, model_spec=..., longterm_uri=...)` applies the
agent to a timestamped `PCollection[(service, alert bytes)]` and returns
`TriageOutputs`. The local replay (`app.triage.replay`) feeds it from a
TestStream and writes files; a deployment feeds it from Pub/Sub. The
transform labels below are part of the contract: a streaming update on
Dataflow (`--update`) matches steps by name, so they never change.

A suspension that times out is a dead letter (`suspension_timeout`) that is
a signal here, not a loss: `EscalateTimeouts` turns each one into an
`escalate` intent, merged with the agent's own intents.

The agent escalates too: a page or a ticket nobody settled within
`recheck_after_ms` of event time is escalated by the agent's own follow-up
(`app.triage.follow_ups`), an `escalate` intent among the agent's intents.

With `tool_urls` (the demo's loopback receiver), pages, tickets and the
follow-ups' escalations are delivered by the agent (`ctx.call_tool`), and
the timed-out approvals' escalations by `DeliverEscalations`
(`ExecuteIntents`), all through `HttpWebhook`s and one ledger beside the
long-term store, so each reaches its target once however often a bundle is
retried.
"""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, NamedTuple

import apache_beam as beam
from apache_beam.pvalue import PCollection

from app.triage.agent import (
    APPROVAL_TIMEOUT_MS,
    EXPIRED_KEY,
    PROFILE_KEY,
    RECHECK_AFTER_MS,
    RING_KEY,
    SUMMARY_KEY,
    triage_agent,
)
from app.triage.alerts import canonical_json
from app.triage.clock import replay_clock_ms, triage_agent_replayed
from app.triage.decision import Decision
from app.triage.follow_ups import FOLLOW_UP_KEY
from app.triage.model import rules_llm
from app.triage.prompts import extract_summary, summarize_request
from app.triage.records import error_json, intent_json, lifecycle_json, output_json
from beam_agents import ActivationError, AgentConfig, FlushToLongterm, LifecycleEvent, RunAgent
from beam_agents.errors import ConfigurationError
from beam_agents.memory import DropOldestCompactor, SummarizeCompactor
from beam_agents.model import (
    EmbedderFactory,
    ProviderFactory,
    embedder_from_spec,
    provider_from_spec,
)
from beam_agents.proto import ToolIntent
from beam_agents.runtime import RunAgentResult
from beam_agents.tools import ExecuteIntents, HttpWebhook, ToolHandler

__all__ = [
    "AGENT_LABEL",
    "ALL_INTENTS_LABEL",
    "DEFAULT_EMBEDDER",
    "DELIVER_LABEL",
    "ESCALATE_LABEL",
    "ESCALATION_NAMESPACE",
    "NO_EMBEDDER",
    "STORM_MAX",
    "SUMMARY_KEEP_RECENT",
    "SUMMARY_TRIGGER_BYTES",
    "SUSPENDED_EVENT_BUFFER",
    "TIER1_TARGET_BYTES",
    "TOOLS",
    "TTL_MS",
    "TriageOutputs",
    "as_json_lines",
    "embedder_for",
    "escalation",
    "provider_for",
    "triage",
    "triage_config",
    "webhooks",
]

AGENT_LABEL: Final = "TriageAgent"
ESCALATE_LABEL: Final = "EscalateTimeouts"
ALL_INTENTS_LABEL: Final = "AllIntents"
DELIVER_LABEL: Final = "DeliverEscalations"
TOOLS: Final = ("page_oncall", "open_ticket", "escalate")
"""The tools `tool_urls` names: the agent calls all three (`escalate` for its follow-ups), and
the pipeline `escalate` for the approvals nobody answered."""

TTL_MS: Final = 30 * 60_000
"""A service idle for 30 minutes of event time is flushed to long-term memory and wiped."""
TIER1_TARGET_BYTES: Final = 384 * 1024
"""Tier 1 evicts the oldest open cases down to this once memory crosses the soft cap.

`profile`, `summary` and the open follow-up (`follow_up`) are never evicted."""
_NEVER_EVICTED: Final = (PROFILE_KEY, SUMMARY_KEY, FOLLOW_UP_KEY)
SUMMARY_TRIGGER_BYTES: Final = 704 * 1024
"""Tier 2 folds the alert ring into `summary` once memory reaches this (below the soft cap)."""
SUMMARY_KEEP_RECENT: Final = 16
SUSPENDED_EVENT_BUFFER: Final = 32
"""Alerts held while a P1 waits for its approval, triaged in order once it resolves."""
STORM_MAX: Final = 8
"""Alerts the deployed pipeline decides as one storm, at most (`triage(coalesce_max=...)`)."""
DEFAULT_EMBEDDER: Final = "fake"
"""The demo's embedder: deterministic, offline, no model weights (`--embedder`)."""
NO_EMBEDDER: Final = "none"
"""`--embedder none`: no recall; the agent classifies from the alert and its recent context."""
ESCALATION_NAMESPACE: Final = uuid.UUID("3d0f6f7e-9a51-5c8e-b7f2-6a1e2c4d8b13")
"""UUIDv5 namespace of escalation intent ids (see `escalation`)."""


class TriageOutputs(NamedTuple):
    """What the triage pipeline emits."""

    outputs: PCollection[tuple[bytes, Decision]]
    """`(service, Decision)` of every triaged alert: Beam rows with `Decision`'s schema."""
    intents: PCollection[ToolIntent]
    """Approvals, `page_oncall`, `open_ticket` and the pipeline's own `escalate` intents."""
    errors: PCollection[ActivationError]
    """Every dead letter, `suspension_timeout` included (it is also escalated)."""
    lifecycle: PCollection[LifecycleEvent] | None
    """`LifecycleEvent`s of every service, when asked for."""


def provider_for(model_spec: str) -> ProviderFactory:
    """The provider factory for `--model`: `rules` (the demo's), or any provider spec."""
    if model_spec == "rules":
        return rules_llm
    return provider_from_spec(model_spec)


def embedder_for(embedder_spec: str) -> EmbedderFactory | None:
    """The embedder factory for `--embedder`: any embedder spec, or None for `none`."""
    if embedder_spec == NO_EMBEDDER:
        return None
    return embedder_from_spec(embedder_spec)


def webhooks(tool_urls: Mapping[str, str]) -> dict[str, ToolHandler]:
    """An `HttpWebhook` per tool; a tool not in `TOOLS` is refused by name."""
    unknown = sorted(set(tool_urls) - set(TOOLS))
    if unknown:
        raise ValueError(f"tool_urls: unknown tools {unknown}; the triage tools are {TOOLS}")
    return {
        tool: HttpWebhook(url, timeout_s=5.0, max_attempts=3) for tool, url in tool_urls.items()
    }


_SUMMARIZER: Final = SummarizeCompactor(
    build_request=summarize_request,
    extract_summary=extract_summary,
    source_keys=(RING_KEY,),
    summary_key=SUMMARY_KEY,
    keep_recent=SUMMARY_KEEP_RECENT,
    trigger_bytes=SUMMARY_TRIGGER_BYTES,
)
"""Tier 2: folds the alert ring into `summary` (stateless, so one serves every config)."""


def triage_config(
    *,
    model_spec: str,
    longterm_uri: str,
    max_inflight_calls: int = 256,
    tool_urls: Mapping[str, str] | None = None,
    approval_timeout_ms: int = APPROVAL_TIMEOUT_MS,
    answer_signing_key: str | None = None,
    embedder_spec: str = DEFAULT_EMBEDDER,
    coalesce_max: int = 1,
) -> AgentConfig:
    """The agent's runtime configuration: both compaction tiers, TTL 30 min, on_expire flush.

    - `model_spec`: `rules` (the offline demo model) or a provider spec
      (`fake`, `openai:MODEL`, `gemini:MODEL`, `py:module:attr`).
    - `longterm_uri`: the long-term store (provisioned beforehand).
    - `max_inflight_calls`: model calls in flight per worker process (1: each
      call holds its Beam thread; see `AgentConfig`).
    - `tool_urls`: `{tool: URL}` of `TOOLS` to deliver through webhooks; the
      agent delivers pages, tickets and its follow-ups' escalations, and the
      long-term store is their ledger (provisioned for it).
    - `approval_timeout_ms`: how long a P1 waits for its answer, in the
      clock deadlines are set from (the live run gives a person more run
      time, since its clock runs faster than theirs).
    - `answer_signing_key`: where the key answers are signed with lives
      (`env:NAME` or a Secret Manager version; `AgentConfig.answer_signing_key`);
      each answer's bytes must then be a signed envelope, such as the
      console's signed answer line.
    - `embedder_spec`: the embedder recall uses (`fake`, the default, is
      offline; `local:...`, `openai:...`, `gemini:...`); `none` turns
      recall off. With an embedder, the flush at expiry goes to
      `history/working_memory` with the `alerts` ring embedded, so what
      expired is recallable by meaning beside the resolved incidents.
    - `coalesce_max`: up to how many alerts that waited behind their service
      are decided together (a storm, `AgentConfig.coalesce_max`; docs/triage.md).
    """
    handlers = webhooks(tool_urls or {})
    embedder = embedder_for(embedder_spec)
    return AgentConfig(
        tools=handlers,
        provider_factory=provider_for(model_spec),
        compactor=DropOldestCompactor(
            target_bytes=TIER1_TARGET_BYTES, protected_prefixes=_NEVER_EVICTED
        ),
        summarizer=_SUMMARIZER,
        longterm_memory=longterm_uri,
        on_expire=FlushToLongterm(key=EXPIRED_KEY, text=RING_KEY)
        if embedder is not None
        else FlushToLongterm(),
        embedder=embedder,
        ttl_ms=TTL_MS,
        hitl_timeout_ms=approval_timeout_ms,
        suspended_event_buffer=SUSPENDED_EVENT_BUFFER,
        max_inflight_calls=max_inflight_calls,
        answer_signing_key=answer_signing_key,
        coalesce_max=coalesce_max,
    )


def escalation(error: ActivationError) -> Iterator[ToolIntent]:
    """An `escalate` intent for each approval nobody answered in time.

    Its id is a UUIDv5 of the service and a SHA-256 of the alert, so a retried
    bundle, or a consumer recomputing it, gets the same id. `event_time_ms`
    is the suspension's deadline.
    """
    if error.reason != "suspension_timeout":
        return
    try:
        alert = json.loads(error.payload)
    except (UnicodeDecodeError, json.JSONDecodeError):
        alert = {}
    if not isinstance(alert, dict):
        alert = {}
    digest = hashlib.sha256(error.payload).hexdigest()
    args = {
        "service": error.entity_key.decode("utf-8", "replace"),
        "alert_id": alert.get("alert_id", ""),
        "message": alert.get("message", ""),
        "reason": "no answer to the approval before its deadline",
    }
    yield ToolIntent(
        state_schema_version=1,
        intent_id=str(uuid.uuid5(ESCALATION_NAMESPACE, f"{error.entity_key.hex()}/{digest}")),
        entity_key=error.entity_key,
        tool="escalate",
        args_json=canonical_json(args),
        event_time_ms=error.event_time_ms,
    )


def triage(
    events: PCollection[tuple[str, bytes]],
    answers: PCollection[tuple[str, str, bytes]] | None = None,
    *,
    model_spec: str = "rules",
    longterm_uri: str,
    clock_ms: Callable[[], int] | None = None,
    replay: bool = False,
    lifecycle: bool = True,
    max_inflight_calls: int = 256,
    tool_urls: Mapping[str, str] | None = None,
    approval_timeout_ms: int = APPROVAL_TIMEOUT_MS,
    answer_signing_key: str | None = None,
    embedder_spec: str = DEFAULT_EMBEDDER,
    recheck_after_ms: int = RECHECK_AFTER_MS,
    coalesce_max: int = 1,
) -> TriageOutputs:
    """Apply the triage agent to timestamped `(service, alert bytes)` events.

    - `answers`: `(service, intent_id, answer bytes)` resuming approvals.
    - `replay`: processing time follows event time (a TestStream replay
      advancing both together), so approval deadlines are set from the
      alert's event time; `clock_ms` then must be left unset.
    - `lifecycle`: also return the runtime's lifecycle records.
    - `recheck_after_ms`: event time after its alert a page or a ticket
      nobody settled is escalated (`RECHECK_AFTER_MS`, 15 minutes; the
      bundled answers assume it).

    The other arguments configure the agent, as `triage_config` says.

    Labels: `TriageAgent` (RunAgent), `EscalateTimeouts`, `AllIntents`, and
    with an `escalate` URL, `DeliverEscalations`.
    """
    config = triage_config(
        model_spec=model_spec,
        longterm_uri=longterm_uri,
        max_inflight_calls=max_inflight_calls,
        tool_urls=tool_urls,
        approval_timeout_ms=approval_timeout_ms,
        answer_signing_key=answer_signing_key,
        embedder_spec=embedder_spec,
        coalesce_max=coalesce_max,
    )
    if type(recheck_after_ms) is not int or recheck_after_ms < 1:
        raise ConfigurationError(
            "triage.recheck_after_ms", f"must be an int >= 1 (ms), got {recheck_after_ms!r}"
        )
    # The agent recalls exactly when the pipeline has an embedder to recall with.
    agent = _agent(replay=replay, recall=config.embedder is not None, recheck=recheck_after_ms)
    result = _run_agent(
        events, answers, config, agent, replay=replay, clock_ms=clock_ms, lifecycle=lifecycle
    )
    return TriageOutputs(
        outputs=result.outputs,
        intents=_all_intents(result, tool_urls, longterm_uri),
        errors=result.errors,
        lifecycle=result.lifecycle,
    )


def _agent(*, replay: bool, recall: bool, recheck: int) -> Callable[..., Any]:
    """The triage agent with its options bound: on the replay's clock, recall, the recheck delay."""
    base = triage_agent_replayed if replay else triage_agent
    return functools.partial(base, recall=recall, recheck_after_ms=recheck)


def _run_agent(
    events: PCollection[tuple[str, bytes]],
    answers: PCollection[tuple[str, str, bytes]] | None,
    config: AgentConfig,
    agent: Callable[..., Any],
    *,
    replay: bool,
    clock_ms: Callable[[], int] | None,
    lifecycle: bool,
) -> RunAgentResult:
    """`RunAgent` over the triage agent (`TriageAgent`), on the replay's clock or `clock_ms`.

    Its outputs are typed `Decision`s: an agent result that is not one is a
    dead letter (`output_invalid`), never a malformed line downstream.
    """
    if replay and clock_ms is not None:
        raise ValueError("triage(): pass either replay=True or clock_ms, not both")
    result: RunAgentResult = events | AGENT_LABEL >> RunAgent(
        agent,
        config,
        answers=answers,
        clock_ms=replay_clock_ms if replay else clock_ms,
        lifecycle=lifecycle,
        output_type=Decision,
    )
    return result


def _all_intents(
    result: RunAgentResult, tool_urls: Mapping[str, str] | None, longterm_uri: str
) -> PCollection[ToolIntent]:
    """The agent's intents and an `escalate` one per unanswered approval (delivered, with a URL)."""
    escalations = result.errors | ESCALATE_LABEL >> beam.FlatMap(escalation).with_output_types(
        ToolIntent
    )
    if tool_urls and "escalate" in tool_urls:
        _deliver_escalations(escalations, tool_urls["escalate"], longterm_uri)
    intents = (result.intents, escalations) | ALL_INTENTS_LABEL >> beam.Flatten()
    intents.element_type = ToolIntent
    return intents  # type: ignore[no-any-return]


def _deliver_escalations(escalations: PCollection[ToolIntent], url: str, ledger: str) -> None:
    """POST each escalation once (`DeliverEscalations`); the ledger is the long-term store."""
    _ = escalations | DELIVER_LABEL >> ExecuteIntents(webhooks({"escalate": url}), ledger)


def as_json_lines(outputs: TriageOutputs) -> dict[str, PCollection[bytes]]:
    """Each output as JSON lines (`app.triage.records`), ready for files or message topics.

    Keys: `outputs`, `intents`, `errors` and, with lifecycle records,
    `lifecycle`. Labels: `OutputsJson`, `IntentsJson`, `ErrorsJson`, `LifecycleJson`.
    """
    # Typed as the outputs are: Beam rows, which Beam does not match against `Decision`.
    decisions_json = beam.Map(output_json).with_input_types(outputs.outputs.element_type)
    lines = {
        "outputs": outputs.outputs | "OutputsJson" >> decisions_json,
        "intents": outputs.intents | "IntentsJson" >> beam.Map(intent_json),
        "errors": outputs.errors | "ErrorsJson" >> beam.Map(error_json),
    }
    if outputs.lifecycle is not None:
        lines["lifecycle"] = outputs.lifecycle | "LifecycleJson" >> beam.Map(lifecycle_json)
    for pcoll in lines.values():
        pcoll.element_type = bytes
    return lines
