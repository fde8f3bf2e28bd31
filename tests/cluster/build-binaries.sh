#!/usr/bin/env bash
# Builds the local control plane's binaries from Go modules, once per pinned version.
#
# Why a script of our own: k8s.io/kubernetes cannot be `go install`ed (its go.mod has
# replace lines), so gobuild/kube/go.mod replaces each staging module with its published
# tag. Binaries are cached outside the repo under $SPECDECODE_CACHE/bin/<key>, where the key
# hashes every pinned input, so a second run is free and a version bump rebuilds.
# GOMODCACHE and GOCACHE are left where the machine keeps them, so even a rebuild is warm.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=v1.34.4
ETCD_VERSION=v3.6.4
HELM_VERSION=v3.19.5
cache=${SPECDECODE_CACHE:-$HOME/.cache/specdecode}
key=$( (echo "$K8S_VERSION $ETCD_VERSION $HELM_VERSION $(go env GOVERSION)"; cat "$here/gobuild/kube/go.mod" "$here/gobuild/kube/go.sum" "$0") | sha256sum | cut -c1-12)
bin="$cache/bin/k8s-$K8S_VERSION-$key"
want=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl helm)

have_all() { for b in "${want[@]}"; do [ -x "$bin/$b" ] || return 1; done; }
if have_all; then
  echo "$bin"
  exit 0
fi

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# One build at a time: a second caller (a test fixture, `make cluster-up`) waits here and then
# reuses the result, instead of racing on $bin.partial and deleting the first one's output.
mkdir -p "$cache/bin"
exec 9>"$cache/bin/.build.lock"
if ! flock -n 9; then
  log "another build of the binaries is running; waiting for it"
  flock 9
fi
if have_all; then
  echo "$bin"
  exit 0
fi
mkdir -p "$bin.partial"
build_started=$SECONDS
# build-times.txt records how long each binary took (read by benchmarks/cluster.py).
times="$bin.partial/build-times.txt"
# The size of Go's build cache before the build says whether this was a cold build.
[ -f "$times" ] || printf 'started %s\ngocache_mib_before %d\n' "$(date -u +%FT%TZ)" \
  "$(( $(du -sk "$(go env GOCACHE)" 2>/dev/null | cut -f1 || echo 0) / 1024 ))" >"$times"
export CGO_ENABLED=0
jobs=${SPECDECODE_BUILD_JOBS:-2}
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
ldk8s=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldk8s+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldk8s+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

build() { # name package ldflags
  local name=$1 pkg=$2 flags=$3
  [ -x "$bin.partial/$name" ] && { log "$name: already built"; return; }
  log "$name: building $pkg (cold builds take minutes on 2 cores)"
  local t0=$SECONDS
  if ! (cd "$here/gobuild/kube" && go build -p "$jobs" -trimpath -ldflags "-s -w $flags" -o "$bin.partial/$name" "$pkg") >"$bin.partial/$name.log" 2>&1; then
    log "$name: FAILED; last lines of $bin.partial/$name.log:"
    tail -n 30 "$bin.partial/$name.log" >&2
    exit 1
  fi
  log "$name: done in $((SECONDS - t0)) s"
  printf '%s %d\n' "$name" "$((SECONDS - t0))" >>"$times"
}

log "downloading modules (GOMODCACHE=$(go env GOMODCACHE))"
(cd "$here/gobuild/kube" && go mod download) >&2
build etcd go.etcd.io/etcd/server/v3 ""
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$ldk8s"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$ldk8s"
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$ldk8s"
build kubectl k8s.io/kubernetes/cmd/kubectl "$ldk8s"

if [ ! -x "$bin.partial/helm" ]; then
  log "helm: building helm.sh/helm/v3@$HELM_VERSION"
  t0=$SECONDS
  hminor=$minor
  if ! GOBIN="$bin.partial" go install -trimpath \
      -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$hminor -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$hminor" \
      "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >"$bin.partial/helm.log" 2>&1; then
    log "helm: FAILED"; tail -n 30 "$bin.partial/helm.log" >&2; exit 1
  fi
  log "helm: done in $((SECONDS - t0)) s"
  printf 'helm %d\n' "$((SECONDS - t0))" >>"$times"
fi
printf 'total %d\n' "$((SECONDS - build_started))" >>"$times"
rm -rf "$bin" && mv "$bin.partial" "$bin"
log "all binaries in $bin"
echo "$bin"
