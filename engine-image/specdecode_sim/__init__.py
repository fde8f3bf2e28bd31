"""specdecode-sim: a vLLM-compatible engine simulator that models speculative decoding."""
