"""Verbs: report (experiments (placeholder until it lands))."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add this module's verbs to the rightsize parser."""
