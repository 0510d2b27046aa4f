"""Adapters: agents written with another framework, run by the beam-agents runtime.

Each adapter lives in its own module and needs its framework's extra
(`pip install 'beam-agents[langgraph]'`); importing this package imports
no framework.
"""
