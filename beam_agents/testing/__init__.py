"""Testing aids shipped with beam-agents so users can reuse them.

- `store_conformance`: the contract suite every `MemoryStore` must pass.
- `services`: start real backing servers (Redis, PostgreSQL, the Bigtable
  and Firestore emulators) on free loopback ports for tests.
- `streaming`: `run_script`, RunAgent over a scripted TestStream on the
  streaming DirectRunner (built on `beam_agents.local`, which is what an
  application's own local run uses).
- `chaos`: make an activation's commit fail once, to prove retry determinism.
"""

__all__: list[str] = []
