"""Shadow load in its own pods: replays the paired request stream and times every chunk.

Run as `specdecode-load` in pods the operator creates per analysis stage (see README).
"""
