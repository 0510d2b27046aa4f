"""What recall costs an activation: saving with text and recalling, against saving and a chat call.

Both agents run through RunAgent's element path (`AgentDoFn.process`, with
in-memory cells standing in for the runner's state, as bench_activation.py
measures overhead), one event per activation over 64 keys, on a `memory://`
store. The recalling agent saves each event with `text=` and recalls the
three most similar of its key's records; the baseline saves the same row
without a text and makes one chat call (a `FakeLLM` answering at once),
since an embedding is a model call and recall's cost is best read against
one. The embedder is the `FakeEmbedder` at 384 dimensions (the width of the
local MiniLM model) answering at once, so what is measured is the runtime's
own cost of an embedding (the replay-cached model call, the vector in the
envelope, the exact scoring), not a model's latency, which a real embedder
adds and parking overlaps. Reported: wall time per activation for each,
their ratio, embedding calls per activation, and the bytes a vector adds to
a row. Runs are interleaved and medians reported: the machine is shared.
The figure is reported, not held to a target: it includes the fake's own
hashing, and a real embedder's latency (milliseconds, hosted or local)
dwarfs it; bench_recall.py holds recall's scan to its target.

    python benchmarks/bench_embedding.py          # full run (make bench)
    python benchmarks/bench_embedding.py --quick  # one short pass (the tests)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from bench_activation import element_path_ms

from beam_agents import ActivationContext, AgentConfig, Complete, LlmRequest
from beam_agents.memory.stores import open_store
from beam_agents.model import FakeEmbedder, FakeLLM

DIMENSIONS = 384


async def save_and_ask(ctx: ActivationContext) -> Complete:
    ctx.memory.longterm.save(f"incident/{ctx.seq:05d}", ctx.event)
    response = await ctx.call_model(LlmRequest(model_id="fake-1", messages=[ctx.event.decode()]))
    return Complete(response.response)


async def save_and_recall(ctx: ActivationContext) -> Complete:
    text = f"{ctx.event.decode()} number {ctx.seq}"
    ctx.memory.longterm.save(f"incident/{ctx.seq:05d}", ctx.event, text=text)
    hits = await ctx.memory.longterm.recall(text, k=3, prefix="incident/")
    return Complete(b",".join(hit.key.encode() for hit in hits))


def _measure(recall: bool, events: int) -> tuple[float, int, int]:
    """Median ms per activation, embedding calls, and one row's stored bytes."""
    name = f"bench-embed-{uuid.uuid4().hex}"
    embedder = FakeEmbedder(dimensions=DIMENSIONS, name=name)
    config = AgentConfig(
        longterm_memory=f"memory://{name}",
        embedder=embedder if recall else None,
        provider_factory=None if recall else FakeLLM(name=name),
        max_inflight_calls=1,
    )
    samples = element_path_ms(save_and_recall if recall else save_and_ask, config, events)
    record = asyncio.run(open_store(f"memory://{name}").load(b"entity-0", "incident/00001"))
    assert record is not None
    size = len(record.value) + (len(record.embedding.vector) if record.embedding else 0)
    return statistics.median(samples), embedder.call_count(), size


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one short pass, for the tests")
    args = parser.parse_args(argv)
    events = 300 if args.quick else 5_000
    runs = 1 if args.quick else 3
    print(
        "target: none (reported): what saving with text and recalling costs an activation, "
        "beside saving plainly and one chat call (same events, same store)"
    )
    plain: list[float] = []
    recalling: list[float] = []
    calls = row_plain = row_embedded = 0
    for _ in range(runs):
        per, _, row_plain = _measure(False, events)
        plain.append(per)
        per, calls, row_embedded = _measure(True, events)
        recalling.append(per)
    plain_ms = statistics.median(plain)
    recall_ms = statistics.median(recalling)
    print(f"events: {events} over 64 keys, {runs} interleaved run(s), medians")
    print(f"save + one chat call: {plain_ms:.3f} ms per activation")
    print(f"save(text=) + recall: {recall_ms:.3f} ms per activation")
    print(f"ratio: {recall_ms / plain_ms:.2f}x, {recall_ms - plain_ms:.3f} ms more")
    print(f"embedding calls per activation: {calls / events:.2f}")
    print(f"row bytes: {row_plain} plain, {row_embedded} with a {DIMENSIONS}-dim vector")


if __name__ == "__main__":
    main()
