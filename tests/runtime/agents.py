"""Agents used by the runtime tests.

Module level, because RunAgent pickles its agent by reference, exactly as a
user's agent must be.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib

from beam_agents import ActivationContext, Complete, LlmRequest, LlmResponse, Suspend
from beam_agents.memory import LongtermNotConfigured
from beam_agents.model import ModelProvider
from beam_agents.tools import ToolCall


async def remember(ctx: ActivationContext) -> Complete:
    """Appends each event and reports seq and everything remembered so far."""
    ctx.memory.append("seen", ctx.event)
    return Complete(b"%d:%s" % (ctx.seq, b",".join(ctx.memory.ring("seen"))))


async def explode_on_boom(ctx: ActivationContext) -> Complete:
    """Writes memory and stages an intent, then raises for b"boom"."""
    ctx.memory.append("seen", ctx.event)
    ctx.memory.set("last", ctx.event)
    ctx.emit_intent("notify", {"event": ctx.event.decode()})
    if ctx.event == b"boom":
        raise RuntimeError("agent failed on purpose")
    return Complete(b"%d:%s" % (ctx.seq, b",".join(ctx.memory.ring("seen"))))


async def sleepy(ctx: ActivationContext) -> Complete:
    """Sleeps far past any test's activation timeout when asked to."""
    ctx.memory.set("started", ctx.event)
    if ctx.event == b"slow":
        await asyncio.sleep(30)
    return Complete(ctx.event)


async def read_only(ctx: ActivationContext) -> Complete:
    """Writes once, then only reads (ring and a miss) on later events."""
    if ctx.event == b"write":
        ctx.memory.append("log", b"entry")
    return Complete(b"%d" % len(ctx.memory.ring("log")) + (ctx.memory.get("absent") or b""))


async def touch_longterm(ctx: ActivationContext) -> Complete:
    """Uses working memory, then reports what `ctx.memory.longterm` says."""
    ctx.memory.set("k", ctx.event)
    try:
        _ = ctx.memory.longterm
    except LongtermNotConfigured as exc:
        return Complete(str(exc).encode())
    return Complete(b"configured")


async def fill_past_soft_cap(ctx: ActivationContext) -> Complete:
    """Writes 300 KB per event, so the third event crosses the soft cap."""
    ctx.memory.set(f"chunk-{ctx.seq}", b"x" * 300_000)
    return Complete(b"%d" % ctx.memory.size_bytes)


async def ask_model(ctx: ActivationContext) -> Complete:
    """One model call per event; the response becomes the output."""
    response = await ctx.call_model(
        LlmRequest(model_id="fake-1", messages=[{"role": "user", "content": ctx.event.decode()}])
    )
    ctx.memory.append("answers", response.response)
    return Complete(response.response)


async def approve_then_act(ctx: ActivationContext) -> Complete | Suspend:
    """Calls the model, stages an intent, asks for approval, then acts on the answer."""
    ctx.memory.append("log", ctx.event)
    draft = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    ctx.emit_intent("draft", {"text": draft.response.decode()})
    if ctx.answer is None:
        return Suspend(prompt=b"approve " + draft.response, timeout_ms=60_000)
    ctx.emit_intent("act", {"approved": ctx.answer.decode()})
    return Complete(b"%s/%s/%d" % (draft.response, ctx.answer, len(ctx.memory.ring("log"))))


async def returns_garbage(ctx: ActivationContext) -> Complete:
    """Returns something that is neither Complete nor Suspend."""
    return "not a result"  # type: ignore[return-value]


def clock_at_zero() -> int:
    """Processing-time clock matching TestStream's, which starts at 0."""
    return 0


def clock_just_ahead() -> int:
    """Processing-time clock 1 ms ahead of TestStream's start.

    Parked activations then poll once the script advances processing time,
    so every event before that parks or waits in a buffer first.
    """
    return 1


async def ask_and_fingerprint(ctx: ActivationContext) -> Complete:
    """Outputs a digest of the committed memory it started from, plus a model answer."""
    before = hashlib.sha256(ctx.memory.to_blob().SerializeToString(deterministic=True)).hexdigest()
    response = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    ctx.memory.append("answers", response.response)
    ctx.emit_intent("record", {"seq": ctx.seq, "before": before})
    return Complete(f"{ctx.seq}:{before[:16]}:{response.response.decode()}".encode())


