#!/usr/bin/env bash
# Record the `vllm serve` parser of every supported vLLM release (api/vllm_versions.py:
# 0.11.2 and the latest patch of each minor to 0.33) without installing any of them: each
# wheel is downloaded (no dependencies), read by tools/vllm_parse_spellings.py --wheel on
# the real-vLLM lane's interpreter, and deleted. 0.32.0 is the lane's installed release
# and is recorded from it (run the tool without --wheel). Then regenerate the tables:
#     .venv/bin/python tools/engine_flag_table.py
# Usage, from the repository root: bash tools/record_vllm_releases.sh [VERSION...]
set -euo pipefail
RELEASES=(0.11.2 0.12.0 0.13.0 0.14.1 0.15.1 0.16.0 0.17.1 0.18.1 0.19.1 0.20.2 0.21.0
  0.22.1 0.23.0 0.24.0 0.25.1 0.26.0 0.27.1 0.28.0 0.29.0 0.30.0 0.31.0 0.33.0)
PYTHON=${VLLM_PYTHON:-$(ls -d "$HOME"/.cache/specdecode/vllm-0.32.0*/bin/python | head -n 1)}
WHEELS=$(mktemp -d)
trap 'rm -rf "$WHEELS"' EXIT
for version in "${@:-${RELEASES[@]}}"; do
  pip download --quiet --no-deps "vllm==$version" -d "$WHEELS"
  "$PYTHON" tools/vllm_parse_spellings.py --wheel "$WHEELS"/vllm-"$version"-*.whl
  rm -f "$WHEELS"/vllm-"$version"-*.whl
done
