"""Fixtures of the triage app tests (helpers live in `triage_replays.py`)."""

from tests.app.triage_replays import replay_slice

__all__ = ["replay_slice"]
