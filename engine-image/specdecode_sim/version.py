"""The vLLM release this simulator imitates (CLI, validation, metric names, /version).

Kept as a constant inside the package because the container image does not ship
engine-image/VLLM_VERSION; a unit test checks the two and the real Dockerfile agree.
"""

from __future__ import annotations

IMITATED_VLLM_VERSION = "0.11.2"
