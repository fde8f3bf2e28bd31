"""Adapters to the outside world: Kubernetes, Prometheus, engines (shadow traffic), templates."""
