"""What an activation starts from, for a fragment that works on working memory directly.

`<!-- fragment: activation_inputs -->`: `blob` is the key's committed `MemoryBlob`
(None: its first activation), `event_time_ms` the activation's event time and `event`
its bytes.
"""

blob = None
event_time_ms = 1_000
event = b"disk full on /var/data"

# <fragment>
