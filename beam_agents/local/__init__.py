"""Run a pipeline on this machine over recorded events, with production's timers.

Event-time TTL and processing-time approval deadlines only mean something on
a streaming runner, so a local run replays its inputs through a `TestStream`
on the streaming DirectRunner: a `Script` says when each event and answer
arrives and when the watermark and the processing-time clock move;
`stepped_script` builds one from timestamped records (JSON lines read by
`read_jsonl`, say), moving both clocks in fixed steps so hours of traffic
replay in the time the runner needs. `run_locally` runs it, reports how many
events went in while it runs, and hands back what the named outputs emitted
and the run's counters.

Counters need care: the streaming DirectRunner loses the metric updates of
later bundles unless `bundle_scoped_metrics()` is active, and `run_locally`
runs inside it. Runners that deploy (Dataflow, Flink) never reach this code.

Calls overlap across steps. The runner lets the script's next step in only
once nothing runs, and a parked activation's poll that waited on its call
would hold its one thread; so while `run_locally` runs, a poll whose call is
still running sets itself again a little ahead of the processing-time clock,
which creeps between the script's moves (`beam_agents.local._script_clock`), and
the following steps enter meanwhile (`beam_agents.runtime._paths.deferred_polls`).
After the script's last clock move, polls wait on their calls. And a
DoFn instance serves many bundles, as on a deployed runner, instead of
being set up for each (`beam_agents.local._reused_dofns`).
"""

from beam_agents.local._agent_run import AgentRun, run_agent
from beam_agents.local._jsonl import InvalidLocalInputError, read_jsonl
from beam_agents.local._metrics import bundle_scoped_metrics
from beam_agents.local._run import EVENTS_COUNTER, LocalRun, run_locally
from beam_agents.local._script import ANSWERS, EVENTS, Script, stepped_script
from beam_agents.local._tool_faults import fail_after_tool_calls

__all__ = [
    "ANSWERS",
    "EVENTS",
    "EVENTS_COUNTER",
    "AgentRun",
    "InvalidLocalInputError",
    "LocalRun",
    "Script",
    "bundle_scoped_metrics",
    "fail_after_tool_calls",
    "read_jsonl",
    "run_agent",
    "run_locally",
    "stepped_script",
]
