"""The resource contract: pydantic models of SpecDecodeRollout spec and status (the CRD is generated from them)."""
