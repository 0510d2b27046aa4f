"""{{ cookiecutter.project_slug }}: an agent that runs inside an Apache Beam pipeline on beam-agents."""
