"""specdecode-operator: gates vLLM speculative decoding on measured acceptance and tail latency."""
