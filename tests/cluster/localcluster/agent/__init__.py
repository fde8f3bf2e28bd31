"""A node agent that plays kubelet for the local cluster's fake GPU nodes.

It registers Node objects, keeps their Lease and Ready condition fresh, and runs every pod
bound to them as local processes on the pod's own IP, mapping container images to local
commands through `images.py`. Pods live in the cluster's network namespace (IPs from its
10.244.<n>.0/24, see `netns.py`), or on host loopback addresses when the harness could not
make one. Pure parts (variable expansion, env
resolution, the image table, probes, back-off, the IP allocator, Prometheus file SD and pod
status) are separate modules so unit tests need no cluster.
"""
