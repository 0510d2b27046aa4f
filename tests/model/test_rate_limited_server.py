"""The quota-holding server as another process runs it: `python -m ...rate_limited_server`."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request


def _post(url: str) -> int:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=body.encode(),
        headers={"content-type": "application/json", "authorization": "Bearer k"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return refused.code


def test_the_command_serves_a_quota_and_reports_its_counts_as_json() -> None:
    command = [sys.executable, "-m", "beam_agents.testing.rate_limited_server", "--rpm", "60"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:")
        # 60 rpm with a one-second burst: one request now, the next refused.
        statuses = [_post(base_url), _post(base_url)]
        root = base_url.removesuffix("/v1")
        with urllib.request.urlopen(f"{root}/stats", timeout=10) as response:
            stats = json.loads(response.read())
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert statuses == [200, 429]
    assert (stats["accepted"], stats["throttled"], stats["requests"]) == (1, 1, 2)
