"""The bundled demo data: twelve hours of alerts for 150 services, and the humans' answers.

`python -m app.triage generate` writes `data/alerts.jsonl` and
`data/answers.jsonl`; the output is a pure function of this module (a fixed
seed, fixed start time, canonical JSON), so it regenerates byte for byte and
the demo never draws anything at random.

The shape is chosen so every part of the runtime shows up:

- most services alert in bursts separated by idle gaps of 45 minutes or
  more, so the 30-minute TTL expires them, `on_expire` flushes their working
  memory, and their next burst rehydrates `profile` from long-term memory;
- `svc-042` is noisy: an alert nearly every minute for eleven hours, mostly
  replication lag that opens tickets, so its working memory grows past the
  soft cap (tier-1 compaction) and the summarizer folds its ring (tier 2);
- P1 alerts ask for approval: about half are approved, a quarter denied and
  a quarter never answered (they time out and are escalated); alerts that
  arrive while a P1 waits are held by the suspension buffer;
- two services repeat their history, for recall: `svc-004`'s error-rate
  spike, which the on-call denied paging for as a known flap, comes back
  twice after its working memory expired (recalled, it is downgraded to P3),
  and `svc-005`'s replication lag, which the on-call named as the cause of
  its outage, comes back hours later (recalled, it is escalated to P1).
  `data/labels.jsonl` labels those alerts with the class their message
  alone gives and the class history should give them.

Answers are keyed by the approval intent's id, `beam_agents.intent_id(service,
seq, 0)`, where `seq` is the alert's activation seq: every alert is one
activation, and so is every recheck of a page or a ticket that runs before
it (`app.triage.follow_ups`), and the approval is the activation's first
intent. The generator counts the rechecks as the agent's rule and the
replay's one-minute steps make them run (`activation_seqs`), as the triage
with recall triages (it settles the same cases as without, on this data: a
test checks it). Timing keeps the replay unambiguous: a service has at most
one alert per minute, an answer never shares a minute with its service's
alerts, and nothing of a service lands within a minute of its suspension
deadline.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from app.triage.agent import APPROVAL_TIMEOUT_MS, RECHECK_AFTER_MS
from app.triage.alerts import Alert, Answer, canonical_json
from app.triage.follow_ups import FOLLOWED_UP
from app.triage.model import CAUSE_MARK, FLAP_MARK, classify
from beam_agents import intent_id

__all__ = [
    "DATA_DIR",
    "DURATION_MS",
    "FLAPPING_SERVICE",
    "NOISY_SERVICE",
    "RECURRING_OUTAGE_SERVICE",
    "SERVICES",
    "START_MS",
    "Label",
    "activation_seqs",
    "generate",
    "generate_labels",
    "read_labels",
    "service_name",
    "write_data",
]

DATA_DIR = Path(__file__).parent / "data"
START_MS = 1_796_025_600_000  # 2026-11-30T08:00:00Z
DURATION_MS = 12 * 3_600_000
SERVICES = 150
NOISY_SERVICE = "svc-042"
FLAPPING_SERVICE = "svc-004"
RECURRING_OUTAGE_SERVICE = "svc-005"
_SEED = 13
_MINUTE = 60_000
_LAST_MINUTE = DURATION_MS // _MINUTE - 1
_APPROVAL_MINUTES = APPROVAL_TIMEOUT_MS // _MINUTE

_NAMES = (
    "checkout", "payments", "search", "auth", "ledger", "inventory", "shipping", "catalog",
    "billing", "profile", "orders", "pricing", "reviews", "media", "notify", "gateway",
    "sessions", "reports", "ingest", "export", "fraud", "loyalty", "tax", "identity", "geo",
)  # fmt: skip
_ROLES = ("api", "worker", "db")

_TEMPLATES: dict[str, tuple[str, ...]] = {
    "P1": (
        "primary database unreachable from {n} app hosts",
        "full outage: health checks failing in {z} of 3 zones",
        "error rate {p}% on public endpoints (5xx)",
        "data loss suspected: {n} writes not acknowledged",
        "TLS certificate expired on ingress-{z}",
    ),
    "P2": (
        "p99 latency {ms} ms above the 800 ms SLO",
        "disk usage {p}% on /var/lib/data",
        "replication lag {s}s on shard {z}",
        "queue backlog {n}k messages",
        "pod crash-looping, {z} restarts in 10m",
    ),
    "P3": (
        "cpu at {p}% for 10m",
        "memory at {p}% of limit",
        "deprecated TLS 1.0 client seen ({n} requests)",
        "slow query {ms} ms on the orders table",
        "cache hit ratio down to {p}%",
    ),
    "noise": (
        "heartbeat ok",
        "deploy v{n} finished",
        "autoscaler added {z} instances",
        "config reloaded",
        "synthetic check flapped once, recovered",
    ),
}
_HINTS = {"P1": "critical", "P2": "warning", "P3": "warning", "noise": "info"}
_MIX = (("P1", 0.02), ("P2", 0.25), ("P3", 0.33), ("noise", 0.40))
_NOISY_MIX = (("P2", 0.80), ("P3", 0.12), ("noise", 0.08))
_ANSWERS = (("approve", 0.5), ("deny", 0.25), (None, 0.25))


def service_name(index: int) -> str:
    """The human name of service `index` (its key is `svc-NNN`)."""
    return f"{_NAMES[index % len(_NAMES)]}-{_ROLES[index // len(_NAMES) % len(_ROLES)]}"


def _pick(rng: random.Random, weights: tuple[tuple[str | None, float], ...]) -> str | None:
    roll = rng.random()
    for value, weight in weights:
        roll -= weight
        if roll < 0:
            return value
    return weights[-1][0]


@dataclass(frozen=True, slots=True)
class Label:
    """What an alert whose history matters should become: the data's answer key for recall."""

    alert_id: str
    service: str
    scenario: str
    """`flap_repeat` (downgraded) or `outage_recurrence` (escalated)."""
    message_class: str
    """The class the alert's message alone gives (no recall)."""
    expected_class: str
    """The class recalling the service's past incidents should give."""

    def to_bytes(self) -> bytes:
        return canonical_json(asdict(self))


