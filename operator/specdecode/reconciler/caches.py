"""The process' caches, by their old name: they live in `adapters.process_caches`, beside
the other per-process memories (`EngineVersions`, `EngineSeriesMemory`), so observe and
act both use them without a call into another reconciler module."""

from __future__ import annotations

from specdecode.adapters.process_caches import GuardReads, LoadPodCache, WriteEcho

__all__ = ["GuardReads", "LoadPodCache", "WriteEcho"]
