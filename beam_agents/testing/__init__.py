"""Testing aids shipped with beam-agents so users can reuse them.

- `store_conformance`: the contract suite every `MemoryStore` must pass.
- `services`: start real backing servers (Redis, PostgreSQL, the Bigtable
  and Firestore emulators) on free loopback ports for tests.
- `direct_metrics`: Beam counters that survive a long streaming DirectRunner
  run (local replays that report metrics, like the triage demo).
- `chaos`: make an activation's commit fail once, to prove retry determinism.
"""

__all__: list[str] = []
