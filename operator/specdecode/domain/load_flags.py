"""The load pods' settings that the CRD does not carry: each value defined once, here.

A load pod's flags have one owner each. Values a user may set (seed, max tokens, sampling,
request timeout, block length, the prompt source) belong to the rollout's spec
(`api/traffic.py`); `specdecode-load` has no default for them, because a second default
could only drift from the CRD's (it did: `--request-timeout` 600 against
`requestTimeoutSeconds` 120). The values below are the operator's and the load program's
own, so both read them from here: the operator renders every one into the pod's argv (an
image set in `loadGenerator.image` may be of another version, whose defaults could
differ), and `specdecode-load` defaults to them for a run by hand. Pure constants: the
load pods may import the domain but not the API (pyproject's import-linter contracts).
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
