"""Fixtures of the triage app tests (helpers live in `triage_replays.py`)."""

from triage_replays import replay_slice

__all__ = ["replay_slice"]
