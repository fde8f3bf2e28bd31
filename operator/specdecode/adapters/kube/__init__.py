"""Kubernetes adapter: clients, children (apply, prune, observe), the resource's status."""
