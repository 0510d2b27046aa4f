"""Generate incident_paraphrases.jsonl: incidents, each told twice in different words.

The recall-quality test embeds every `original`, then asks with each
`paraphrase` and expects its own original near the top. Each incident is
one (service, failure) pair with a region and an impact; the original and
the paraphrase describe the same facts with independently chosen wording:
another name for the service, another way of saying the failure, the
region and the impact phrased differently. Every service appears with
several failures and every failure with many services, so a query must
match both to find its original.

Seeded: `python tests/data/make_incident_paraphrases.py` rewrites the file
byte for byte, and the test checks the file is what this script makes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Final

SEED: Final = 20261202
COUNT: Final = 220
OUTPUT: Final = Path(__file__).with_name("incident_paraphrases.jsonl")

# Each service: how an original names it, and how a paraphrase might.
SERVICES: Final[dict[str, tuple[list[str], list[str]]]] = {
    "payments-api": (
        ["payments API", "payments-api service"],
        ["the API that processes card payments", "payment processing endpoint"],
    ),
    "checkout": (
        ["checkout service", "checkout backend"],
        ["the service behind the cart purchase flow", "purchase flow backend"],
    ),
    "auth": (
        ["auth service", "authentication service"],
        ["the login and token issuing service", "sign-in backend"],
    ),
    "search-indexer": (
        ["search indexer", "search-indexer job"],
        ["the job that builds the product search index", "indexing pipeline for search"],
    ),
    "billing-worker": (
        ["billing worker", "invoice billing worker"],
        ["the background job that generates invoices", "invoicing batch processor"],
    ),
    "notifications": (
        ["notification service", "notifications backend"],
        ["the service that sends user alerts", "alert delivery system for users"],
    ),
    "inventory-db": (
        ["inventory database", "inventory Postgres cluster"],
        ["the stock levels datastore", "database that tracks warehouse stock"],
    ),
    "profile-cache": (
        ["user profile cache", "profile Redis cache"],
        ["the in-memory store of account profiles", "caching layer for user accounts"],
    ),
    "cdn-edge": (
        ["CDN edge", "edge CDN nodes"],
        ["the content delivery edge servers", "static asset edge network"],
    ),
    "order-consumer": (
        ["order queue consumer", "orders Kafka consumer"],
        ["the worker reading new orders off the message queue", "order event processor"],
    ),
    "recommendations": (
        ["recommendation engine", "recommendations service"],
        ["the service suggesting products to shoppers", "personalised suggestions backend"],
    ),
    "image-resizer": (
        ["image resizer", "thumbnail resizer"],
        ["the service generating product thumbnails", "picture scaling service"],
    ),
    "warehouse": (
        ["reporting warehouse", "analytics data warehouse"],
        ["the BI reporting database", "store used for business dashboards"],
    ),
    "email-gateway": (
        ["email gateway", "SMTP relay"],
        ["the outbound mail relay", "system that delivers transactional emails"],
    ),
    "session-store": (
        ["session store", "web session store"],
        ["the datastore holding logged-in sessions", "storage for browser sessions"],
    ),
    "feature-flags": (
        ["feature flag service", "feature-flags API"],
        ["the toggle configuration service", "service serving rollout switches"],
    ),
    "shipping-tracker": (
        ["shipping tracker", "shipment tracking service"],
        ["the parcel status lookup service", "delivery tracking backend"],
    ),
    "log-pipeline": (
        ["log pipeline", "log shipping pipeline"],
        ["the system forwarding application logs", "log ingestion path"],
    ),
    "push-gateway": (
        ["mobile push gateway", "push notification gateway"],
        ["the service delivering phone notifications", "app push delivery service"],
    ),
    "dns": (
        ["internal DNS resolver", "DNS resolvers"],
        ["the name resolution servers", "hostname lookup service"],
    ),
}

# Each failure: sentences of an original and of a paraphrase; {s} is the service.
FAILURES: Final[dict[str, tuple[list[str], list[str]]]] = {
    "disk-full": (
        ["{s} ran out of disk space", "disk full on the {s} hosts"],
        ["no free storage left on the machines running {s}", "{s} volumes hit 100% capacity"],
    ),
    "oom": (
        ["{s} pods OOMKilled", "{s} out of memory and crashing"],
        [
            "the kernel keeps killing {s} processes for exhausting RAM",
            "{s} exceeds its memory limit and gets terminated",
        ],
    ),
    "cert-expired": (
        ["TLS certificate expired on {s}", "{s} serving an expired SSL certificate"],
        [
            "clients reject the handshake with {s} because its cert lapsed",
            "the HTTPS certificate of {s} is past its validity date",
        ],
    ),
    "latency": (
        ["p99 latency of {s} above 3 seconds", "{s} latency spike"],
        ["{s} has become very slow to respond", "requests to {s} take several seconds"],
    ),
    "errors-5xx": (
        ["{s} returning HTTP 500 errors", "5xx error rate spiking on {s}"],
        [
            "{s} answers most calls with internal server errors",
            "lots of server-side failures from {s}",
        ],
    ),
    "pool-exhausted": (
        ["{s} database connection pool exhausted", "{s} cannot get a DB connection"],
        [
            "all database connections of {s} are in use and new queries wait",
            "{s} has no free connections left to its database",
        ],
    ),
    "crash-loop": (
        ["{s} in CrashLoopBackOff after the deploy", "{s} crash looping since the release"],
        [
            "{s} keeps restarting ever since the latest rollout",
            "the new version of {s} dies on startup over and over",
        ],
    ),
    "dns-failure": (
        ["{s} fails to resolve upstream hostnames", "DNS lookups failing from {s}"],
        [
            "{s} cannot turn dependency names into addresses",
            "name resolution errors when {s} calls its dependencies",
        ],
    ),
    "replication-lag": (
        ["replication lag on {s} replicas over 10 minutes", "{s} read replicas lagging"],
        [
            "the secondaries of {s} are far behind the primary",
            "{s} followers serve stale data, minutes behind",
        ],
    ),
    "backlog": (
        ["message backlog growing for {s}", "{s} queue depth rising"],
        [
            "{s} is falling behind and unprocessed messages pile up",
            "work waiting for {s} keeps accumulating",
        ],
    ),
    "rate-limited": (
        ["{s} rate limited by upstream provider (HTTP 429)", "{s} hitting upstream 429s"],
        [
            "the third-party API throttles calls from {s}",
            "{s} gets too-many-requests responses from its vendor",
        ],
    ),
    "cpu-saturation": (
        ["CPU saturated on {s} nodes", "{s} at 100% CPU"],
        [
            "the processors behind {s} are maxed out",
            "{s} machines have no compute headroom left",
        ],
    ),
}

# Each region: how an original writes it, and how a paraphrase might.
REGIONS: Final[dict[str, tuple[list[str], list[str]]]] = {
    "us-east-1": (["in us-east-1"], ["in the US East region", "in our Virginia region"]),
    "eu-west-1": (["in eu-west-1"], ["in the Ireland region", "in the European region"]),
    "ap-south-1": (["in ap-south-1"], ["in the Mumbai region", "in the India region"]),
    "us-west-2": (["in us-west-2"], ["in the Oregon region", "in the US West region"]),
    "all": (["in all regions", "globally"], ["everywhere", "across every region"]),
}

# Each impact: how an original states it, and how a paraphrase might.
IMPACTS: Final[dict[str, tuple[list[str], list[str]]]] = {
    "customers": (
        ["customers affected", "customer-facing impact"],
        ["users notice the problem", "shoppers are impacted"],
    ),
    "internal": (
        ["internal only, no customer impact", "impact limited to internal tools"],
        ["only staff systems are affected", "customers do not see it"],
    ),
    "degraded": (
        ["degraded service", "partial outage"],
        ["some requests still succeed", "the service works only intermittently"],
    ),
    "down": (["full outage", "service down"], ["nothing works at all", "completely unavailable"]),
}

ORIGINAL_FORMS: Final = (
    "{failure} {region}; {impact}.",
    "ALERT: {failure} {region} ({impact}).",
    "{failure} {region}. Impact: {impact}.",
)
PARAPHRASE_FORMS: Final = (
    "{impact_cap}: {failure} {region}.",
    "Since this morning {failure} {region}, and {impact}.",
    "We are seeing that {failure} {region}; {impact}.",
    "{region_cap}, {failure}. {impact_cap}.",
)


def _sentence(rng: random.Random, forms: list[str], service: str) -> str:
    return rng.choice(forms).format(s=service)


def cap(text: str) -> str:
    """`text` with its first letter upper-cased (str.capitalize lowers the rest)."""
    return text[:1].upper() + text[1:]


def incidents() -> list[dict[str, str]]:
    """The incidents, in a seeded order: unique (service, failure) pairs."""
    rng = random.Random(SEED)
    named_rng = random.Random(SEED + 1)
    pairs = [(service, failure) for service in SERVICES for failure in FAILURES]
    chosen = rng.sample(pairs, COUNT)
    rows = []
    for number, (service, failure) in enumerate(chosen):
        region = rng.choice(sorted(REGIONS))
        impact = rng.choice(sorted(IMPACTS))
        own_names, other_names = SERVICES[service]
        own_failure, other_failure = FAILURES[failure]
        own_region, other_region = REGIONS[region]
        own_impact, other_impact = IMPACTS[impact]
        original = rng.choice(ORIGINAL_FORMS).format(
            failure=cap(_sentence(rng, own_failure, rng.choice(own_names))),
            region=rng.choice(own_region),
            impact=rng.choice(own_impact),
        )
        paraphrase_impact = rng.choice(other_impact)
        paraphrase_region = rng.choice(other_region)
        form = rng.choice(PARAPHRASE_FORMS)
        other_name = rng.choice(other_names)
        sentence = rng.choice(other_failure)
        wording = {
            "region": paraphrase_region,
            "region_cap": cap(paraphrase_region),
            "impact": paraphrase_impact,
            "impact_cap": cap(paraphrase_impact),
        }
        paraphrase = form.format(failure=sentence.format(s=other_name), **wording)
        # The same words about the same incident, the service under its own name
        # (as an alert names it); drawn apart, so `paraphrase` stays as it was.
        named = form.format(failure=sentence.format(s=named_rng.choice(own_names)), **wording)
        rows.append(
            {
                "id": f"inc-{number:03d}",
                "service": service,
                "failure": failure,
                "region": region,
                "impact": impact,
                "original": original,
                "paraphrase": paraphrase,
                "paraphrase_named": named,
            }
        )
    return rows


def jsonl(rows: list[dict[str, str]]) -> bytes:
    """A data file's bytes: one JSON object per line, keys sorted."""
    lines = [json.dumps(row, sort_keys=True, ensure_ascii=False) for row in rows]
    return ("\n".join(lines) + "\n").encode("utf-8")


def render() -> bytes:
    """The file's bytes."""
    return jsonl(incidents())


if __name__ == "__main__":
    OUTPUT.write_bytes(render())
