"""Guessing the token through every credential path: one throttle, counted by status codes.

Each client binds its own loopback address (127.0.0.0/8 is all this machine),
so an attacker and a legitimate user are told apart as the console tells
them apart: by the address the server sees.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from beam_agents.console.sessions import FREE_FAILURES, GLOBAL_FAILURES
from tests.console.conftest import TOKEN, Served, approval, write_lines

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
COOKIE = "beam_agents_session"
GUESSES = 300
ATTACKER = "127.0.0.2"
USER = "127.0.0.3"


class FakeClock:
    """A monotonic clock the test moves by hand, so no assertion depends on wall time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def served(serve: Callable[..., Served], tmp_path: Path, clock: FakeClock) -> Served:
    from beam_agents.console.security import Secret

    run = tmp_path / "run"
    run.mkdir()
    write_lines(run / "intents.jsonl", [approval("svc-1", "svc-1-0001", "down", "i-1")])
    return serve(source=run, token=Secret(TOKEN), clock=clock)


@pytest.fixture
def client_at(served: Served) -> Iterator[Callable[[str], httpx.Client]]:
    """An HTTP client whose requests leave from the given loopback address."""
    clients: list[httpx.Client] = []

    def make(address: str) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=address)
        client = httpx.Client(base_url=served.url, transport=transport)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def _bearer(client: httpx.Client, token: str) -> httpx.Response:
    return client.get("/approvals", headers={"Authorization": f"Bearer {token}"})


def _guess(n: int) -> str:
    return f"wrong-guess-{n:04d}-Zq8vL2xN5rT7yK3m"


def _form_login(client: httpx.Client, token: str) -> httpx.Response:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/login").text)
    assert match is not None
    return client.post("/login", data={"csrf": match.group(1), "token": token})


def test_wrong_bearer_guesses_are_throttled_after_the_free_failures(
    client_at: Callable[[str], httpx.Client],
) -> None:
    attacker = client_at(ATTACKER)
    responses = [_bearer(attacker, _guess(n)) for n in range(GUESSES)]
    statuses = [r.status_code for r in responses]

    assert statuses[: FREE_FAILURES + 1] == [401] * (FREE_FAILURES + 1)
    assert statuses.count(429) == GUESSES - FREE_FAILURES - 1
    assert all(int(r.headers["retry-after"]) >= 1 for r in responses if r.status_code == 429)


def test_the_right_bearer_token_is_refused_unchecked_while_its_address_is_closed(
    client_at: Callable[[str], httpx.Client], clock: FakeClock
) -> None:
    """Otherwise a guess made during the lockout would still say whether it was right."""
    attacker = client_at(ATTACKER)
    for n in range(FREE_FAILURES + 1):
        _bearer(attacker, _guess(n))

    closed = _bearer(attacker, TOKEN)
    clock.now += int(closed.headers["retry-after"])
    reopened = _bearer(attacker, TOKEN)

    assert closed.status_code == 429
    assert "try again in" in closed.text
    assert TOKEN not in closed.text
    assert reopened.status_code == 200


def test_the_owner_of_the_token_gets_in_from_another_address_while_a_guesser_is_locked_out(
    client_at: Callable[[str], httpx.Client],
) -> None:
    attacker, user = client_at(ATTACKER), client_at(USER)
    for n in range(FREE_FAILURES + 5):
        _bearer(attacker, _guess(n))

    assert _bearer(attacker, _guess(999)).status_code == 429
    assert _bearer(user, TOKEN).status_code == 200
    assert _form_login(user, TOKEN).status_code == 303


def test_bearer_guesses_close_the_login_form_to_the_same_address(
    client_at: Callable[[str], httpx.Client],
) -> None:
    attacker = client_at(ATTACKER)
    for n in range(FREE_FAILURES + 1):
        _bearer(attacker, _guess(n))

    login = _form_login(attacker, TOKEN)

    assert login.status_code == 429
    assert login.headers["retry-after"]
    assert COOKIE not in login.cookies


def test_failed_logins_close_the_bearer_header_to_the_same_address(
    client_at: Callable[[str], httpx.Client],
) -> None:
    attacker = client_at(ATTACKER)
    statuses = [_form_login(attacker, _guess(n)).status_code for n in range(FREE_FAILURES + 1)]

    assert statuses == [401] * (FREE_FAILURES + 1)
    assert _bearer(attacker, TOKEN).status_code == 429


@pytest.mark.parametrize(
    "header",
    ["Basic dXNlcjpwYXNz", "Bearer", "Token abc", ""],
    ids=["basic", "bearer-empty", "other-scheme", "empty"],
)
def test_any_authorization_header_that_is_not_the_token_counts_as_a_guess(
    client_at: Callable[[str], httpx.Client], header: str
) -> None:
    attacker = client_at(ATTACKER)
    statuses = [
        attacker.get("/approvals", headers={"Authorization": header}).status_code
        for _ in range(FREE_FAILURES + 3)
    ]

    assert statuses[: FREE_FAILURES + 1] == [401] * (FREE_FAILURES + 1)
    assert set(statuses[FREE_FAILURES + 1 :]) == {429}


