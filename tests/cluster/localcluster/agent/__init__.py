"""A node agent that plays kubelet for the local cluster's fake GPU nodes.

It registers Node objects, keeps their Lease and Ready condition fresh, and runs every pod
bound to them as local processes on the pod's own loopback address (127.0.0.N), mapping
container images to local commands through `images.py`. Pure parts (variable expansion, env
resolution, the image table, probes, back-off, the IP allocator, Prometheus file SD and pod
status) are separate modules so unit tests need no cluster.
"""
