"""Sessions, the login throttle, TLS cookies and the record window, tried as an attacker would."""

from __future__ import annotations

import datetime
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from beam_agents.cli import main
from beam_agents.console import activity as activity_module
from beam_agents.console.activity import RunActivity
from beam_agents.console.sessions import (
    FORGET_S,
    FREE_FAILURES,
    GLOBAL_FAILURES,
    LoginThrottle,
    SessionPolicy,
)
from beam_agents.testing.services import free_port
from tests.console.conftest import TOKEN, Served, approval, write_lines

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
COOKIE = "beam_agents_session"


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    write_lines(run / "intents.jsonl", [approval("svc-1", "svc-1-0001", "down", "i-1")])
    return run


def _csrf(client: httpx.Client) -> str:
    match = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get("/login").text)
    assert match is not None
    return match.group(1)


def _login(client: httpx.Client, token: str = TOKEN) -> httpx.Response:
    return client.post("/login", data={"csrf": _csrf(client), "token": token})


def _opens(url: str, session: str) -> bool:
    """Whether a fresh client holding only this session cookie gets the approvals page."""
    with httpx.Client(base_url=url, cookies={COOKIE: session}) as client:
        return client.get("/approvals").status_code == 200


def test_a_cookie_from_before_logout_is_refused(
    serve: Callable[..., Served], run_dir: Path
) -> None:
    from beam_agents.console.security import Secret

    served = serve(source=run_dir, token=Secret(TOKEN))
    with httpx.Client(base_url=served.url) as client:
        assert _login(client).status_code == 303
        stolen = client.cookies[COOKIE]
        assert _opens(served.url, stolen)
        assert client.post("/logout", data={"csrf": _csrf(client)}).status_code == 303

    assert not _opens(served.url, stolen)


def test_two_logins_get_different_cookies(serve: Callable[..., Served], run_dir: Path) -> None:
    from beam_agents.console.security import Secret

    served = serve(source=run_dir, token=Secret(TOKEN))
    sessions = []
    for _ in range(2):
        with httpx.Client(base_url=served.url) as client:
            _login(client)
            sessions.append(client.cookies[COOKIE])

    assert sessions[0] != sessions[1]
    assert all(_opens(served.url, s) for s in sessions)
    assert not any(TOKEN in s for s in sessions)


def test_a_session_idle_past_its_timeout_is_refused(
    serve: Callable[..., Served], run_dir: Path
) -> None:
    from beam_agents.console.security import Secret

    clock = FakeClock()
    policy = SessionPolicy(idle_s=600, absolute_s=3600)
    served = serve(source=run_dir, token=Secret(TOKEN), sessions=policy, clock=clock)
    with httpx.Client(base_url=served.url) as client:
        _login(client)
        session = client.cookies[COOKIE]

    clock.now += 599
    assert _opens(served.url, session)  # a request restarts the idle timeout
    clock.now += 599
    assert _opens(served.url, session)
    clock.now += 601
    assert not _opens(served.url, session)


def test_a_session_past_its_absolute_timeout_is_refused_however_busy(
    serve: Callable[..., Served], run_dir: Path
) -> None:
    from beam_agents.console.security import Secret

    clock = FakeClock()
    policy = SessionPolicy(idle_s=600, absolute_s=3600)
    served = serve(source=run_dir, token=Secret(TOKEN), sessions=policy, clock=clock)
    with httpx.Client(base_url=served.url) as client:
        _login(client)
        session = client.cookies[COOKIE]

    for _ in range(6):  # never idle, up to 3000 s
        clock.now += 500
        assert _opens(served.url, session)
    clock.now += 601
    assert not _opens(served.url, session)


def test_repeated_failed_logins_close_the_form_even_to_the_right_token(
    serve: Callable[..., Served], run_dir: Path
) -> None:
    from beam_agents.console.security import Secret

    clock = FakeClock()
    served = serve(source=run_dir, token=Secret(TOKEN), clock=clock)
    with httpx.Client(base_url=served.url) as client:
        statuses = [_login(client, "wrong-token-guess-0000").status_code for _ in range(10)]
        closed = _login(client)
        clock.now += float(closed.headers["retry-after"])
        reopened = _login(client)

    assert statuses[: FREE_FAILURES + 1] == [401] * (FREE_FAILURES + 1)
    assert set(statuses[FREE_FAILURES + 1 :]) == {429}
    assert closed.status_code == 429
    assert COOKIE not in closed.cookies
    assert reopened.status_code == 303


