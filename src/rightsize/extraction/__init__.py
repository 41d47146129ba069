"""Extraction: token-level HuBERT-ECG hidden states from WFDB records, in resumable shards.

* :mod:`~rightsize.extraction.record_list` — the record list (MIMIC-IV-ECG layout), shards, tasks.
* :mod:`~rightsize.extraction.worker` — one worker: model once, shards read, encoded, written.
* :mod:`~rightsize.extraction.shards` — a shard's parquet file and its JSON record; validity.
* :mod:`~rightsize.extraction.plan` — what is left (both executors ask it); the plan.
* :mod:`~rightsize.extraction.run` — the local executor's worker processes.
* :mod:`~rightsize.extraction.finalize`, :mod:`~rightsize.extraction.report` — index, errors,
  SHA256SUMS once complete; the run's metrics (either executor's).
* :mod:`~rightsize.extraction.demo_corpus` — the synthetic corpus of the default pipeline.

Imports the ground (:mod:`rightsize.ground`: the event writer, SHA-256) and
:mod:`rightsize.encoders` (the models and the preprocessing the encoder bench times). No CLI,
no DVC.
"""
