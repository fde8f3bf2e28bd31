"""One `up` or `down` at a time per state directory.

Why: two test sessions (or a test session and `make cluster-up`) may start at once; without
a lock both would see "not up", and the second would wipe the first one's etcd data while
it starts. With it, the second waits, then finds the cluster up and reuses it.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager

from localcluster.paths import ClusterPaths


@contextmanager
def cluster_lock(paths: ClusterPaths) -> Iterator[None]:
    """Hold an exclusive flock on ``<state dir>/.lock`` for the duration of the block."""
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    with (paths.state_dir / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
