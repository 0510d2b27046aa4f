"""Testing aids shipped with beam-agents so users can reuse them.

- `store_conformance`: the contract suite every `MemoryStore` must pass.
- `ledger_conformance`: the contract suite every `ToolLedger` must pass.
- `services`: start real backing servers (Redis, PostgreSQL, the Bigtable
  and Firestore emulators) on free loopback ports for tests.
- `streaming`: `run_script`, RunAgent over a scripted TestStream on the
  streaming DirectRunner (built on `beam_agents.local`, which is what an
  application's own local run uses).
- `rate_limited_server`: a chat-completions server on loopback that holds
  requests and tokens per minute as providers do, answering 429 past them.
- `chaos`: make an activation's commit, or an `ExecuteIntents` bundle after its
  tool ran, fail once, to prove retry determinism and once-only execution.
"""

__all__: list[str] = []
