"""Ground: every public source file rightsize cites, spelled once (docs/sizing.md lists them).

A citation names a repository, a path in it and the commit at which the path was checked
against the public repository. Code, params comments, docs and metrics text cite through
:func:`cite` (or copy its output verbatim), so one spelling exists per source;
``tests/project/test_citations.py`` fails on any other spelling of the same file.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CitedFile:
    """One file of a public repository, at the commit it was checked at."""

    repository: str
    path: str
    commit: str
    what: str

    def text(self) -> str:
        """``owner/repo path@commit7``: how every output names this file."""
        return f"{self.repository} {self.path}@{self.commit[:7]}"


HUBERT_REPO = "Edoar-do/HuBERT-ECG"
ECHOJEPA_REPO = "bowang-lab/EchoJEPA"
_HUBERT_AT = "affe1f94d06d61a346fa7520be441af5642616b4"
_ECHOJEPA_AT = "70a8a7ab0b965a0b9499b26e28593a3a274e3670"

#: Every cited file by a short name.
FILES: dict[str, CitedFile] = {
    "hubert_dataset": CitedFile(
        HUBERT_REPO, "code/dataset.py", _HUBERT_AT,
        "ECGDataset.__getitem__: crop, flatten the 12 leads lead after lead, decimate"),
    "hubert_utils": CitedFile(
        HUBERT_REPO, "code/utils.py", _HUBERT_AT,
        "ecg_preprocessing: FIR band-pass 0.05-47 Hz, resample to 500 Hz, scaling"),
    "hubert_readme": CitedFile(
        HUBERT_REPO, "README.md", _HUBERT_AT,
        "recommends preprocessing every ECG with ecg_preprocessing (code/utils.py) first"),
    "echojepa_eval": CitedFile(
        ECHOJEPA_REPO, "configs/eval/vitl/echojepa_lvef.yaml", _ECHOJEPA_AT,
        "ViT-L LVEF evaluation: resolution 224, frames_per_clip 16, num_segments 2"),
    "echojepa_inference": CitedFile(
        ECHOJEPA_REPO, "configs/inference/vitl/echojepa_large_lvef.yaml", _ECHOJEPA_AT,
        "ViT-L LVEF inference ('keep identical to training config'): resolution 336, "
        "frames_per_clip 16, num_segments 2"),
}


def cite(name: str) -> str:
    """The one spelling of cited file ``name`` (a key of :data:`FILES`)."""
    return FILES[name].text()
