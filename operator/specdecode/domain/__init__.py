"""Pure, synchronous rollout logic: the state machine, decide(), gate statistics. No I/O."""