def test_failing_session_cookies_are_throttled_like_any_other_guess(
    served: Served, client_at: Callable[[str], httpx.Client]
) -> None:
    attacker = client_at(ATTACKER)
    statuses = []
    for n in range(20):
        attacker.cookies.set(COOKIE, f"forged-session-{n}", domain="127.0.0.1")
        statuses.append(attacker.get("/approvals").status_code)

    assert statuses[: FREE_FAILURES + 1] == [401] * (FREE_FAILURES + 1)
    assert set(statuses[FREE_FAILURES + 1 :]) == {429}
    assert _bearer(attacker, TOKEN).status_code == 429  # one throttle for every path


def test_a_lapsed_session_cookie_is_cleared_so_it_costs_one_failure(
    client_at: Callable[[str], httpx.Client],
) -> None:
    browser = client_at(USER)
    browser.cookies.set(COOKIE, "a-session-from-before-a-restart", domain="127.0.0.1")

    first = browser.get("/approvals", headers={"Accept": "text/html"})
    again = [browser.get("/approvals", headers={"Accept": "text/html"}) for _ in range(10)]

    assert first.status_code == 303
    assert any(
        c.startswith(f"{COOKIE}=") and "max-age=0" in c.lower()
        for c in first.headers.get_list("set-cookie")
    )
    assert {r.status_code for r in again} == {303}  # no cookie sent, nothing counted
    assert _bearer(browser, TOKEN).status_code == 200


def test_a_live_session_keeps_working_while_its_address_is_closed(
    client_at: Callable[[str], httpx.Client],
) -> None:
    """Behind a proxy a guesser shares the address: people already working are not cut off."""
    user = client_at(USER)
    assert _form_login(user, TOKEN).status_code == 303
    for n in range(FREE_FAILURES + 3):
        _bearer(user, _guess(n))

    assert _bearer(user, TOKEN).status_code == 429
    assert user.get("/approvals").status_code == 200


def test_the_right_token_does_not_reset_a_guesser_sharing_the_address(
    client_at: Callable[[str], httpx.Client],
) -> None:
    shared = client_at(ATTACKER)
    first = [_bearer(shared, _guess(n)).status_code for n in range(FREE_FAILURES)]
    owner = _bearer(shared, TOKEN).status_code
    after = [_bearer(shared, _guess(100 + n)).status_code for n in range(3)]

    assert first == [401] * FREE_FAILURES
    assert owner == 200
    assert after == [401, 429, 429]


def test_guesses_from_many_addresses_close_new_token_checks_but_not_proven_ones(
    client_at: Callable[[str], httpx.Client], clock: FakeClock
) -> None:
    user, browser = client_at(USER), client_at("127.0.0.4")
    assert _bearer(user, TOKEN).status_code == 200
    assert _form_login(browser, TOKEN).status_code == 303
    for n in range(GLOBAL_FAILURES):
        assert _bearer(client_at(f"127.0.1.{n + 1}"), _guess(n)).status_code == 401
    newcomer = client_at("127.0.2.1")

    closed = _bearer(newcomer, TOKEN)
    guess = _bearer(client_at("127.0.2.2"), _guess(1000))
    proven = _bearer(user, TOKEN)
    session = browser.get("/approvals")
    clock.now += int(closed.headers["retry-after"])
    reopened = _bearer(newcomer, TOKEN)

    assert (closed.status_code, guess.status_code) == (429, 429)
    assert (proven.status_code, session.status_code) == (200, 200)
    assert reopened.status_code == 200


def test_a_person_logs_in_while_a_guesser_at_another_address_is_locked_out(
    served: Served, client_at: Callable[[str], httpx.Client], page: Any
) -> None:
    attacker = client_at(ATTACKER)  # Chromium connects from 127.0.0.1
    for n in range(FREE_FAILURES + 5):
        _bearer(attacker, _guess(n))
    assert _bearer(attacker, TOKEN).status_code == 429

    page.goto(f"{served.url}/approvals")
    page.fill("input[name=token]", TOKEN)
    page.click("main button[type=submit]")
    page.wait_for_url(f"{served.url}/")
    page.goto(f"{served.url}/approvals")

    assert page.locator(".approval").count() == 1


def test_a_person_at_a_closed_address_is_told_when_to_try_again(
    served: Served, client_at: Callable[[str], httpx.Client], page: Any
) -> None:
    guesser = client_at("127.0.0.1")  # the same address the browser comes from
    for n in range(FREE_FAILURES + 1):
        _bearer(guesser, _guess(n))

    page.goto(f"{served.url}/login")
    page.fill("input[name=token]", TOKEN)
    with page.expect_response(
        lambda r: r.url.endswith("/login") and r.request.method == "POST"
    ) as posted:
        page.click("main button[type=submit]")

    assert posted.value.status == 429
    assert re.search(r"try again in \d+ s", page.locator("[role=alert]").inner_text())
    assert TOKEN not in page.content()
