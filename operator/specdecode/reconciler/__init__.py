"""The reconcile sequence: observe, decide (pure domain), apply through adapters."""
