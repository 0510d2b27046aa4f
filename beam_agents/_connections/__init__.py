"""What it takes to name an outside service without leaking its credential.

Models, tools, the long-term stores and telemetry all reach services named
by a URL or a URI, and all of those names are pickled into the job graph:
so all of them follow one rule for credentials in URLs, and all of them
name a secret by where it lives (`env:NAME`, a Secret Manager version,
`secretmanager://`) and read it on the worker. This package is that rule
and those readers, on the ground floor: it imports nothing of beam-agents
but its errors, so every package above can use it without importing
another's internals. What a backend alone understands (the store URI
grammar, say) stays with the backend.
"""
