"""Generate incident_history.jsonl: services' incident histories and their recurrences.

The second recall-quality set, shaped like the triage agent's own recall:
each record is a past incident of one service, as an alert told it, and
each query is a later alert about the same kind of trouble on the same
service, from the same cause, worded by someone else. Ten services, each
with a history of 24 incidents: every one of the twelve failures twice,
from two different causes. So within a service every failure has a twin
that differs only by its cause, and across services every (failure,
cause) pair recurs under another service's name.

How it is worded, fixed before it was first scored:

- the failure sentences are the first set's (`make_incident_paraphrases`),
  unchanged: an original uses one of a failure's own sentences, the query
  one of its reworded ones;
- the cause is one of eight operational causes (a deploy, a traffic peak,
  a config change, ...), told in the original by one wording and in the
  query by another that shares no content word with any original wording;
- the service is named as an alert names it, under one of its own names in
  both, drawn independently (the first set's `paraphrase_named`);
- no region or impact: the triage app's alerts carry neither.

Scored as the first set is: every query over all 240 records (not only its
own service's), exact cosine, recall@5; the per-service figure is reported
beside it. Seeded: `python -m tests.data.make_incident_history` rewrites the
file byte for byte, and a test checks the file is what this script makes.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Final

from tests.data.make_incident_paraphrases import FAILURES, SERVICES, cap, jsonl

SEED: Final = 20261203
SERVICE_COUNT: Final = 10
CAUSES_PER_FAILURE: Final = 2
OUTPUT: Final = Path(__file__).with_name("incident_history.jsonl")

# Each cause: how an original words it, and how a later alert might.
CAUSES: Final[dict[str, tuple[list[str], list[str]]]] = {
    "deploy": (
        ["after the 14:00 deploy", "following the latest deployment"],
        ["once the new build went out", "right after we shipped a release"],
    ),
    "traffic-peak": (
        ["during the evening traffic peak", "under Black Friday load"],
        [
            "while visitor numbers were at their highest",
            "when the seasonal sale drew record shoppers",
        ],
    ),
    "config-change": (
        ["after a configuration change", "after someone edited the config map"],
        ["once a settings tweak was applied", "right after new parameters were pushed"],
    ),
    "dependency-down": (
        ["while an upstream dependency was down", "during the upstream provider outage"],
        ["because a service it relies on had failed", "as a vendor it calls was unavailable"],
    ),
    "node-upgrade": (
        ["after the Kubernetes node upgrade", "during node pool maintenance"],
        [
            "once the cluster machines were patched to a newer version",
            "while the hosts were being replaced for patching",
        ],
    ),
    "data-growth": (
        ["as the table grew past 2 billion rows", "due to steady data growth"],
        [
            "because the amount of stored records keeps climbing",
            "since the dataset has become enormous",
        ],
    ),
    "batch-job": (
        ["when the nightly cron job ran", "during the 02:00 batch job"],
        [
            "while the scheduled overnight task was running",
            "as the midnight housekeeping script kicked off",
        ],
    ),
    "network": (
        ["during a network partition between zones", "while packet loss hit the zone"],
        [
            "when the data centres could not talk to each other",
            "as connectivity between availability areas dropped",
        ],
    ),
}

ORIGINAL_FORMS: Final = (
    "{failure} {cause}.",
    "ALERT: {failure} {cause}.",
    "{cause_cap}, {failure}.",
)
RECURRENCE_FORMS: Final = (
    "{failure_cap} {cause}.",
    "We are seeing that {failure} {cause}.",
    "{cause_cap}, {failure}.",
    "Looks like {failure} {cause}.",
)


def _told(rng: random.Random, forms: tuple[str, ...], failure: str, cause: str) -> str:
    form = rng.choice(forms)
    return form.format(failure=failure, failure_cap=cap(failure), cause=cause, cause_cap=cap(cause))


def incidents() -> list[dict[str, str]]:
    """The incidents, service by service; each failure twice per service, from two causes."""
    rng = random.Random(SEED)
    services = rng.sample(sorted(SERVICES), SERVICE_COUNT)
    rows = []
    for service in services:
        own_names = SERVICES[service][0]
        for failure in sorted(FAILURES):
            own_failure, other_failure = FAILURES[failure]
            for cause in rng.sample(sorted(CAUSES), CAUSES_PER_FAILURE):
                own_cause, other_cause = CAUSES[cause]
                original = _told(
                    rng,
                    ORIGINAL_FORMS,
                    rng.choice(own_failure).format(s=rng.choice(own_names)),
                    rng.choice(own_cause),
                )
                recurrence = _told(
                    rng,
                    RECURRENCE_FORMS,
                    rng.choice(other_failure).format(s=rng.choice(own_names)),
                    rng.choice(other_cause),
                )
                rows.append(
                    {
                        "id": f"hist-{len(rows):03d}",
                        "service": service,
                        "failure": failure,
                        "cause": cause,
                        "original": cap(original),
                        "recurrence": cap(recurrence),
                    }
                )
    return rows


def render() -> bytes:
    """The file's bytes: one JSON object per line, keys sorted."""
    return jsonl(incidents())


if __name__ == "__main__":
    OUTPUT.write_bytes(render())
