"""A pipeline built but not run, beside the ADK tools the adapters page names.

`<!-- fragment: adk_graph -->`: the fragment runs inside `beam.Pipeline()`, which is
never run (its Gemini model and PostgreSQL store are services this machine lacks),
with `events` (keyed alerts) and `answers` (approvals) from `beam.Create`, and the
user's own ADK function tools `lookup_runbook` and `page_oncall`.
"""

import os

import apache_beam as beam


def lookup_runbook(service: str) -> str:
    """Find the runbook of a service."""
    return f"https://runbooks.example.com/{service}"


def page_oncall(service: str, reason: str) -> str:
    """Page the on-call engineer of a service."""
    return f"paged the on-call engineer of {service}: {reason}"


# The launcher's environment holds the model's key, as a user's does; the pipeline is
# never run, so the key reaches no server.
os.environ.setdefault("GEMINI_API_KEY", "not-a-key")
p = beam.Pipeline()
events = p | "Events" >> beam.Create([("db-3", b"disk full")])
answers = p | "Answers" >> beam.Create([("db-3", "intent-id", b"approve")])
# <fragment>
