"""`python -m beam_agents.cli`: the `beam-agents` command, where its script is not on PATH."""

import sys

from beam_agents.cli import main

sys.exit(main())
