"""Sizing library: measure the encoders' real shapes, then size a re-extraction from the files.

* :mod:`~rightsize.sizing.encoders` — the shape-matched encoders (HuBERT-ECG, EchoJEPA) as
  specs, their conv-stack token arithmetic and analytic FLOP counts; builds them with
  random weights from ``transformers`` configs (the only place ``transformers`` is imported).
* :mod:`~rightsize.sizing.bench` — one encoder measured on one device: tokens, bytes,
  FLOPs, records/s and peak memory per batch size.
* :mod:`~rightsize.sizing.preprocess` — the ECG loading/preprocessing path, per CPU core.
* :mod:`~rightsize.sizing.plan` — scenarios sized from bench files (no model, no torch).

No CLI, no DVC: verbs parse params and call these functions.
"""
