"""The triage reference application: one on-call agent per service, on beam-agents.

`python -m app.triage demo` replays the bundled alerts through the streaming
DirectRunner and writes outputs, intents, errors, lifecycle records, a
summary and an HTML report under `out/triage/`. See `app/triage/README.md`.
"""
