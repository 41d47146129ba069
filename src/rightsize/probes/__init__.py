"""Probe library: the four probes, evaluation, footprint and sizing. No DVC knowledge."""
