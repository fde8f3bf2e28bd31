"""One `up` or `down` at a time per state directory, one fetch at a time per cache entry.

Why: two test sessions (or a test session and `make cluster-up`) may start at once; without
a lock both would see "not up", and the second would wipe the first one's etcd data while
it starts. With it, the second waits, then finds the cluster up and reuses it. Clusters of
different state directories share ~/.cache/specdecode, whose fetches lock a file there.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from localcluster.paths import ClusterPaths


@contextmanager
def cluster_lock(paths: ClusterPaths) -> Iterator[None]:
    """Hold an exclusive flock on ``<state dir>/.lock`` for the duration of the block."""
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    with file_lock(paths.state_dir / ".lock"):
        yield


@contextmanager
def file_lock(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive flock on ``lock_file`` (created if needed) for the block."""
    with lock_file.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
