"""The sizing ask's job script: the slurm executor's generator with the ask's numbers."""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from rightsize.encoders.compute_dtype import resolve
from rightsize.extraction.config import ExtractConfig
from rightsize.extraction.slurm import SlurmConfig, ask_job, job_script, time_limit_s
from rightsize.verbs.extract_slurm import task_command
from rightsize.verbs.sizing import ASK_TASK_COMMAND


def ask_job_script(ask: dict, host_cores: int, mem_mb: int = 8192) -> str:
    return job_script(ask_job(ask, host_cores, ASK_TASK_COMMAND, Path("out/slurm"), mem_mb))


def _ask(choice: str, wall_high: float, gpus: int | None = None) -> dict:
    return {"choice": choice, "gpus_chosen": gpus,
            "option": {"wall_s_low": wall_high / 2, "wall_s_high": wall_high},
            "gpu": {"cpu_cores_per_gpu": 8, "gpus": 8}}


def _directives(script: str) -> list[str]:
    return [ln.removeprefix("#SBATCH ") for ln in script.splitlines() if ln.startswith("#SBATCH")]


def test_gpu_ask_is_one_task_per_gpu() -> None:
    d = _directives(ask_job_script(_ask("gpu", 3 * 3600.0, gpus=4), host_cores=2))
    assert "--array=0-3" in d and "--gres=gpu:1" in d and "--cpus-per-task=8" in d, d
    minutes = -(-time_limit_s(3 * 3600.0) // 60)
    assert f"--time=0-{int(minutes) // 60:02d}:{int(minutes) % 60:02d}:00" in d, d


def test_cpu_ask_is_one_task_on_the_hosts_cores_without_gres() -> None:
    script = ask_job_script(_ask("cpu", 120.0), host_cores=2)
    d = _directives(script)
    assert "--array=0" in d and "--cpus-per-task=2" in d, d
    assert not [x for x in d if x.startswith(("--gres", "--chdir"))], d
    assert "/work" not in script and '--task "${SLURM_ARRAY_TASK_ID}/1"' in script


def test_task_command_runs_locally_on_the_tasks_cores() -> None:
    cfg = ExtractConfig(records="r.csv", root=".", threads_per_worker=2, skip_bad=True,
                        slurm=SlurmConfig(cpus_per_task=8))
    args = argparse.Namespace(params="p.yaml", out="o", events=None, metrics="m.json",
                              headline=None, dry_run=True, task=None)
    here = resolve("auto", "cpu").dtype        # the tasks compute in the submitter's dtype
    assert task_command(args, cfg, program=("rightsize",)) == (
        "rightsize", "extract", "--params", "p.yaml", "--out", "o", "--skip-bad",
        "--workers", "4", "--compute-dtype", here, "--executor", "local")
    forced = dataclasses.replace(cfg, compute_dtype="float32")
    assert "float32" in task_command(args, forced, program=("rightsize",))


def test_sbatch_accepts_the_cpu_ask(slurm_cluster: None, tmp_path: Path) -> None:
    path = tmp_path / "ask.sh"
    path.write_text(ask_job_script(_ask("cpu", 120.0), host_cores=1, mem_mb=100))
    proc = subprocess.run(["sbatch", "--test-only", str(path)], capture_output=True, text=True,
                          cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr


def test_the_sizing_verb_writes_the_asks_script(tmp_path: Path) -> None:
    """`rightsize sizing --job-script` writes the script of the ask it computed."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sizing"))
    from sizing_fixtures import SIZING_BLOCK, bench_dict, write_manifest, write_params

    from rightsize.cli import main

    enc, gpu = tmp_path / "encoders", tmp_path / "gpu"
    enc.mkdir()
    gpu.mkdir()
    (enc / "ecg.json").write_text(json.dumps(bench_dict()))
    (enc / "echo.json").write_text(json.dumps(bench_dict("echojepa", "vitl",
                                                          preprocess_rate=None)))
    manifest = write_manifest(tmp_path / "m.parquet", [True, True, False, True], [2, 0, 3, 1])
    params = write_params(tmp_path / "params.yaml",
                          disk={**SIZING_BLOCK["disk"], "path": str(tmp_path)})
    out, script = tmp_path / "sizing.json", tmp_path / "metrics" / "sizing_job.sh"
    assert main(["sizing", "--params", str(params), "--manifest", str(manifest),
                 "--bench-dir", str(enc), "--gpu-dir", str(gpu), "--json", str(out),
                 "--job-script", str(script), "-q"]) == 0
    ask = json.loads(out.read_text())["ask"]
    assert ask["choice"] == "cpu"
    assert script.read_text() == ask_job_script(ask, host_cores=json.loads(
        out.read_text())["hardware"]["cores"]).replace("out/slurm", "data/ecg_tokens/slurm")
