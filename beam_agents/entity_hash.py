"""Entity keys as spans and logs show them: an HMAC-SHA256 under the deployment's own key.

Entity keys can be personal data (a customer id, an e-mail address, a
service name), and an unsalted hash of one is no protection: anyone holding
a span can hash a list of candidate keys and look for a match. A keyed hash
under a secret only the workers read cannot be reversed that way, and is
still stable, so an operator can follow one key through spans and
dead-letter log lines without ever seeing it.

The key is the deployment's: the `--entity_hash_secret` pipeline option
(`beam_agents.TelemetryOptions`) names where it lives, `env:NAME` or a
Secret Manager version, and every worker reads it in its DoFn's `setup()`
through the same code that reads a webhook's secret headers. The job's
graph carries only that reference. Without the option each worker process
draws a random key of its own, once: hashes then agree within one process
and nowhere else, which is safe but does not correlate across workers or
restarts. A deployed job says so in its workers' logs, once per process;
a local run does not, since it is one process and its hashes all agree.

The digest is cut to `HASH_HEX_DIGITS` hex digits (128 bits): collisions
among even billions of keys stay negligible (the birthday bound is 2^64),
the attribute and the log line stay short, and an HMAC truncated to half
its output is as strong as its truncated length for this use.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import threading
from dataclasses import dataclass
from typing import Final, NoReturn

from beam_agents._connections.secret_sources import check_secret_source, read_secret
from beam_agents.errors import ConfigurationError

__all__ = [
    "HASH_HEX_DIGITS",
    "MIN_KEY_BYTES",
    "OPTION",
    "EntityHashKey",
    "EntityHasher",
    "ProcessKey",
    "process_hasher",
]

OPTION: Final = "entity_hash_secret"
"""The pipeline option naming where the deployment's key lives; errors name it."""
HASH_HEX_DIGITS: Final = 32
"""Hex digits of the HMAC-SHA256 that spans and logs carry: 128 bits."""
MIN_KEY_BYTES: Final = 16
"""A shorter key could itself be guessed; `openssl rand -hex 32` gives 64 bytes of text."""
_PROCESS_KEY_BYTES: Final = 32

_log = logging.getLogger(__name__)


class EntityHasher:
    """HMAC-SHA256 of entity keys under one key; never pickled, never shown."""

    __slots__ = ("_mac",)

    def __init__(self, key: bytes) -> None:
        if len(key) < MIN_KEY_BYTES:
            raise ConfigurationError(
                OPTION,
                f"the key must be at least {MIN_KEY_BYTES} bytes (e.g. `openssl rand -hex 32`), "
                f"got {len(key)}",
            )
        # Keyed once; each hash copies the keyed state instead of re-deriving it.
        self._mac = hmac.new(key, digestmod=hashlib.sha256)

    def __call__(self, entity_key: bytes) -> str:
        mac = self._mac.copy()
        mac.update(entity_key)
        return mac.hexdigest()[:HASH_HEX_DIGITS]

    def __repr__(self) -> str:
        return "EntityHasher(<key not shown>)"

    def __reduce__(self) -> NoReturn:
        # The key must stay on the worker that read it: a pickled hasher would carry it.
        raise TypeError("an EntityHasher holds a secret key and is not picklable")


@dataclass(frozen=True, slots=True)
class EntityHashKey:
    """Where the deployment's key lives (`env:NAME` or a Secret Manager version), never the key.

    This is what the agent DoFn carries to the workers; `open` reads the
    key there. Validated at construction, so a malformed reference fails
    where the pipeline is built.
    """

    source: str

    def __post_init__(self) -> None:
        check_secret_source(OPTION, self.source)

    async def open(self) -> EntityHasher:
        """Read the key now, on the worker, and return its hasher."""
        value = await read_secret(OPTION, self.source)
        return EntityHasher(value.encode("utf-8"))


class ProcessKey:
    """A random key of this process, drawn on first use.

    The fallback when no deployment key is configured: hashes agree within
    the process (its spans and its dead-letter log lines correlate) but not
    across workers or restarts, and nothing outside the process can
    recompute them. That is worth a warning only where hashes are compared
    across processes, a job's workers: the first caller there logs it.
    """

    def __init__(self, logger: logging.Logger = _log) -> None:
        self._logger = logger
        self._lock = threading.Lock()
        self._hasher: EntityHasher | None = None
        self._warned = False

    def hasher(self, *, across_workers: bool = False) -> EntityHasher:
        """The process's hasher; `across_workers`: the caller runs on a deployed runner's worker."""
        with self._lock:
            if self._hasher is None:
                self._hasher = EntityHasher(secrets.token_bytes(_PROCESS_KEY_BYTES))
            if across_workers and not self._warned:
                self._warned = True
                self._logger.warning(
                    "no --%s configured: entity keys in spans and dead-letter logs are hashed "
                    "under a random key of this process, so their hashes do not match across "
                    "workers or restarts (docs/telemetry.md)",
                    OPTION,
                )
            return self._hasher


_process_key: Final = ProcessKey()


def process_hasher(*, across_workers: bool = False) -> EntityHasher:
    """This process's fallback hasher (`ProcessKey`), shared by every DoFn without a key."""
    return _process_key.hasher(across_workers=across_workers)