def read_labels(path: Path) -> list[Label]:
    """Every label of a `labels.jsonl` file, in file order."""
    lines = path.read_bytes().splitlines()
    return [Label(**json.loads(line)) for line in lines if line.strip()]


def _outcome(triaged: str, answer: str | None) -> str | None:
    """What the agent decides for an alert triaged `triaged`; None for a P1 nobody answers."""
    if triaged == "P1":
        if answer is None:
            return None  # it times out: its activation commits nothing
        return "paged" if answer.lower().startswith("approve") else "denied"
    return "ticket" if triaged == "P2" else "remembered"


@dataclass
class _Activations:
    """A service's activations in the order a replay runs them, its rechecks among them.

    A recheck runs before an alert when it is due by the start of the
    alert's minute: the replay moves the watermark to each one-minute step's
    start before the step's events. An alert that commits before it settles
    it (`app.triage.follow_ups`); a P1 nobody answers commits nothing.
    """

    recall: bool = True
    """Whether the triage recalls history: it decides the labelled recurrences' class."""
    count: int = 0
    due: list[int] = field(default_factory=list)

    def next_seq(self, time_ms: int) -> int:
        """The seq of an alert at `time_ms`, after the rechecks due before its step."""
        step = time_ms - time_ms % _MINUTE
        ran = sum(1 for d in self.due if d <= step)
        self.due = [d for d in self.due if d > step]
        self.count += ran + 1
        return self.count

    def decided(self, time_ms: int, outcome: str | None) -> None:
        """The alert's outcome committed (None: nothing did): settle, and maybe follow up."""
        if outcome is None:
            return
        self.due.clear()
        if outcome in FOLLOWED_UP:
            self.due.append(time_ms + RECHECK_AFTER_MS)


