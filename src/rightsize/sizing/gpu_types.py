"""GPU types a team can reserve: published dense bf16 tensor-core peak, memory, datasheet.

``sizing.estimate.gpu`` names one of these presets (its peak is never free text), and
``sizing.gpu_types`` lists the ones compared side by side. The peaks are the vendor's
*dense* bf16 tensor-core figures (the datasheets print the 2:4-sparsity figure, twice the
dense one, with an asterisk); memory is the board's. A committed GPU file whose GPU name
contains one of a type's ``aliases`` is that type measured, and outranks its estimate.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuType:
    """One reservable GPU: name, dense bf16 peak (TFLOP/s), memory (GB), source, aliases."""

    name: str
    bf16_dense_tflops: float
    memory_gb: int
    source: str
    aliases: tuple[str, ...]

    def matches(self, gpu_name: str) -> bool:
        """Whether a measured GPU's name (``hardware.gpu`` of a GPU file) is this type."""
        low = gpu_name.lower() + " "
        return any(a.lower() in low for a in self.aliases)


_NV = "NVIDIA datasheet, "
#: The presets, by the name params use.
GPU_TYPES: dict[str, GpuType] = {t.name: t for t in (
    GpuType("A100 SXM", 312.0, 80,
            _NV + "A100 Tensor Core GPU (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): "
            "BFLOAT16 Tensor Core 312 TFLOPS dense (624 with sparsity), 80 GB HBM2e",
            ("A100",)),
    GpuType("H100 SXM", 989.0, 80,
            _NV + "H100 Tensor Core GPU (resources.nvidia.com/en-us-tensor-core/"
            "nvidia-tensor-core-gpu-datasheet): BFLOAT16 Tensor Core 1,979 TFLOPS with "
            "sparsity = 989 dense, 80 GB HBM3 (SXM)", ("H100",)),
    GpuType("L40S", 362.05, 48,
            _NV + "L40S (resources.nvidia.com/en-us-l40s/l40s-datasheet-28413): BF16 Tensor "
            "Core 362.05 TFLOPS dense (733 with sparsity), 48 GB GDDR6", ("L40S",)),
    GpuType("L4", 121.0, 24,
            _NV + "L4 Tensor Core GPU (resources.nvidia.com/en-us-data-center-overview/"
            "l4-gpu-datasheet): BF16 Tensor Core 242 TFLOPS with sparsity = 121 dense, "
            "24 GB GDDR6", ("L4 ",)),
)}


def type_of(gpu_name: str) -> GpuType | None:
    """The preset a measured GPU name belongs to (``None``: none of them)."""
    hits = [t for t in GPU_TYPES.values() if t.matches(gpu_name)]
    return hits[0] if len(hits) == 1 else None
