"""Probe library: the four probes, seed replicas, evaluation and footprint. No DVC knowledge."""