@dataclass
class _Service:
    """One service's timeline, built minute by minute."""

    index: int
    rng: random.Random
    runs: _Activations = field(default_factory=_Activations)
    seqs: dict[str, int] = field(default_factory=dict)
    """Each alert's activation seq, by alert id."""
    alerts: list[Alert] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    taken: set[int] = field(default_factory=set)
    blocked: set[int] = field(default_factory=set)
    labels: list[Label] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"svc-{self.index:03d}"

    def free(self, minute: int) -> int:
        """The first minute at or after `minute` nothing of this service occupies."""
        while minute in self.taken or minute in self.blocked:
            minute += 1
        return minute

    def alert(
        self,
        minute: int,
        label: str,
        answer: str | None = "auto",
        *,
        template: str | None = None,
        asks: bool | None = None,
        triaged: str | None = None,
    ) -> int:
        """Place one alert of class `label`; returns the minute it took.

        `template` fixes the message's template (else one of the class's);
        `asks` whether the alert asks for approval (default: a P1 does);
        `triaged` the class the agent gives it (default `label`).
        """
        minute = self.free(minute)
        rng = self.rng
        template = template or rng.choice(_TEMPLATES[label])
        text = template.format(
            n=rng.randint(2, 90), z=rng.randint(1, 3), p=rng.randint(61, 99),
            ms=rng.randint(900, 4000), s=rng.randint(30, 600),
        )  # fmt: skip
        message = f"{service_name(self.index)}: {text}"
        assert classify(message)[0] == label, message  # the model's rules and the data agree
        hint = _HINTS[label] if rng.random() > 0.1 else rng.choice(("critical", "warning", "info"))
        seq = len(self.alerts) + 1
        time_ms = START_MS + minute * _MINUTE + rng.randint(0, 59) * 1000
        self.alerts.append(
            Alert(
                service=self.key,
                alert_id=f"{self.key}-{seq:04d}",
                severity_hint=hint,
                message=message,
                event_time_ms=time_ms,
            )
        )
        self.taken.add(minute)
        run_seq = self.seqs[self.alerts[-1].alert_id] = self.runs.next_seq(time_ms)
        answered = None
        if asks if asks is not None else label == "P1":
            answered = self._approval(minute, run_seq, answer)
        self.runs.decided(time_ms, _outcome(triaged or label, answered))
        return minute

    def recurrence(
        self, minute: int, label: str, template: str, scenario: str, expected: str
    ) -> int:
        """A labelled alert whose history should change its class from `label` to `expected`.

        Its approval deadline is kept clear either way, so a replay with
        recall off (where a P1 by its message asks) stays unambiguous too.
        """
        answer = "approve" if expected == "P1" else None
        triaged = expected if self.runs.recall else label
        minute = self.alert(
            minute, label, answer, template=template, asks=expected == "P1", triaged=triaged
        )
        deadline = minute + _APPROVAL_MINUTES
        self.blocked.update(range(deadline - 1, deadline + 2))
        alert = self.alerts[-1]
        self.labels.append(Label(alert.alert_id, self.key, scenario, label, expected))
        return minute

    def _approval(self, minute: int, seq: int, answer: str | None) -> str | None:
        """Place the answer to the approval of activation `seq`; returns it (None: unanswered)."""
        if answer == "auto":
            answer = _pick(self.rng, _ANSWERS)
        # A deadline is never ambiguous: nothing of this service within a minute of it.
        deadline = minute + _APPROVAL_MINUTES
        self.blocked.update(range(deadline - 1, deadline + 2))
        if answer is None:
            return None
        at = self.free(minute + self.rng.randint(3, 8))
        self.blocked.add(at)
        note = answer if " " in answer else f"{answer} (on-call lead)"
        self.answers.append(
            Answer(
                service=self.key,
                intent_id=intent_id(self.key.encode(), seq, 0),
                answer=note,
                event_time_ms=START_MS + at * _MINUTE + self.rng.randint(0, 59) * 1000,
            )
        )
        return note

    def burst(self, start: int, count: int, spacing: tuple[int, int]) -> int:
        """`count` alerts from `start`, `spacing` minutes apart; returns the last minute."""
        minute = start
        for position in range(count):
            if minute > _LAST_MINUTE - 30:
                break
            label = _pick(self.rng, _MIX)
            assert label is not None
            minute = self.alert(minute, label)
            if label == "P1" and position == count - 1:
                minute += _APPROVAL_MINUTES  # the burst ends when its suspension does
            minute += self.rng.randint(*spacing)
        return minute


def _scripted(services: dict[int, _Service]) -> None:
    """The first services play the scenarios the end-to-end tests rely on, early on."""
    approved, denied, silent, returning = (services[i] for i in range(4))
    for minute, label in ((5, "noise"), (9, "P2"), (14, "P1")):
        approved.alert(minute, label, answer="approve")
    approved.alert(40, "P3")
    approved.alert(150, "P2")  # after a TTL expiry: rehydrates its profile
    for minute, label in ((6, "P3"), (11, "P1"), (27, "noise")):
        denied.alert(minute, label, answer="deny")
    for minute, label in ((8, "P2"), (12, "P1"), (17, "P3"), (35, "P2")):
        silent.alert(minute, label, answer=None)  # the P3 waits behind the P1
    for minute, label in ((3, "P2"), (10, "P3"), (70, "P2"), (80, "noise"), (200, "P3")):
        returning.alert(minute, label)


_ERROR_RATE = _TEMPLATES["P1"][2]
_OUTAGE = _TEMPLATES["P1"][1]
_REPLICATION_LAG = _TEMPLATES["P2"][2]


def _flapping(service: _Service) -> None:
    """A known flap: an error-rate spike the on-call denies paging for, which comes back twice.

    Each return follows a TTL expiry, so what the agent knows of the first
    spike is only what long-term memory kept: recalled, the repeats are
    downgraded from P1 to P3 and page nobody.
    """
    service.alert(4, "P3")
    deny = f"deny: known {FLAP_MARK}, the error rate spikes and recovers within a minute"
    service.alert(12, "P1", f"{deny} (on-call lead)", template=_ERROR_RATE)
    service.alert(40, "noise")
    service.recurrence(120, "P1", _ERROR_RATE, "flap_repeat", expected="P3")
    service.alert(135, "P2")
    service.alert(150, "P3")
    service.recurrence(330, "P1", _ERROR_RATE, "flap_repeat", expected="P3")
    service.alert(345, "noise")


