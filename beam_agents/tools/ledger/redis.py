"""The Redis ledger: `SET NX PX` to claim, a Lua script to record.

One key per intent, `<namespace>:tool:<intent id>` (the store's own keys
all carry a `{e...}` hash tag, so the two never meet). While claimed the
value is `C` + the claim's token and the key expires with the lease, on
the server's clock: an expired lease is simply an absent key, and the next
`SET NX` takes it. Recorded, the value is `R` + the result, with no expiry
(retention is the operator's, as for the store's rows).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Final, cast

from redis import exceptions as redis_errors

from beam_agents.memory.stores.errors import StoreError, StoreUnavailableError
from beam_agents.memory.stores.redis import RedisMemoryStore
from beam_agents.tools.ledger.base import Busy, Claimed, ClaimOutcome, Recorded, ToolLedger

__all__ = ["RedisToolLedger"]

_READ_LUA: Final = """
local value = redis.call('GET', KEYS[1])
if not value then return false end
return {value, redis.call('PTTL', KEYS[1])}
"""
_RECORD_LUA: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
_RELEASE_LUA: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_CLAIM_ROUNDS: Final = 8


class RedisToolLedger(ToolLedger):
    """A `ToolLedger` on the store's Redis server and namespace."""

    def __init__(self, store: RedisMemoryStore) -> None:
        super().__init__()
        self._store = store
        self._client = store.client
        self._prefix = f"{store.namespace}:tool:"
        self._read = self._client.register_script(_READ_LUA)
        self._write = self._client.register_script(_RECORD_LUA)
        self._drop = self._client.register_script(_RELEASE_LUA)

    def __repr__(self) -> str:
        return f"RedisToolLedger({self._store!r})"

    def _key(self, intent_id: str) -> bytes:
        return (self._prefix + intent_id).encode()

    async def _claim(self, intent_id: str, token: str, lease_ms: int) -> ClaimOutcome:
        key = self._key(intent_id)
        for _ in range(_CLAIM_ROUNDS):
            with self._errors("claim"):
                if await self._client.set(key, b"C" + token.encode(), nx=True, px=lease_ms):
                    return Claimed(intent_id, token)
                found = await self._read(keys=[key])
            if found:
                value, ttl = cast(list[Any], found)
                if bytes(value).startswith(b"R"):
                    return Recorded(intent_id, bytes(value)[1:])
                if int(ttl) > 0:
                    return Busy(intent_id, int(ttl))
        raise StoreUnavailableError(f"{self!r}: claim of {intent_id} kept racing; try again")

    async def _record(self, claim: Claimed, result: bytes) -> bool:
        args = [b"C" + claim.token.encode(), b"R" + result]
        with self._errors("record"):
            return bool(await self._write(keys=[self._key(claim.intent_id)], args=args))

    async def _release(self, claim: Claimed) -> None:
        with self._errors("release"):
            await self._drop(keys=[self._key(claim.intent_id)], args=[b"C" + claim.token.encode()])

    async def provision(self) -> None:
        """Nothing to create on Redis; the store's provision checks the server answers."""
        await self._store.provision()

    async def close(self) -> None:
        await self._store.close()

    @contextlib.contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        """redis-py failures as typed store errors, naming the class only (no credentials)."""
        try:
            yield
        except (redis_errors.ConnectionError, redis_errors.TimeoutError, OSError) as exc:
            raise StoreUnavailableError(
                f"{self!r} unavailable during {operation}: {type(exc).__name__}"
            ) from None
        except redis_errors.RedisError as exc:
            raise StoreError(f"{self!r}: {operation} failed: {type(exc).__name__}") from None
