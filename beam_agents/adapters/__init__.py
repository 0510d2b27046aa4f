"""Adapters: agents written for another framework, run by RunAgent unchanged.

Each adapter lives in its own module and needs its framework's extra
(`beam_agents.adapters.adk` needs `pip install 'beam-agents[adk]'`,
`beam_agents.adapters.langgraph` needs `pip install 'beam-agents[langgraph]'`).
This package imports none of them, so `import beam_agents.adapters` costs nothing.
"""
