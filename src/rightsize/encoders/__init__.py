"""The encoders' room: the models and their input preprocessing, shared by sizing and extraction.

* :mod:`~rightsize.encoders.models` — HuBERT-ECG and EchoJEPA as specs (sizes, input
  geometry, token and FLOP arithmetic) and built from ``transformers`` configs; the only
  package that imports ``transformers``.
* :mod:`~rightsize.encoders.preprocess` — the ECG preprocessing path (HuBERT-ECG's recipe),
  one function that the encoder bench times and ``rightsize extract`` runs.

Imports the ground only; ``sizing`` (the bench, the plan) and ``extraction`` import it.
"""