async def log_events(ctx: ActivationContext) -> Complete:
    """Appends every event to the `log` ring and reports the ring and summary."""
    ctx.memory.append("log", ctx.event, max_items=100)
    summary = ctx.memory.get("summary") or b"-"
    return Complete(b"%d:%d:%s" % (ctx.seq, len(ctx.memory.ring("log")), summary))


async def log_then_approve(ctx: ActivationContext) -> Complete | Suspend:
    """Like log_events, but asks for approval on events starting with b"ask"."""
    ctx.memory.append("log", ctx.event, max_items=100)
    if ctx.event.startswith(b"ask") and ctx.answer is None:
        return Suspend(prompt=b"ok?", timeout_ms=60_000)
    return Complete(b"%d:%s" % (len(ctx.memory.ring("log")), ctx.memory.get("summary") or b"-"))


def summary_request(items: tuple[bytes, ...], prior: bytes | None) -> LlmRequest:
    """A pure prompt: a function of the folded items and the prior summary only."""
    return LlmRequest(
        model_id="fake-1",
        messages=[{"prior": (prior or b"").decode(), "items": [i.decode() for i in items]}],
    )


_impure_calls = [0]


def impure_summary_request(items: tuple[bytes, ...], prior: bytes | None) -> LlmRequest:
    """An impure prompt: it counts its own calls, so a re-run asks something new."""
    _impure_calls[0] += 1
    return LlmRequest(model_id="fake-1", messages=[f"call {_impure_calls[0]}", len(items)])


def summary_of(response: bytes) -> bytes:
    """The whole response is the summary."""
    return response


def bloated_summary(response: bytes) -> bytes:
    """A summary larger than anything it could replace."""
    return response * 1000


def broken_summary(response: bytes) -> bytes:
    """Parsing the provider's response fails."""
    raise ValueError("cannot parse the summary")


async def save_case(ctx: ActivationContext) -> Complete:
    """The blind-upsert discipline: reads for context, saves from the event only."""
    history = await ctx.memory.longterm.search("case/", limit=10)
    ctx.memory.append("seen", ctx.event)
    key = f"case/{ctx.seq:04d}"
    ctx.memory.longterm.save(key, b"summary of " + ctx.event)
    ctx.emit_intent("record", {"key": key})
    del history  # context for a model, never a branch or a value to save
    return Complete(key.encode())


async def save_then_raise(ctx: ActivationContext) -> Complete:
    """Stages a save, then fails."""
    ctx.memory.longterm.save("doomed", ctx.event)
    raise RuntimeError("failed after staging a save")


async def read_your_writes(ctx: ActivationContext) -> Complete:
    """Saves, then reads the same key back by load and by search."""
    ctx.memory.longterm.save("profile", ctx.event)
    loaded = await ctx.memory.longterm.load("profile")
    found = await ctx.memory.longterm.search("pro", limit=5)
    assert loaded is not None
    return Complete(b"%s|%s" % (loaded.value, b",".join(r.value for r in found)))


async def working_memory_only(ctx: ActivationContext) -> Complete:
    """Heavy working-memory use, compaction included, and no long-term call."""
    for i in range(4):
        ctx.memory.set(f"chunk-{ctx.seq}-{i}", b"x" * 100_000)
    ctx.memory.append("log", ctx.event)
    ctx.memory.get("chunk-1-0")
    return Complete(b"%d" % ctx.memory.size_bytes)


async def load_profile(ctx: ActivationContext) -> Complete:
    """One long-term read."""
    record = await ctx.memory.longterm.load("profile")
    return Complete(record.value if record else b"none")


async def save_under_event(ctx: ActivationContext) -> Complete:
    """Saves the event under the key the event names (an empty event names the empty key)."""
    ctx.memory.append("seen", ctx.event)
    ctx.memory.longterm.save(ctx.event.decode(), b"seen at seq %d" % ctx.seq)
    return Complete(ctx.event)


async def leak_a_password(ctx: ActivationContext) -> Complete:
    """Raises with a credential in its message, as a client library's error might."""
    raise ConnectionError("cannot reach redis://app:hunter2@127.0.0.1:1/0 (password=hunter2)")


