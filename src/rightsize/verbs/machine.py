"""Verb: machine (the fingerprint every measuring stage depends on)."""

from __future__ import annotations

import argparse

from rightsize import console

_EPILOG = """\
example:
  rightsize machine --json metrics/machine.json --disk-json metrics/machine_disk.json --disk .

The same bytes on every run on the same machine (no clock, load or free space), so the
`machine` stage (always_changed in dvc.yaml) leaves every stage alone until the host, its
GPUs, the torch/numpy builds, a kernel- or thread-picking variable, or the filesystem under
a --disk path changes; then exactly the stages that measure re-run.
"""


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Add the ``machine`` verb to the rightsize parser."""
    mc = sub.add_parser(
        "machine", parents=[common], help="fingerprint of this machine (what measurements "
                                          "depend on)",
        description="Write this machine's fingerprint: CPU model and instruction sets, cores, "
                    "memory, NVIDIA GPUs and driver, torch/numpy/BLAS builds and the numeric "
                    "environment variables, with its id and a line of words; and the "
                    "filesystem and device under each --disk path.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    mc.add_argument("--json", required=True,
                    help="the host fingerprint JSON ('-' prints it on stdout)")
    mc.add_argument("--disk-json", help="the filesystem under each --disk path, as JSON")
    mc.add_argument("--disk", action="append", default=[], metavar="PATH",
                    help="a path whose disk a stage measures (repeatable; default .)")
    mc.set_defaults(func=run_machine)


def run_machine(args: argparse.Namespace) -> int:
    """``rightsize machine``: write the fingerprint (and the disks') JSON."""
    from rightsize.atomic import check_writable
    from rightsize.machine import disk, host, stamp

    check_writable(args.disk_json)
    fp = host()
    console.emit_json(args.json, {**stamp(fp), "fingerprint": fp})
    if args.disk_json:
        paths = list(dict.fromkeys(args.disk or ["."]))
        console.emit_json(args.disk_json, {"disks": [disk(p) for p in paths]})
    if args.json != "-":
        console.info(f"machine {stamp(fp)['id']}: {stamp(fp)['words']}")
    return 0
