"""Telemetry library: records -> events -> runs -> cost. No DVC knowledge."""
