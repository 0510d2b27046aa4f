"""beam_agents.eval: the evaluation harness (candidates, scorers, statistics, report)."""
