"""A worker process for the OTLP tests: `python -m tests.runtime.otlp_worker MODE ENDPOINT`.

OpenTelemetry's global tracer provider can be set once per process, so each
test that lets the runtime install it runs here, in a process of its own,
and prints what it saw as one JSON line. The process ends with `os._exit`,
which skips the SDK's exit-time flush: every span the receiver got was sent
by the runtime's own flushes.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import sys
import threading
from typing import Any

from opentelemetry import trace

from beam_agents import AgentConfig
from beam_agents import telemetry as telemetry_module
from beam_agents.model import FakeLLM
from beam_agents.runtime._dofn import AgentDoFn
from beam_agents.telemetry import ensure_otlp_export, export_otlp, sdk_installed
from beam_agents.telemetry_options import WorkerExport
from beam_agents.testing.streaming import Script, run_script
from tests.runtime import agents

SERVICE = "worker-test"
THREADS = 8


def _processors() -> int:
    """Span processors on the installed SDK provider (0 without one)."""
    provider: Any = trace.get_tracer_provider()
    active = getattr(provider, "_active_span_processor", None)
    return len(getattr(active, "_span_processors", ()))


def _config() -> AgentConfig:
    provider = FakeLLM(name="otlp-worker", default=b"answer {n}")
    provider.reset()
    return AgentConfig(provider_factory=provider, max_inflight_calls=1)


def pipeline(endpoint: str) -> dict[str, Any]:
    """A run without the option installs nothing; the same run with it exports."""
    script = Script().events(("a", b"one", 1_000), ("b", b"two", 2_000), ("a", b"three", 3_000))
    before = sdk_installed()
    plain = run_script(agents.ask_model, _config(), script)
    after_plain = sdk_installed()
    options = [f"--otlp_endpoint={endpoint}", f"--otlp_service_name={SERVICE}"]
    traced = run_script(agents.ask_model, _config(), script, options=options)
    return {
        "sdk_before": before,
        "sdk_after_plain_run": after_plain,
        "sdk_after_traced_run": sdk_installed(),
        "outputs": [len(plain.outputs), len(traced.outputs)],
        "processors": _processors(),
    }


def launcher_too(endpoint: str) -> dict[str, Any]:
    """A local run whose launcher exports already: its DoFns add no second exporter."""
    stop = export_otlp(endpoint, service_name=SERVICE)
    script = Script().events(("a", b"one", 1_000), ("b", b"two", 2_000))
    run = run_script(agents.ask_model, _config(), script, options=[f"--otlp_endpoint={endpoint}"])
    processors = _processors()
    stop()
    return {"outputs": len(run.outputs), "processors": processors}


def threads(endpoint: str) -> dict[str, Any]:
    """Several DoFn instances set up at once, on several threads, install one exporter."""
    installs: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            installs.append(record.getMessage())

    log = logging.getLogger("beam_agents.telemetry_options")
    log.setLevel(logging.INFO)
    log.addHandler(_Collect())
    export = WorkerExport(endpoint, SERVICE)
    template = AgentDoFn(agents.remember, _config(), token="otlp-threads", telemetry=export)
    # As a runner does: each instance is its own unpickled copy of the DoFn.
    dofns = [pickle.loads(pickle.dumps(template)) for _ in range(THREADS)]
    barrier = threading.Barrier(THREADS)
    started: list[bool] = []

    def set_up(dofn: AgentDoFn) -> None:
        barrier.wait()
        dofn.setup()
        started.append(ensure_otlp_export(endpoint, service_name=SERVICE))

    workers = [threading.Thread(target=set_up, args=(dofn,)) for dofn in dofns]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    with trace.get_tracer("otlp-worker").start_as_current_span("after-setup"):
        pass
    for dofn in dofns:
        dofn.teardown()
    return {
        "set_up": len(started),
        "later_calls_started_an_export": any(started),
        "install_logs": installs,
        "exports": len(telemetry_module._exports),
        "processors": _processors(),
        "reprs": sorted({repr(dofn._telemetry) for dofn in dofns}),
    }


MODES = {"pipeline": pipeline, "launcher_too": launcher_too, "threads": threads}

if __name__ == "__main__":
    mode, endpoint = sys.argv[1:3]
    print(json.dumps(MODES[mode](endpoint)), flush=True)
    sys.stderr.flush()
    os._exit(0)
