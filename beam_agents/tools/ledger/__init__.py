"""The tool ledger: claims with leases and recorded results, on every store backend."""

from beam_agents.tools.ledger.base import (
    Busy,
    Claimed,
    ClaimOutcome,
    Recorded,
    ToolLedger,
)
from beam_agents.tools.ledger.factory import open_ledger

__all__ = ["Busy", "ClaimOutcome", "Claimed", "Recorded", "ToolLedger", "open_ledger"]
