"""beam-agents: LLM agents as first-class citizens of Apache Beam pipelines.

The public surface grows issue by issue; see DESIGN section 3 for the names
code outside this repository relies on.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
