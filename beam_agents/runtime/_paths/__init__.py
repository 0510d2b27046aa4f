"""The lifecycle paths: what can happen to a key, one module a path.

`activator` is the table of contents: an event (`event`), an answer or a
deadline (`answer`), a parked activation's poll (`poll`), the TTL timer
(`expiry`), the events that waited behind a suspension (`drain`). Every
path that runs the agent comes through one attempt (`attempt`) and its
commit (`commit`, with `suspension` and `parking` for the two ways an
activation stops short). Each reads and writes a key's cells and nothing of
Beam's, so each is tested and benchmarked without a runner. Private: the
transform is the API.
"""
