"""The public surface is pinned: names outside this repo rely on it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

PUBLIC = {
    "beam_agents": {
        "ActivationContext",
        "ActivationError",
        "Agent",
        "AgentConfig",
        "Complete",
        "FlushToLongterm",
        "LifecycleEvent",
        "LlmRequest",
        "LlmResponse",
        "RateLimit",
        "RunAgent",
        "Suspend",
        "TelemetryOptions",
        "TokenBudget",
        "Wake",
        "WakeLimitError",
        "__version__",
        "intent_id",
    },
    "beam_agents.runtime": {
        "KINDS",
        "REASONS",
        "ActivationContext",
        "ActivationError",
        "Agent",
        "Complete",
        "LifecycleEvent",
        "RunAgent",
        "RunAgentResult",
        "Suspend",
        "Wake",
        "WakeLimitError",
        "intent_id",
    },
    "beam_agents.memory": {
        "Compactor",
        "CrossEntityRecallNotConfigured",
        "DropOldestCompactor",
        "EmbedderNotConfigured",
        "HARD_CAP_BYTES",
        "LongtermNotConfigured",
        "MAX_RECALL_K",
        "Memory",
        "MemoryOverflow",
        "RecallTooLargeError",
        "Recalled",
        "SOFT_CAP_BYTES",
        "SummarizeCompactor",
    },
    "beam_agents.proto": {"LongTermRecord", "MemoryBlob", "ToolIntent"},
    "beam_agents.memory.stores": {
        "Embedding",
        "InMemoryMemoryStore",
        "InvalidRecordError",
        "InvalidStoreURIError",
        "MemoryRecord",
        "MemoryStore",
        "Neighbour",
        "StoreError",
        "StoreNotProvisionedError",
        "StoreURI",
        "StoreUnavailableError",
        "open_store",
        "parse_store_uri",
        "redact_uri",
    },
    "beam_agents.model": {
        "Embedded",
        "Embedder",
        "EmbedderFactory",
        "FakeEmbedder",
        "FakeLLM",
        "FakeLLMError",
        "GeminiProvider",
        "LlmRequest",
        "LlmResponse",
        "ModelProvider",
        "OpenAICompatibleProvider",
        "OutputInvalid",
        "OutputSchema",
        "ProviderError",
        "ProviderFactory",
        "RateLimit",
        "Rule",
        "STOP_LENGTH",
        "STOP_REFUSED",
        "embedder_from_spec",
        "output_schema",
        "provider_from_spec",
    },
    "beam_agents.tools": {
        "Busy",
        "Claimed",
        "ExecuteIntents",
        "ExecuteIntentsResult",
        "HttpWebhook",
        "InMemoryToolLedger",
        "InvalidIntentIdError",
        "McpTool",
        "McpTools",
        "PubSubPublish",
        "Recorded",
        "ToolCall",
        "ToolCallError",
        "ToolError",
        "ToolFailure",
        "ToolHandler",
        "ToolLedger",
        "ToolResult",
        "UnknownToolError",
        "open_ledger",
    },
    "beam_agents.eval": {
        "Candidate",
        "EvalInputError",
        "EvalResult",
        "FieldMatch",
        "GateError",
        "LlmJudge",
        "RecordingError",
        "Sample",
        "Scorer",
        "TrajectoryMatch",
        "UserScorer",
        "run_eval",
    },
    "beam_agents.adapters.langgraph": {
        "BeamAgentsChatModel",
        "CHECKPOINT_KEY",
        "CheckpointTypeError",
        "GraphAgent",
        "GraphInterruptError",
        "GraphRunError",
        "LangChainToolHandler",
        "NotInActivationError",
        "graph_agent",
        "tool_handlers",
    },
}
OPTIONAL = {"beam_agents.adapters.langgraph": "langgraph"}
"""Modules of an extra: pinned where the extra is installed (CI installs them all)."""


def test_the_documented_import_lines_work() -> None:
    """The import lines users copy from the docs (docs/architecture.md)."""
    from beam_agents import (  # noqa: F401
        ActivationContext,
        ActivationError,
        AgentConfig,
        Complete,
        FlushToLongterm,
        LifecycleEvent,
        LlmRequest,
        LlmResponse,
        RunAgent,
        Suspend,
        intent_id,
    )
    from beam_agents.memory import (  # noqa: F401
        HARD_CAP_BYTES,
        SOFT_CAP_BYTES,
        Compactor,
        DropOldestCompactor,
        LongtermNotConfigured,
        Memory,
        MemoryOverflow,
        SummarizeCompactor,
    )
    from beam_agents.memory.stores import (  # noqa: F401
        InMemoryMemoryStore,
        MemoryRecord,
        MemoryStore,
        open_store,
        parse_store_uri,
    )
    from beam_agents.memory.stores.sql import DDL  # noqa: F401
    from beam_agents.model import (  # noqa: F401
        FakeLLM,
        GeminiProvider,
        OpenAICompatibleProvider,
        provider_from_spec,
    )
    from beam_agents.proto import LongTermRecord, MemoryBlob, ToolIntent  # noqa: F401


ACTIVATION_CONTEXT = {
    "answer",
    "call_model",
    "call_tool",
    "embed_texts",
    "emit_intent",
    "entity_key",
    "event",
    "event_id",
    "events",
    "memory",
    "now_ms",
    "schedule",
    "cancel",
    "seq",
    "tool_names",
    "wake",
}
"""What an agent sees of its activation; the runtime's bookkeeping is not on it."""


