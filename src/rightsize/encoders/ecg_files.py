"""12-lead ECG records on disk: WFDB ``.hea`` + ``.dat`` read with the ``wfdb`` package.

A record is read whole, in physical units (mV), and its leads are picked **by name** in the
standard order :data:`LEADS` (I, II, III, aVR, aVL, aVF, V1-V6), whatever order the file stores
them in (MIMIC-IV-ECG stores aVF before aVL). Names match case-insensitively. A record that
cannot be read, lacks a standard lead, names one twice or holds NaN raises
:class:`BadRecord` naming the record and the reason; the caller decides whether that stops
the run. :func:`record_files` lists the files a record is made of (its identity on rerun).

:func:`write_ecg` writes a record the way MIMIC-IV-ECG stores one (format 16, 12 leads, the
MIMIC lead order), so the encoder bench, the demo corpus and the tests read what a real run
reads.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: The 12 standard leads, in the order every model input uses.
LEADS: tuple[str, ...] = ("I", "II", "III", "aVR", "aVL", "aVF",
                          "V1", "V2", "V3", "V4", "V5", "V6")
#: The order MIMIC-IV-ECG's headers list them (aVF before aVL): what :func:`write_ecg` writes.
MIMIC_ORDER: tuple[str, ...] = ("I", "II", "III", "aVR", "aVF", "aVL",
                                "V1", "V2", "V3", "V4", "V5", "V6")
ADC_GAIN = 1000.0          # ADC units per mV written by write_ecg (1 uV resolution)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """wfdb's pandas calls warn of pandas 4 changes on import and on every header: not ours."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        yield


def load_wfdb() -> Any:
    """The ``wfdb`` module, imported on first use (quietly)."""
    with _quiet():
        import wfdb
    return wfdb


class BadRecord(ValueError):
    """A record that cannot become a model input; ``reason`` is one of a few short kinds."""

    def __init__(self, record: str, reason: str, detail: str) -> None:
        super().__init__(f"{record}: {reason}: {detail}")
        self.record = record
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class EcgRecord:
    """One record's 12 standard leads as ``(12, samples)`` float64 mV at ``fs`` Hz."""

    signal: np.ndarray
    fs: float


def read_ecg(path: Path | str, name: str | None = None) -> EcgRecord:
    """Read the WFDB record ``path`` (without extension) and pick the 12 standard leads by name.

    ``name`` labels errors (default: the path). Raises :class:`BadRecord` with reason
    ``unreadable`` (missing or damaged header or signal file), ``missing lead``, ``duplicate
    lead`` (two signals whose names differ only in case) or ``NaN``.
    """
    label = name or str(path)
    try:
        with _quiet():
            rec = load_wfdb().rdrecord(str(path))
    except Exception as exc:  # wfdb raises many kinds (OSError, ValueError, IndexError, ...)
        raise BadRecord(label, "unreadable", f"{type(exc).__name__}: {exc}") from None
    names = [str(s) for s in (rec.sig_name or [])]
    by_name: dict[str, int] = {}
    for i, s in enumerate(names):
        if s.lower() in by_name:
            raise BadRecord(label, "duplicate lead", f"signals {names[by_name[s.lower()]]} "
                            f"and {s} name the same lead (names match case-insensitively)")
        by_name[s.lower()] = i
    missing = [lead for lead in LEADS if lead.lower() not in by_name]
    if missing:
        raise BadRecord(label, "missing lead",
                        f"no {', '.join(missing)} among {', '.join(names) or 'no signals'}")
    if rec.p_signal is None or not rec.fs:
        raise BadRecord(label, "unreadable", "no physical signal or sampling rate")
    signal = np.ascontiguousarray(rec.p_signal.T[[by_name[lead.lower()] for lead in LEADS]],
                                  dtype=np.float64)
    if np.isnan(signal).any():
        lead = LEADS[int(np.flatnonzero(np.isnan(signal).any(axis=1))[0])]
        raise BadRecord(label, "NaN", f"lead {lead} holds NaN samples")
    return EcgRecord(signal, float(rec.fs))


def record_files(path: Path | str) -> list[Path]:
    """The files WFDB record ``path`` (no extension) is made of: its ``.hea`` and the signal
    files its header names (each segment's header and signal files for a multi-segment
    record), in header order, without repeats. A header that cannot be read or parsed gives
    what was found so far (its own identity still changes when it is fixed)."""
    return _record_files(Path(f"{path}.hea"), nested=False)


def _record_files(hea: Path, nested: bool) -> list[Path]:
    files = [hea]
    try:
        text = hea.read_text(encoding="latin-1")
    except OSError:
        return files
    lines = [x.split() for x in text.splitlines() if x.strip() and not x.lstrip().startswith("#")]
    if not lines:
        return files
    head = lines[0]
    try:
        if "/" in head[0]:                                    # name/segments: multi-segment
            if nested:
                return files
            for line in lines[1:1 + int(head[0].split("/")[1])]:
                if line[0] != "~":                            # "~": a gap, no file
                    files += [f for f in _record_files(hea.parent / f"{line[0]}.hea", True)
                              if f not in files]
            return files
        for line in lines[1:1 + int(head[1])]:
            f = hea.parent / line[0]
            if line[0] != "~" and f not in files:
                files.append(f)
    except (IndexError, ValueError):
        pass
    return files


def write_ecg(path: Path, signal_mv: np.ndarray, fs: float,
              leads: tuple[str, ...] = MIMIC_ORDER, comments: tuple[str, ...] = ()) -> None:
    """Write ``(12, samples)`` mV in :data:`LEADS` order as WFDB format 16 at ``path``.

    The header lists ``leads`` (default: MIMIC-IV-ECG's order); rows are permuted to match.
    ``comments`` become header comment lines.
    """
    if signal_mv.shape[0] != len(LEADS):
        raise ValueError(f"{path}: want {len(LEADS)} leads, got {signal_mv.shape[0]}")
    order = [LEADS.index(lead) for lead in leads]
    path.parent.mkdir(parents=True, exist_ok=True)
    digital = np.clip(np.round(signal_mv[order].T * ADC_GAIN), -32767, 32767).astype(np.int32)
    with _quiet():
        load_wfdb().wrsamp(path.name, fs=fs, units=["mV"] * len(leads),
                           sig_name=list(leads), d_signal=digital, fmt=["16"] * len(leads),
                           adc_gain=[ADC_GAIN] * len(leads), baseline=[0] * len(leads),
                           write_dir=str(path.parent), comments=list(comments))