def _descend(depth: int) -> None:
    if depth == 0:
        raise RecursionError("went too deep on purpose")
    _descend(depth - 1)


async def deep_failure(ctx: ActivationContext) -> Complete:
    """Fails thirty frames down into its own helper."""
    _descend(30)
    return Complete(b"unreachable")


class MisconfiguredProvider(ModelProvider):
    """A user-written provider whose request builder has a bug."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        return LlmResponse(response=self._body(request))

    def _body(self, request: LlmRequest) -> bytes:
        raise KeyError("choices")


def misconfigured_provider() -> MisconfiguredProvider:
    """The provider factory: module level, so it pickles by reference."""
    return MisconfiguredProvider()


async def hold_the_line(ctx: ActivationContext) -> Complete | Suspend:
    """Asks for approval on events starting with b"ask"; otherwise reports what it saw.

    The output names the seq, the event, the frozen clock, the answer and the
    committed log, so order, seqs and clocks of drained events are visible.
    """
    ctx.memory.append("log", ctx.event, max_items=100)
    if ctx.event.startswith(b"ask") and ctx.answer is None:
        return Suspend(prompt=b"ok? " + ctx.event, timeout_ms=60_000)
    ctx.emit_intent("handled", {"event": ctx.event.decode(), "event_id": ctx.event_id})
    log = b",".join(ctx.memory.ring("log"))
    return Complete(b"%d|%s|%d|%s|%s" % (ctx.seq, ctx.event, ctx.now_ms, ctx.answer or b"-", log))


async def triage_and_save(ctx: ActivationContext) -> Complete | Suspend:
    """Model call, long-term save and memory on every event; approval on b"ask" events.

    The output carries a digest of the committed memory the activation started
    from, so a lost or doubled commit anywhere in a drain changes it.
    """
    before = hashlib.sha256(ctx.memory.to_blob().SerializeToString(deterministic=True)).hexdigest()
    draft = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    ctx.memory.append("log", ctx.event)
    ctx.memory.longterm.save(f"case/{ctx.seq:04d}", ctx.event + b"=" + draft.response)
    if ctx.event.startswith(b"ask") and ctx.answer is None:
        return Suspend(prompt=draft.response, timeout_ms=60_000)
    ctx.emit_intent("handled", {"seq": ctx.seq, "before": before})
    return Complete(f"{ctx.seq}:{before[:16]}:{draft.response.decode()}".encode())


async def note_and_notify(ctx: ActivationContext) -> Complete:
    """Remembers every event and emits one intent per activation."""
    ctx.memory.append("seen", ctx.event)
    ctx.emit_intent("notify", {"seq": ctx.seq})
    return Complete(b"%d:%s" % (ctx.seq, b",".join(ctx.memory.ring("seen"))))


async def remember_many_ids(ctx: ActivationContext) -> Complete:
    """60,000 one-byte scalars: 120 KB of values, a blob over one store row."""
    for i in range(60_000):
        ctx.memory.set(f"seen/{i:05d}", b"1")
    return Complete(b"%d" % ctx.memory.size_bytes)


async def remember_under_a_huge_key(ctx: ActivationContext) -> Complete:
    """One entry whose key alone is larger than any store row (keys are not capped)."""
    if ctx.event == b"huge":
        ctx.memory.set("k" * 1_200_000, b"v")
    return Complete(b"%d" % len(ctx.memory))


async def swallow_the_timeout(ctx: ActivationContext) -> Complete:
    """Catches the timeout's cancellation once and returns as if nothing happened."""
    ctx.memory.set("late", ctx.event)
    ctx.emit_intent("notify", {"late": True})
    if ctx.event == b"slow":
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return Complete(b"late")
    return Complete(b"%d:%s" % (ctx.seq, ctx.memory.get("late") or b""))


async def ignore_every_cancellation(ctx: ActivationContext) -> Complete:
    """A runaway: catches every cancellation, forever, for b"slow"."""
    while ctx.event == b"slow":
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            continue
    return Complete(ctx.event)


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


async def raise_unprintable(ctx: ActivationContext) -> Complete:
    """Raises an exception whose `__str__` itself raises."""
    if ctx.event == b"boom":
        raise _Unprintable
    return Complete(ctx.event)