def test_the_activation_context_offers_an_agent_only_its_documented_members() -> None:
    from beam_agents import ActivationContext

    members = {name for name in dir(ActivationContext) if not name.startswith("_")}
    assert members == ACTIVATION_CONTEXT
    table = (Path(__file__).parents[1] / "docs" / "runtime.md").read_text()
    undocumented = {
        name for name in members if f"`{name}" not in table and f" {name}(" not in table
    }
    assert not undocumented, f"docs/runtime.md's table misses {sorted(undocumented)}"


@pytest.mark.parametrize(
    "member", ["entity_key", "event", "events", "seq", "now_ms", "memory", "answer", "wake"]
)
def test_an_agent_cannot_rebind_what_its_context_holds(member: str) -> None:
    from beam_agents import ActivationContext

    assert isinstance(getattr(ActivationContext, member), property)
    assert getattr(ActivationContext, member).fset is None


def test_an_agent_is_the_type_adapters_build_and_runagent_takes() -> None:
    import typing

    from beam_agents import ActivationContext, Agent, Complete, Suspend

    params, result = typing.get_args(Agent)
    assert params == [ActivationContext]
    assert typing.get_args(result)[2] == Complete | Suspend


@pytest.mark.parametrize("module_name", sorted(PUBLIC))
def test_package_exports_exactly_its_documented_names(module_name: str) -> None:
    if module_name in OPTIONAL:
        pytest.importorskip(OPTIONAL[module_name])
    module = importlib.import_module(module_name)

    assert set(module.__all__) == PUBLIC[module_name]
    for name in module.__all__:
        assert getattr(module, name) is not None


def test_model_requests_and_answers_are_one_class_wherever_imported() -> None:
    """`beam_agents.model` is their home; the top-level names are the same objects."""
    import beam_agents
    import beam_agents.model

    assert beam_agents.LlmRequest is beam_agents.model.LlmRequest
    assert beam_agents.LlmResponse is beam_agents.model.LlmResponse


def test_caps_have_the_documented_values() -> None:
    from beam_agents.memory import HARD_CAP_BYTES, SOFT_CAP_BYTES

    assert HARD_CAP_BYTES == 1_048_576
    assert SOFT_CAP_BYTES == 786_432 == HARD_CAP_BYTES * 3 // 4


def test_the_app_and_the_template_import_no_test_helpers_and_no_private_module() -> None:
    """They are what users copy: only what the package offers its users may appear there."""
    import re
    from pathlib import Path

    root = Path(__file__).parents[1]
    imports = re.compile(r"^\s*(?:from|import)\s+(beam_agents[\w.]*)", re.M)
    found = {
        f"{path.relative_to(root)}: {module}"
        for tree in ("app", "template")
        for path in (root / tree).rglob("*.py")
        for module in imports.findall(path.read_text(encoding="utf-8"))
        if module.startswith("beam_agents.testing")
        or any(part.startswith("_") for part in module.split("."))
    }
    assert not found, sorted(found)
