"""Redis backend traps: integer seq comparison (also under a non-C locale), literal
lexicographic prefix bounds, unambiguous key names, script reloading, secrets."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import pytest
import redis.asyncio as aioredis

from beam_agents.memory.stores import MemoryRecord, StoreUnavailableError, open_store
from beam_agents.memory.stores.redis import RedisMemoryStore
from beam_agents.testing.pytest_plugin import service_unavailable
from beam_agents.testing.services import ServiceUnavailableError, free_port
from beam_agents.testing.services.redis import RedisServer

T = TypeVar("T")
ENTITY = b"entity-1"


def run(awaitable: Awaitable[T]) -> T:
    async def main() -> T:
        return await awaitable

    return asyncio.run(main())


def rec(key: str, seq: int, value: bytes = b"v") -> MemoryRecord:
    return MemoryRecord(key=key, value=value + str(seq).encode(), seq=seq, updated_at_ms=seq)


async def seq_history(store: RedisMemoryStore, seqs: list[int]) -> list[bool]:
    try:
        return [await store.upsert(ENTITY, rec("k", seq)) for seq in seqs]
    finally:
        await store.close()


def test_guard_compares_seqs_as_integers_not_strings(redis_store_uri: str) -> None:
    """'10' < '9' as strings; as integers 10 replaces 9 and 9 never regresses 10."""
    store = open_store(redis_store_uri)
    assert isinstance(store, RedisMemoryStore)

    applied = run(seq_history(store, [9, 10, 9, 99, 100, 1000, 999]))

    assert applied == [True, True, False, True, True, True, False]


def test_guard_is_exact_for_seqs_above_two_to_the_53(redis_store_uri: str) -> None:
    """Lua numbers are doubles: 2**53 + 1 and 2**53 are equal as doubles, never as seqs."""
    big = 2**53
    store = open_store(redis_store_uri)
    assert isinstance(store, RedisMemoryStore)

    applied = run(seq_history(store, [big + 1, big, big + 1, 2**63 - 2, 2**63 - 1, 2**63 - 2]))

    assert applied == [True, False, True, True, True, False]


def _compile_locale(target: Path) -> Path | None:
    """Build en_US.UTF-8 into `target` (LOCPATH) if this machine has the locale sources."""
    localedef = shutil.which("localedef")
    if localedef is None or not Path("/usr/share/i18n/locales/en_US").exists():
        return None
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [localedef, "-i", "en_US", "-f", "UTF-8", str(target / "en_US.UTF-8")],
        capture_output=True,
        check=False,
        timeout=60,
    )
    return target if done.returncode == 0 and (target / "en_US.UTF-8").is_dir() else None


def test_guard_compares_integers_on_a_server_collating_by_locale(tmp_path: Path) -> None:
    """Under en_US.UTF-8, Lua string `<` is strcoll ('a' < 'B'); the guard is unaffected."""
    locales = _compile_locale(tmp_path / "locales")
    if locales is None:
        service_unavailable(
            "localedef or the en_US locale source (Debian package locales) is unavailable: "
            "cannot build en_US.UTF-8"
        )
    env = {"LC_ALL": "en_US.UTF-8", "LOCPATH": str(locales)}
    try:
        server = RedisServer(tmp_path / "redis", env=env)
    except ServiceUnavailableError as exc:
        service_unavailable(f"redis-server unavailable: {exc}")

    async def scenario() -> tuple[bytes, list[bool]]:
        client = aioredis.Redis.from_url(server.url)
        collation = await client.eval("return tostring('a' < 'B')", 0)
        await client.aclose()
        store = open_store(f"{server.url}?namespace=locale")
        assert isinstance(store, RedisMemoryStore)
        return collation, await seq_history(store, [9, 10, 9, 2**53 + 1, 2**53, 2**63 - 1])

    with server:
        collation, applied = run(scenario())

    assert collation == b"true", "the server did not pick up the en_US.UTF-8 collation"
    assert applied == [True, True, False, True, False, True]


@pytest.mark.parametrize("prefix", ["*", "[", "(", "-", "+", "a*", "\\", "?", "[a", "%"])
def test_prefix_search_takes_glob_and_lex_syntax_literally(
    redis_store_uri: str, prefix: str
) -> None:
    keys = ["*", "*x", "[", "[a", "[ab", "(", "(z", "-", "+", "a", "a*", "a*b", "ab", "\\", "?"]
    keys += ["%", "%%", "b"]
    store = open_store(redis_store_uri)

    async def scenario() -> list[str]:
        try:
            await store.upsert_many(ENTITY, [rec(k, 1) for k in keys])
            return [r.key for r in await store.search(ENTITY, prefix, 1000)]
        finally:
            await store.close()

    found = run(scenario())

    assert found == sorted((k for k in keys if k.startswith(prefix)), key=str.encode)


def test_search_is_bytewise_utf8_ordered_and_bounded(redis_store_uri: str) -> None:
    """Astral characters sort after U+FFFF in UTF-8, and after every BMP character."""
    keys = ["a", "a\uffff", "a\U0001f600", "a\U0010ffff", "a\u00e9", "a\x7f", "ab", "b", "\u00e9"]
    store = open_store(redis_store_uri)

    async def scenario() -> tuple[list[str], list[str]]:
        try:
            await store.upsert_many(ENTITY, [rec(k, 1) for k in keys])
            everything = [r.key for r in await store.search(ENTITY, "a", 1000)]
            first_three = [r.key for r in await store.search(ENTITY, "a", 3)]
            return everything, first_three
        finally:
            await store.close()

    everything, first_three = run(scenario())

    expected = sorted((k for k in keys if k.startswith("a")), key=str.encode)
    assert everything == expected
    assert first_three == expected[:3]


@pytest.mark.parametrize(
    ("entity_a", "entity_b"),
    [(b"a", b"a}:r"), (b"", b"\x00"), (b"ab", b"a"), (b"{e61}", b"a"), (b"a:", b"a")],
)
def test_entities_cannot_read_or_clobber_each_other(
    redis_store_uri: str, entity_a: bytes, entity_b: bytes
) -> None:
    store = open_store(redis_store_uri)

    async def scenario() -> tuple[MemoryRecord | None, list[MemoryRecord], list[bool]]:
        try:
            await store.upsert(entity_a, rec("k", 5, b"a"))
            clobber = await store.upsert_many(entity_b, [rec("k", 1, b"b")])
            return await store.load(entity_a, "k"), await store.search(entity_b, "", 10), clobber
        finally:
            await store.close()

    mine, theirs, clobber = run(scenario())

    assert mine == rec("k", 5, b"a")
    assert clobber == [True]  # entity_b's own first write, not a rejected write onto entity_a's
    assert theirs == [rec("k", 1, b"b")]


def test_upsert_reloads_its_script_after_a_script_flush(redis_store_uri: str) -> None:
    """EVALSHA answers NOSCRIPT after SCRIPT FLUSH or a failover; the store falls back to EVAL."""
    store = open_store(redis_store_uri)
    assert isinstance(store, RedisMemoryStore)
    url = redis_store_uri.partition("?")[0]

    async def scenario() -> tuple[list[bool], list[str]]:
        client = aioredis.Redis.from_url(url)
        try:
            await store.upsert(ENTITY, rec("a", 1))
            await client.script_flush()
            applied = await store.upsert_many(ENTITY, [rec("b", 1), rec("a", 2)])
            await client.script_flush()
            found = [r.key for r in await store.search(ENTITY, "", 10)]
            return applied, found
        finally:
            await client.aclose()
            await store.close()

    applied, found = run(scenario())

    assert applied == [True, True]
    assert found == ["a", "b"]


def test_search_never_scans_the_entity(redis_store_uri: str) -> None:
    """Only ZRANGEBYLEX and HMGET run: no HGETALL, HSCAN, HKEYS, SCAN or KEYS."""
    store = open_store(redis_store_uri)
    url = redis_store_uri.partition("?")[0]

    async def scenario() -> tuple[dict[str, int], list[str]]:
        client = aioredis.Redis.from_url(url)
        try:
            await store.upsert_many(ENTITY, [rec(f"k{i:04d}", 1) for i in range(500)])
            await client.config_resetstat()
            found = [r.key for r in await store.search(ENTITY, "k02", 3)]
            stats = await client.info("commandstats")
            return {name.removeprefix("cmdstat_"): v["calls"] for name, v in stats.items()}, found
        finally:
            await client.aclose()
            await store.close()

    calls, found = run(scenario())

    assert found == ["k0200", "k0201", "k0202"]
    assert calls.get("zrangebylex") == 1
    assert calls.get("hmget") == 1
    assert not {"hgetall", "hscan", "hkeys", "hvals", "scan", "keys"} & set(calls)


def test_password_never_appears_in_errors_or_reprs() -> None:
    port = free_port()  # nothing listens here
    store = open_store(f"redis://agent:s3cr3t-pw@127.0.0.1:{port}/0?timeout_s=0.5")

    with pytest.raises(StoreUnavailableError) as caught:
        run(store.load(ENTITY, "k"))
    run(store.close())

    assert "s3cr3t-pw" not in str(caught.value)
    assert "s3cr3t-pw" not in repr(caught.value)
    assert "s3cr3t-pw" not in repr(store)
    assert caught.value.__cause__ is None or "s3cr3t-pw" not in str(caught.value.__cause__)