async def emit_unencodable_intent(ctx: ActivationContext) -> Complete:
    """Names a tool with a lone surrogate, which no intent can carry."""
    if ctx.event == b"bad":
        ctx.emit_intent("notify\ud800", {})
    return Complete(ctx.event)


async def ask_for_approval(ctx: ActivationContext) -> Complete | Suspend:
    """Suspends with the configured deadline; completes on the answer."""
    if ctx.answer is None:
        return Suspend(prompt=b"ok?")
    return Complete(ctx.answer)


async def ask_inside_a_broad_except(ctx: ActivationContext) -> Complete:
    """Calls the model inside `except Exception`, which must not swallow a park."""
    try:
        answer = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    except Exception:
        return Complete(b"swallowed")
    ctx.memory.append("answers", answer.response)
    return Complete(answer.response)


async def ask_twice_at_once(ctx: ActivationContext) -> Complete:
    """Two model calls in one task group, concurrently."""
    async with asyncio.TaskGroup() as group:
        first = group.create_task(
            ctx.call_model(LlmRequest(model_id="fake-1", messages=["one", ctx.event.decode()]))
        )
        second = group.create_task(
            ctx.call_model(LlmRequest(model_id="fake-1", messages=["two", ctx.event.decode()]))
        )
    return Complete(first.result().response + b"+" + second.result().response)


async def ask_again_on_answer(ctx: ActivationContext) -> Complete | Suspend:
    """Asks for approval after one call; the resumed run asks the model about the answer."""
    ctx.memory.append("log", ctx.event)
    draft = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    if ctx.answer is None:
        return Suspend(prompt=draft.response, timeout_ms=60_000)
    verdict = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.answer.decode()]))
    ctx.emit_intent("act", {"verdict": verdict.response.decode()})
    return Complete(draft.response + b"/" + verdict.response)


async def ask_while_a_sibling_fails(ctx: ActivationContext) -> Complete:
    """A task group with a model call beside a task that raises on b"bad"."""

    async def check() -> None:
        if ctx.event == b"bad":
            raise ValueError("a sibling task failed")

    async with asyncio.TaskGroup() as group:
        answer = group.create_task(
            ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
        )
        group.create_task(check())
    return Complete(answer.result().response)


async def ask_twice(ctx: ActivationContext) -> Complete:
    """Two model calls per event: a park on the second carries the first's spend."""
    first = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    second = await ctx.call_model(
        LlmRequest(model_id="fake-1", messages=[ctx.event.decode(), "again"])
    )
    return Complete(first.response + b"|" + second.response)


class UnprintableProvider(ModelProvider):
    """A provider whose every call raises an exception that cannot describe itself."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        raise _Unprintable


def unprintable_provider() -> UnprintableProvider:
    return UnprintableProvider()


STUBBORN_FOR_S = 20.0
"""How long a stubborn call ignores cancellation before it gives up and answers:
bounded, so an abandoned call does not outlive the test run by much."""


async def ignore_cancellation() -> None:
    """Sleep through every cancellation, for `STUBBORN_FOR_S` at most."""
    loop = asyncio.get_running_loop()
    until = loop.time() + STUBBORN_FOR_S
    while loop.time() < until:
        try:
            await asyncio.sleep(until - loop.time())
        except asyncio.CancelledError:
            continue


class StubbornProvider(ModelProvider):
    """A provider whose call catches every cancellation and goes on waiting."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        await ignore_cancellation()
        return LlmResponse(response=b"too late")


def stubborn_provider() -> StubbornProvider:
    return StubbornProvider()


class LateProvider(ModelProvider):
    """A provider whose call catches its cancellation once and answers anyway."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(30)
        return LlmResponse(response=b"late")


def late_provider() -> LateProvider:
    return LateProvider()


async def stubborn_ticket(call: ToolCall) -> bytes:
    """A tool handler that catches every cancellation and goes on waiting."""
    await ignore_cancellation()
    return b"too late"


class FastThenSlowProvider(ModelProvider):
    """Answers a request whose first message is "one" fast and dear (60 tokens),
    any other cheaply (10 tokens) and, unless it is about a warm-up, slowly."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        if request.messages[0] == "one":
            await asyncio.sleep(0.01)
            return LlmResponse(response=b"fast", model_id="fake-1", output_tokens=60)
        await asyncio.sleep(0.01 if request.messages[1] == "warm up" else 0.5)
        return LlmResponse(response=b"slow", model_id="fake-1", output_tokens=10)


