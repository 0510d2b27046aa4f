"""The call machinery: how an activation's model and tool calls are made and replayed.

`activation_calls` is the runtime's side of one activation (replay cache,
budgets, staged intents); `driver` runs its coroutine on the Beam thread;
`call_loop` is the process-wide loop where the calls of parked activations
wait; `models` and `tools` are what a DoFn instance opened to answer them,
and `missing_key` what stands in for a model whose key the worker lacks.
The lifecycle paths (`beam_agents.runtime._paths`) use these; these never
use the paths. Private: the transform is the API.
"""
