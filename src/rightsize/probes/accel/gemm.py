"""Plain fp32 matrix products for the hand-written training steps, on the faster CPU kernel.

``torch.mm`` on CPU calls MKL's sgemm, which on the AMD EPYC (AVX-512) benchmark machine runs
the probes' skinny weight products (``34 x 1024 @ 1024 x 1024``) at ~85 GFLOP/s on one
thread. The oneDNN library bundled with the same torch build picks its kernel from the CPU's
instruction set and runs the same products at 160-210 GFLOP/s. Its plain fp32 entry point is
``torch.ops.mkldnn._linear_pointwise(x, w, None, "none", [], "")`` = ``x @ w.T`` (strict fp32,
no reduced-precision mode; a different summation order, so results agree with ``torch.mm``
to float32 rounding, not bit for bit).

Which of the two is faster depends on the CPU (an Intel Xeon with AMX runs the same products
1.3-1.45x faster through MKL), so oneDNN is used only where it is this machine's route
(:mod:`.gemm_route`: measured once per machine and kept, so the route, and with it the last
bits of a model, does not change from run to run) or forced on (:func:`set_onednn`).
:func:`mm` and :func:`linear` use it when it applies: CPU, float32, 2-D, no autograd graph,
at least ``MIN_MACS`` multiply-adds, and both operands row- or column-major (a strided slice
such as one head's columns of a weight sends oneDNN to a reference path ~1000x slower).
Everywhere else they fall back to ``torch.mm`` / ``F.linear``: other devices, float64 (the
gradient tests), builds without oneDNN, small products where oneDNN's per-call set-up
costs more than it saves, and accelerators off (``train.accelerate: false``,
:func:`rightsize.probes.accel.use`). The textbook forwards call :func:`mm` for their
weight-sized products too (:meth:`rightsize.probes.models.featurenorm.FeatureNorm.lift`).
"""

from __future__ import annotations

import torch

from rightsize.probes.accel import enabled

_PRIVATE = {"linear_pointwise": getattr(getattr(torch.ops, "mkldnn", None),
                                         "_linear_pointwise", None)}
_AVAILABLE = torch.backends.mkldnn.is_available()
_FORCED: dict[str, bool | None] = {"onednn": None}     # None: this machine's route
_BY_THREADS: dict[int, bool] = {}                     # the machine's route per torch threads
MIN_MACS = 1 << 20   # multiply-adds below which MKL's lower call overhead wins (measured)


def onednn_available() -> bool:
    """True when this torch build has oneDNN's plain fp32 linear."""
    return _AVAILABLE and _PRIVATE["linear_pointwise"] is not None


def onednn_enabled() -> bool:
    """True when :func:`mm` routes float32 CPU products to oneDNN in this process: available,
    and forced on (:func:`set_onednn`) or this machine's route (:mod:`.gemm_route`)."""
    if not onednn_available():
        return False
    forced = _FORCED["onednn"]
    if forced is not None:
        return forced
    threads = torch.get_num_threads()
    if threads not in _BY_THREADS:
        from rightsize.probes.accel.gemm_route import machine_route

        choice = machine_route(_PRIVATE["linear_pointwise"])
        _BY_THREADS[threads] = choice["route"] == "onednn"
    return _BY_THREADS[threads]


def route() -> str:
    """The route :func:`mm` takes in this process at the current threads: ``onednn`` or
    ``mkl``."""
    return "onednn" if onednn_enabled() else "mkl"


def route_words() -> str:
    """The route in words, for a run's record: ``onednn`` or ``mkl`` and why."""
    if not onednn_available():
        return "mkl (this torch build has no oneDNN fp32 linear)"
    forced = _FORCED["onednn"]
    if forced is not None:
        return f"{'onednn' if forced else 'mkl'} (forced)"
    from rightsize.probes.accel.gemm_route import machine_route

    choice = machine_route(_PRIVATE["linear_pointwise"])
    return f"{choice['route']} ({choice['source']})"


def set_onednn(enabled: bool | None) -> bool | None:
    """Force the oneDNN route on or off (A/B measurements and tests), or ``None``: this
    machine's route again; returns the previous setting."""
    old = _FORCED["onednn"]
    _FORCED["onednn"] = None if enabled is None else bool(enabled)
    return old


def _plain(t: torch.Tensor) -> bool:
    """Row- or column-major without gaps: other strides send oneDNN to a ~1000x slower path."""
    return t.is_contiguous() or t.t().is_contiguous()


def routes(m: int, k: int, n: int, like: torch.Tensor) -> bool:
    """True when an ``(m, k) @ (k, n)`` product of ``like``'s dtype and device, with plain
    operands and no autograd graph, takes the oneDNN route."""
    return (onednn_enabled() and enabled() and like.dtype == torch.float32
            and like.device.type == "cpu"
            and min(m, n) >= 8 and m * k * n >= MIN_MACS)


def _applies(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.dim() == 2 and b.dim() == 2 and b.dtype == a.dtype and b.device == a.device
            and routes(a.shape[0], a.shape[1], b.shape[1], a) and _plain(a) and _plain(b)
            and not (torch.is_grad_enabled() and (a.requires_grad or b.requires_grad)))


def mm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """``a @ b`` for 2-D ``a`` (m, k) and ``b`` (k, n), optionally written into ``out``.

    oneDNN has no ``out=`` form: with ``out`` its fresh result is copied in. For the weight
    gradients of the hand-written steps (``d_out.T @ inputs`` over a basis, inner dimension
    ~34, a 4 MB result at fusion_dim 1024) that still beats MKL writing in place on the AMD
    EPYC benchmark machine: 0.375 vs 0.646 ms, and a fusion_dim-1024 fused step 26 -> 22 ms.
    (An Intel Xeon measured the reverse earlier, 0.87 vs 0.41 ms; the route follows the
    machine this project is benchmarked on.)
    """
    if not _applies(a, b):
        return torch.mm(a, b) if out is None else torch.mm(a, b, out=out)
    res = _PRIVATE["linear_pointwise"](a, b.t(), None, "none", [], "")
    return res if out is None else out.copy_(res)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
           ) -> torch.Tensor:
    """``x @ weight.T + bias`` for 2-D ``x`` (m, k) and ``weight`` (n, k)."""
    if not _applies(x, weight.t()):
        return torch.nn.functional.linear(x, weight, bias)
    return _PRIVATE["linear_pointwise"](x, weight, bias, "none", [], "")
