"""`beam-agents console`: a pipeline's approvals and activity in a browser.

A small ASGI application, rendered on the server, that follows a run's
records as they grow, lists the approvals waiting for a human and writes
their answers to the sink the pipeline reads. Needs the `console` extra
(`pip install 'beam-agents[console]'`); `beam_agents.console.app` holds the
application, `beam_agents.console.serve` the command. Nothing is imported
here, so `beam-agents --help` stays fast without the extra.
"""
