"""Cohort library: manifest build and validation. No DVC knowledge."""
