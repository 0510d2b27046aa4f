"""An input declared as (bytes, bytes) skips the normalization step and behaves the same."""

from __future__ import annotations

import apache_beam as beam
from apache_beam import typehints
from apache_beam.testing.util import assert_that, equal_to

from beam_agents import ActivationContext, AgentConfig, Complete, RunAgent

EVENTS = [(b"k1", b"a"), (b"k2", b"b"), (b"k1", b"c")]


async def shout(ctx: ActivationContext) -> Complete:
    return Complete(ctx.entity_key + b":" + ctx.event.upper())


def _labels(pipeline: beam.Pipeline) -> set[str]:
    proto = pipeline.to_runner_api()
    return {t.unique_name for t in proto.components.transforms.values()}


def _run(typed: bool) -> set[str]:
    with beam.Pipeline(runner="DirectRunner") as pipeline:
        # beam.Create infers Tuple[bytes, bytes] from these values; Any hides it.
        hint = typehints.Tuple[bytes, bytes] if typed else typehints.Any
        events = pipeline | beam.Create(EVENTS).with_output_types(hint)
        result = events | RunAgent(shout, AgentConfig())
        expected = [(b"k1", b"k1:A"), (b"k2", b"k2:B"), (b"k1", b"k1:C")]
        assert_that(result.outputs, equal_to(expected))
        assert_that(result.errors, equal_to([]), label="NoErrors")
        labels = _labels(pipeline)
    return labels


def test_a_declared_bytes_pair_input_skips_normalization_with_the_same_outputs() -> None:
    typed = _run(typed=True)
    untyped = _run(typed=False)
    assert not any("NormalizeEvents" in label for label in typed)
    assert any("NormalizeEvents" in label for label in untyped)