def _recurring_outage(service: _Service) -> None:
    """An outage whose cause comes back: replication lag, then the outage, then the lag again.

    The on-call approves the page and names the lag as the outage's cause;
    hours later (after a TTL expiry) the lag recurs: by its message a P2,
    recalled with the outage it caused, it is escalated to P1 and paged.
    """
    service.alert(5, "P2", template=_REPLICATION_LAG)
    approve = f"approve: full outage; root {CAUSE_MARK} was replication lag on the shard"
    service.alert(9, "P1", f"{approve} (on-call lead)", template=_OUTAGE)
    service.alert(38, "P3")
    service.alert(110, "noise")
    service.alert(118, "P3")
    service.recurrence(240, "P2", _REPLICATION_LAG, "outage_recurrence", expected="P1")
    service.alert(280, "noise")


_RECURRING: dict[str, Callable[[_Service], None]] = {
    FLAPPING_SERVICE: _flapping,
    RECURRING_OUTAGE_SERVICE: _recurring_outage,
}


def _noisy(service: _Service) -> None:
    """Eleven hours of flapping replication: an alert almost every minute."""
    rng = service.rng
    minute = 20
    p1_at = {200: "approve", 480: None}
    while minute < _LAST_MINUTE - 20:
        if minute in p1_at:
            minute = service.alert(minute, "P1", answer=p1_at.pop(minute)) + 1
            continue
        label = _pick(rng, _NOISY_MIX)
        assert label is not None
        minute = service.alert(minute, label) + (1 if rng.random() < 0.9 else 2)


def _random(service: _Service, busy: bool) -> None:
    """Bursts separated by idle gaps long enough for the TTL to expire the service."""
    rng = service.rng
    minute = rng.randint(0, 180)
    for _ in range(rng.randint(2, 4)):
        count = rng.randint(10, 22) if busy else rng.randint(3, 9)
        minute = service.burst(minute, count, (2, 14) if busy else (2, 18))
        minute += rng.randint(45, 150)
        if minute > _LAST_MINUTE - 60:
            break


def _services(*, recall: bool = True) -> dict[int, _Service]:
    """Every service's timeline, built; `recall` decides how the agent triages recurrences."""
    # Seeded on purpose: the data must regenerate byte for byte; nothing here is a secret.
    rng = random.Random(_SEED)  # noqa: S311
    seeds = [rng.getrandbits(64) for _ in range(SERVICES)]
    services = {
        i: _Service(index=i, rng=random.Random(seeds[i]), runs=_Activations(recall=recall))  # noqa: S311
        for i in range(SERVICES)
    }
    _scripted(services)
    busy = set(rng.sample(range(4, SERVICES), 12))
    for index, service in services.items():
        if service.key == NOISY_SERVICE:
            _noisy(service)
        elif service.key in _RECURRING:
            _RECURRING[service.key](service)
        elif index >= 4:
            _random(service, busy=index in busy)
    return services


def generate() -> tuple[list[Alert], list[Answer]]:
    """All alerts and answers, each sorted by event time (ties by service)."""
    services = _services()
    alerts = [a for s in services.values() for a in s.alerts]
    answers = [a for s in services.values() for a in s.answers]
    order: Callable[[Alert | Answer], tuple[int, str]] = lambda x: (x.event_time_ms, x.service)  # noqa: E731
    return sorted(alerts, key=order), sorted(answers, key=order)


def activation_seqs(*, recall: bool = True) -> dict[str, int]:
    """Each bundled alert's activation seq, by alert id, with the rechecks that run counted.

    `recall`: as the triage with recall (the demo's) triages, or without.
    """
    return {
        alert_id: seq for s in _services(recall=recall).values() for alert_id, seq in s.seqs.items()
    }


def generate_labels() -> list[Label]:
    """The labelled recurrences, by alert id."""
    return sorted(
        (label for s in _services().values() for label in s.labels), key=lambda x: x.alert_id
    )


def write_data(directory: Path = DATA_DIR) -> tuple[Path, Path, Path]:
    """Write `alerts.jsonl`, `answers.jsonl` and `labels.jsonl` into `directory`."""
    alerts, answers = generate()
    directory.mkdir(parents=True, exist_ok=True)
    alerts_path, answers_path = directory / "alerts.jsonl", directory / "answers.jsonl"
    labels_path = directory / "labels.jsonl"
    alerts_path.write_bytes(b"".join(a.to_bytes() + b"\n" for a in alerts))
    answers_path.write_bytes(b"".join(a.to_bytes() + b"\n" for a in answers))
    labels_path.write_bytes(b"".join(label.to_bytes() + b"\n" for label in generate_labels()))
    return alerts_path, answers_path, labels_path