def test_the_lockout_doubles_with_each_failure_and_is_per_address() -> None:
    clock = FakeClock()
    throttle = LoginThrottle(clock)
    waits = []
    for _ in range(FREE_FAILURES + 4):
        throttle.failed("203.0.113.7")
        waits.append(throttle.wait_s("203.0.113.7"))

    assert waits == [0.0] * FREE_FAILURES + [1.0, 2.0, 4.0, 8.0]
    assert throttle.wait_s("198.51.100.1") == 0.0
    throttle.succeeded("203.0.113.7")
    assert throttle.wait_s("203.0.113.7") == 0.0


def test_an_address_that_stops_failing_for_an_hour_starts_afresh() -> None:
    clock = FakeClock()
    throttle = LoginThrottle(clock)
    for _ in range(FREE_FAILURES + 2):
        throttle.failed("203.0.113.7")
    clock.now += FORGET_S - 1
    throttle.failed("203.0.113.7")
    kept = throttle.wait_s("203.0.113.7")
    clock.now += FORGET_S
    throttle.failed("203.0.113.7")

    assert kept == 4.0  # the sixth failure in a row: still counted after 59 quiet minutes
    assert throttle.wait_s("203.0.113.7") == 0.0  # the first of a fresh count


def test_failures_spread_over_many_addresses_close_the_form_to_all() -> None:
    clock = FakeClock()
    throttle = LoginThrottle(clock)
    for n in range(GLOBAL_FAILURES):
        throttle.failed(f"203.0.113.{n}")

    assert throttle.wait_s("198.51.100.1") > 0
    clock.now += 61
    assert throttle.wait_s("198.51.100.1") == 0.0


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made here with `cryptography`."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_under_tls_the_cookies_are_secure_and_host_prefixed(run_dir: Path, tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    port = free_port()
    command = [sys.executable, "-m", "beam_agents.cli", "console", str(run_dir)]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--tls-cert", str(cert), "--tls-key", str(key)],
        env={**os.environ, "BEAM_AGENTS_CONSOLE_TOKEN": TOKEN},
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline
                assert process.poll() is None
                time.sleep(0.1)
        with httpx.Client(base_url=f"https://127.0.0.1:{port}", verify=str(cert)) as client:
            form = client.get("/login")
            match = re.search(r'name="csrf" value="([0-9a-f]+)"', form.text)
            assert match is not None
            login = client.post("/login", data={"csrf": match.group(1), "token": TOKEN})
            session = login.cookies[f"__Host-{COOKIE}"]
            approvals = client.get("/approvals")
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)

    [csrf_cookie] = form.headers.get_list("set-cookie")
    [session_cookie] = login.headers.get_list("set-cookie")
    assert csrf_cookie.startswith("__Host-beam_agents_csrf=")
    assert session_cookie.startswith(f"__Host-{COOKIE}={session}")
    for cookie in (csrf_cookie, session_cookie):
        attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
        assert {"secure", "httponly", "path=/", "samesite=strict"} <= attributes, cookie
        assert not any(a.startswith("domain") for a in attributes), cookie
    assert approvals.status_code == 200
    assert f"https://127.0.0.1:{port}/" in stderr.decode()
    assert TOKEN not in stderr.decode()


def test_a_non_loopback_bind_without_tls_is_refused_in_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the console went on to serve a non-loopback address")

    monkeypatch.setattr(uvicorn, "run", never)  # a regression must not really bind 0.0.0.0
    command = ["console", str(run_dir), "--host", "0.0.0.0", "--token", TOKEN]

    assert main(command) == 2

    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "--tls-cert" in err
    assert "--behind-tls-proxy" in err
    assert TOKEN not in err


def test_the_record_window_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(activity_module, "RECORD_WINDOW", 50)
    monkeypatch.setattr(activity_module, "PENDING_WINDOW", 20)
    monkeypatch.setattr(activity_module, "SETTLED_WINDOW", 10)
    monkeypatch.setattr(activity_module, "ANSWER_WINDOW", 30)
    activity = RunActivity(tmp_path, approval_timeout_ms=1000)
    for batch in range(10):
        write_lines(
            tmp_path / "intents.jsonl",
            [approval(f"svc-{n}", f"a-{n}", "down", f"i-{batch}-{n}") for n in range(100)],
        )
        write_lines(
            tmp_path / "errors.jsonl", [{"service": "s", "reason": "x"} for _ in range(100)]
        )
        activity.refresh()
        for n in range(0, 100, 2):
            activity.record_answer({"intent_id": f"i-{batch}-{n}", "answer": "approve"})

    approvals = activity.approvals()
    assert sum(a.pending for a in approvals) <= 20
    assert sum(not a.pending for a in approvals) <= 10
    assert len(activity.errors()) == 50
    assert len(activity._answers) <= 30
    assert activity.figures()["figures"]["dead letters"] == 1000
    assert json.dumps(activity.figures(), default=str)
