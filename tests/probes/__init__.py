"""Tests of the probe engine (rightsize.probes, rightsize.measure, verbs/probes)."""
