#!/usr/bin/env bash
# Installs the Debian packages the local cluster and tests need, only when missing:
# prometheus (2.42 in bookworm; file_sd only) and lua5.1 (runs the Argo CD health check).
set -euo pipefail
need=()
command -v prometheus >/dev/null || need+=(prometheus)
command -v lua5.1 >/dev/null || need+=(lua5.1)
command -v go >/dev/null || need+=(golang-go)
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${need[*]}" >&2
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
# Debian's postinst may start a prometheus service on :9090; the harness runs its own.
$sudo pkill -x prometheus 2>/dev/null || true
