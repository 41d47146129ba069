"""Sizing library: measure the encoders' real shapes, then size a re-extraction from the files.

* :mod:`~rightsize.sizing.bench` — one encoder measured on one device: tokens, bytes,
  FLOPs, records/s and peak memory per batch size.
* :mod:`~rightsize.sizing.plan` — scenarios sized from bench files (no model, no torch).

The encoders themselves and their preprocessing live in :mod:`rightsize.encoders`, which
``rightsize extract`` shares. No CLI, no DVC: verbs parse params and call these functions.
"""
