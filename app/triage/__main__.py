"""`python -m app.triage COMMAND`: see `app.triage.cli`."""

import sys

from app.triage.cli import main

if __name__ == "__main__":
    sys.exit(main())
