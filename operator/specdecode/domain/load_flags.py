"""The load pods' settings that the CRD does not carry: each value defined once, here.

Why: each flag has one owner; what the spec sets has no default in `specdecode-load` (a
second default drifted once), and the rest is defined here, rendered by the operator and
used as the program's defaults. Pure constants. More: docs/internals.md.
"""

from __future__ import annotations

from typing import Final

# The pod serves GET /v1/report and POST /v1/endpoints here; the operator asks here, and the
# chart's NetworkPolicy opens this port to the operator alone (a unit test compares them).
REPORT_PORT: Final = 8090
# The splitter (Mirror through the splitter) takes mirrored requests here: its Service's
# port, the one the route's RequestMirror filter (or a mesh's mirror) targets.
MIRROR_PORT: Final = 8080
# The two sides a splitter sends every request to and reports on, by their wire names.
SPLITTER_SIDES: Final = ("baseline", "candidate")
LISTEN_HOST: Final = "0.0.0.0"  # every address of the pod (SPECDECODE_BIND_HOST overrides)

# Requests in the built-in synthetic prompt set when the spec names no ConfigMap or Secret.
BUILTIN_PROMPT_COUNT: Final = 256

# A fresh load process needs this long to open its streams and reach the stage's load:
# a restarted container skips it (a gap), and the operator counts a pod created inside a
# stage's window as missing until it has passed (`load_window`).
WARMUP_SECONDS: Final = 5.0

# Open loop: requests one shard may hold open at once; arrivals beyond it wait.
MAX_IN_FLIGHT: Final = 1024

# Closed blocks a pod keeps for the operator to read (an hour at blockSeconds' default 2);
# older ones are dropped with a gap that says so, never silently.
MAX_BLOCKS: Final = 1800

# On SIGTERM a pod stops sending and waits this long for requests in flight.
DRAIN_SECONDS: Final = 10.0