def fast_then_slow_provider() -> FastThenSlowProvider:
    return FastThenSlowProvider()


LEAKED_SECRETS = ("hunter2", "sk-live-4f9a1c", "tok-77e0d2b")
"""Credentials the leaky provider and tool put in their error messages."""
_LEAKY_TEXT = (
    f"401 from https://bot:{LEAKED_SECRETS[0]}@api.example.com/v1 "
    f"(api_key={LEAKED_SECRETS[1]}, Authorization: Bearer {LEAKED_SECRETS[2]})"
)


class LeakyProvider(ModelProvider):
    """A provider whose error message carries its credentials, as a careless client's might."""

    async def complete(self, request: LlmRequest) -> LlmResponse:
        await asyncio.sleep(0.02)
        raise ConnectionError(_LEAKY_TEXT)


def leaky_provider() -> LeakyProvider:
    return LeakyProvider()


async def leaky_ticket(call: ToolCall) -> bytes:
    """A tool handler whose error message carries its credentials."""
    await asyncio.sleep(0.02)
    raise ConnectionError(_LEAKY_TEXT)


async def ticket_or_ask(ctx: ActivationContext) -> Complete:
    """A tool call for events starting with b"tool", a model call otherwise."""
    if ctx.event.startswith(b"tool"):
        return Complete(await ctx.call_tool("open_ticket", {"title": ctx.event.decode()}))
    return await ask_model(ctx)


async def save_and_recall(ctx: ActivationContext) -> Complete:
    """Saves the event with its text, then recalls the two records most like it."""
    text = ctx.event.decode()
    ctx.memory.longterm.save(f"note/{ctx.seq:04d}", ctx.event, text=text)
    hits = await ctx.memory.longterm.recall(text, k=2, prefix="note/")
    return Complete(b",".join(hit.key.encode() for hit in hits))


async def save_with_text(ctx: ActivationContext) -> Complete:
    """Saves the event with its text and never recalls: embedded once, before the flush."""
    ctx.memory.longterm.save(f"note/{ctx.seq:04d}", ctx.event, text=ctx.event.decode())
    ctx.memory.longterm.save(f"plain/{ctx.seq:04d}", ctx.event)
    return Complete(ctx.event)


async def recall_across(ctx: ActivationContext) -> Complete:
    """Saves the event, then recalls across every entity's committed records."""
    text = ctx.event.decode()
    ctx.memory.longterm.save("incident", ctx.event, text=text)
    hits = await ctx.memory.longterm.across_entities.recall(text, k=2)
    return Complete(b",".join(hit.entity_key + b"/" + hit.record.key.encode() for hit in hits))


async def recall_across_unconfigured(ctx: ActivationContext) -> Complete:
    """Asks for the cross-entity handle on a pipeline that did not turn it on."""
    try:
        _ = ctx.memory.longterm.across_entities
    except Exception as exc:
        return Complete(f"{type(exc).__name__}: {exc}".encode())
    return Complete(b"open")


async def answer_or_ask_for_approval(ctx: ActivationContext) -> Complete | Suspend:
    """A model call per event; an event that starts with `approve` then waits for a person.

    Run where calls park, every output after the call leaves from the poll (a
    timer); an approval nobody answers ends in the suspension timer; the key's
    expiry in the TTL timer: one agent for every output a timer can emit.
    """
    ctx.memory.append("log", ctx.event)
    draft = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    if not ctx.event.startswith(b"approve"):
        return Complete(draft.response)
    return Suspend(prompt=b"approve " + draft.response, timeout_ms=60_000)


async def ask_for_burst(ctx: ActivationContext) -> Complete | Suspend:
    """One model call per activation; a burst holding an b"ask" event asks for approval.

    The resumed run's output names the answer and every event of the burst,
    so a coalesced suspension shows that its events came back with it.
    """
    burst = b"|".join(ctx.events)
    if ctx.answer is not None:
        return Complete(ctx.answer + b":" + burst)
    await ctx.call_model(LlmRequest(model_id="fake-1", messages=[burst.decode()]))
    if any(event.startswith(b"ask") for event in ctx.events):
        return Suspend(prompt=b"approve " + burst, timeout_ms=600_000)
    return Complete(ctx.event)
