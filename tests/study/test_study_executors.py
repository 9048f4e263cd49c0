"""`posbias study run --executor local|ray|slurm` on a 2-base × 2-configuration CPU study: the
same report cells under each, units resumed after a failure, `posbias study status`."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from ray_helpers import local_ray
from study_fixtures import WORDS, write_task, write_train_data

from hf_posbias.cli import main

pytestmark = pytest.mark.slow  # trains 4 tiny runs and evaluates 6 models per executor


@pytest.fixture(scope="module")
def small_spec(tmp_path_factory) -> str:
    from hf_posbias.testing import build_tiny_checkpoint

    root = tmp_path_factory.mktemp("executors")
    bases = [
        build_tiny_checkpoint("bert", root / f"tiny-{name}", seed=seed, extra_text=" ".join(WORDS))
        for seed, name in enumerate(("a", "b"))
    ]
    spec = {
        "bases": bases,
        "configs": ["begin", "uniform"],
        "data": write_train_data(root / "train"),
        "tasks": [write_task(root / "task")],
        "training": {"max_steps": 1, "global_batch": 4},
        "bootstrap": 20,
        "seed": 3,
    }
    path = root / "spec.json"
    path.write_text(json.dumps(spec))
    return str(path)


@pytest.fixture(scope="module")
def local_study(small_spec, tmp_path_factory, pytestconfig) -> Path:
    out = tmp_path_factory.mktemp("local") / "s"
    with timed(pytestconfig, "local"):
        assert main(["study", "run", small_spec, "--out", str(out), "--in-process"]) == 0
    return out


def say(config: pytest.Config, text: str) -> None:
    """Show ``text`` in the test output past pytest's capture: on the terminal, or as a warning
    in the summary where there is no terminal (an xdist worker)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if terminal is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            terminal.write_line(f"\n{text}")
    else:
        warnings.warn(text, UserWarning, stacklevel=2)


@contextlib.contextmanager
def timed(config: pytest.Config, executor: str):
    """Show the wall time of one study run."""
    start = time.perf_counter()
    yield
    say(config, f"STUDY UNDER {executor}: {time.perf_counter() - start:.1f} s wall")


def cells(out: Path) -> dict:
    """Every cell's numbers (per position, mean, PSI, their intervals), rounded to 1e-9: Ray
    workers run torch with other thread counts, so sums may differ in the last bits."""
    report = json.loads((out / "report" / "report.json").read_text())

    def rounded(value):
        if isinstance(value, dict):
            return {k: rounded(v) for k, v in value.items()}
        if isinstance(value, list):
            return [rounded(v) for v in value]
        return round(value, 9) if isinstance(value, float) else value

    return {(c["model"], c["config"]): rounded([c["per_position"], c["mean"], c["psi"], c["ci"]])
            for c in report["cells"]}  # fmt: skip


def test_an_executor_that_cannot_start_is_one_line_before_any_work(
    small_spec, tmp_path, capsys, monkeypatch
):
    cases = [
        (["--executor", "ray", "--ray-address", "127.0.0.1:9"], "no Ray cluster at 127.0.0.1:9"),
        (["--executor", "slurm"], "--executor slurm: "),
    ]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no sbatch
    for extra, expected in cases:
        out = tmp_path / extra[1]
        capsys.readouterr()
        assert main(["study", "run", small_spec, "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0], err
        assert not (out / "units").exists() and not (out / "models").exists()
    monkeypatch.setitem(sys.modules, "ray", None)  # Ray not installed
    assert (
        main(["study", "run", small_spec, "--out", str(tmp_path / "r"), "--executor", "ray"]) == 2
    )
    assert "needs ray (pip install 'hf-posbias[scale]')" in capsys.readouterr().err


def test_local_units_are_recorded_and_status_reads_the_folder(local_study, small_spec, capsys):
    from hf_posbias.executors.units import read_record

    assert main(["study", "status", str(local_study)]) == 0
    out = capsys.readouterr().out.splitlines()
    # 2 bases × (base + 2 configurations) = 6 models: 2 base units, 4 training runs, 6
    # evaluations, the report.
    assert out == ["13 done, 0 running, 0 failed, 0 waiting (13 units)"]
    record = read_record(local_study, "train/posbias-tiny-a-begin")
    assert record.state == "done" and record.seconds > 0


def test_a_failed_or_died_unit_is_shown_and_redone_alone(local_study, small_spec, tmp_path, capsys):
    from hf_posbias.executors.units import UnitRecord, _write_record

    out = tmp_path / "s"
    shutil.copytree(local_study, out)
    # An evaluation whose worker died mid-way (its process is gone, its marker never written) and
    # one that failed with a log.
    died, failed = (
        "eval/posbias-tiny-a-uniform/TinyStudyTask",
        "eval/posbias-tiny-b-base/TinyStudyTask",
    )
    gone = subprocess.Popen(["true"])
    gone.wait()
    for uid, state in ((died, "running"), (failed, "failed")):
        model = uid.split("/")[1]
        (out / "eval" / model / "TinyStudyTask" / "posbias_study_eval.json").unlink()
        log = out / "logs" / f"{uid.replace('/', '--')}.log"
        log.parent.mkdir(exist_ok=True)
        log.write_text("loading\nRuntimeError: CUDA out of memory\n")
        record = UnitRecord(uid, state, __import__("socket").gethostname(), gone.pid, 0.0,
                            error="CUDA out of memory", log=str(log.relative_to(out)))  # fmt: skip
        _write_record(out, record)
    capsys.readouterr()
    assert main(["study", "status", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "10 done, 0 running, 2 failed, 1 waiting (13 units)"
    assert any(line.startswith(f"failed   {died}: died while running") for line in lines)
    reason = "log: RuntimeError: CUDA out of memory"
    assert any(line.startswith(f"failed   {failed}: CUDA out of memory") and line.endswith(reason)
               for line in lines)  # fmt: skip
    assert main(["study", "run", small_spec, "--out", str(out), "--in-process"]) == 0
    printed = capsys.readouterr().out
    assert "0 run(s) trained, 2 evaluation(s) run, 4 skipped" in printed
    assert "(1 left, ETA" in printed  # one line per finished unit, with the count left
    assert cells(out) == cells(local_study)


@pytest.fixture(scope="module")
def ray_cluster():
    # Two logical GPUs on a CPU machine: every training/evaluation unit asks for one.
    with local_ray(num_gpus=2) as ray:
        yield ray


def test_ray_gives_the_local_cells_with_units_on_logical_gpus(
    ray_cluster, local_study, small_spec, tmp_path, capsys, pytestconfig
):
    import os

    from hf_posbias.executors.units import read_record

    out = tmp_path / "ray"
    argv = ["study", "run", small_spec, "--out", str(out), "--in-process", "--executor", "ray",
            "--gpus-per-task", "1", "--cpus-per-task", "1"]  # fmt: skip
    with timed(pytestconfig, "ray (2 CPUs, 2 logical GPUs)"):
        assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "on ray (local)" in printed and "0 left, ETA 0 s" in printed
    assert cells(out) == cells(local_study)
    record = read_record(out, "train/posbias-tiny-b-uniform")
    assert record.state == "done" and record.pid != os.getpid()  # ran in a Ray worker
    assert (out / record.log).is_file()
    # A rerun under Ray runs only the report.
    assert main(argv) == 0
    assert "0 run(s) trained, 0 evaluation(s) run, 6 skipped" in capsys.readouterr().out


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, pytestconfig):
    """A real single-node Slurm when it starts here, else submitit's LocalExecutor."""
    pytest.importorskip("submitit")
    from slurm_cluster import SlurmCluster

    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    if cluster.start():
        say(pytestconfig, "SLURM EXECUTOR TEST: real Slurm (slurmctld + slurmd on 127.0.0.1)")
        yield "slurm"
        cluster.stop()
    else:
        say(pytestconfig, f"SLURM EXECUTOR TEST: submitit LocalExecutor (Slurm: {cluster.reason})")
        yield "local"


def test_slurm_gives_the_local_cells_one_job_per_unit(
    slurm, local_study, small_spec, tmp_path, capsys, pytestconfig
):
    out = tmp_path / "slurm"
    argv = ["study", "run", small_spec, "--out", str(out), "--in-process", "--executor", "slurm",
            "--slurm-cluster", slurm, "--gpus-per-task", "0", "--slurm-time", "10"]  # fmt: skip
    capsys.readouterr()
    assert main([*argv, "--dry-run"]) == 0
    jobs = [x for x in capsys.readouterr().out.splitlines() if x.startswith("job ")]
    assert len(jobs) == 13 and jobs[-1].startswith("job 13/13: report/report")
    assert "--dependency afterok:job" in jobs[-1]
    with timed(pytestconfig, f"slurm (submitit cluster={slurm})"):
        assert main(argv) == 0
    printed = capsys.readouterr().out
    assert printed.count(" left, ETA ") == 13
    assert cells(out) == cells(local_study)
    logs = list((out / "slurm").glob("*/*_log.out"))
    assert len(logs) >= 11  # one submitit log folder per job, under the study folder


def test_ray_started_by_the_verb_on_a_cpu_only_machine_reaches_the_report(
    local_study, small_spec, tmp_path, pytestconfig
):
    """As a user starts it: no Ray running, no faked resources, the default --gpus-per-task
    (auto), the verb in its own process. Before auto, every unit asked Ray for a GPU this
    machine does not have and the run waited forever, silently."""
    import os

    out = tmp_path / "ray-cpu"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), *sys.path])}
    argv = [sys.executable, "-m", "hf_posbias.cli", "study", "run", small_spec, "--out", str(out),
            "--executor", "ray", "--no-progress"]  # fmt: skip
    with timed(pytestconfig, "ray started by the verb (CPU only, default flags)"):
        proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "ray: no GPU in the cluster: training and evaluation units run on CPU" in proc.stdout
    assert cells(out) == cells(local_study)


@pytest.fixture
def ray_one_gpu():
    with local_ray(num_gpus=1) as ray:
        yield ray


def test_ray_refuses_a_unit_no_node_can_take_before_any_unit_starts(
    ray_one_gpu, small_spec, tmp_path, capsys
):
    out = tmp_path / "two-gpus"
    start = time.perf_counter()
    argv = ["study", "run", small_spec, "--out", str(out), "--in-process", "--executor", "ray",
            "--gpus-per-task", "2"]  # fmt: skip
    assert main(argv) == 2
    assert time.perf_counter() - start < 60
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "a unit asks for 2 GPU, 1 CPU" in err[0]
    assert (
        "no node of the Ray cluster offers that (1 node; the largest offers 1 GPU, 2 CPU)"
        in (err[0])
    )
    assert not list(out.glob("units/*.json")) and not (out / "models").exists()


def test_a_unit_ray_has_not_started_is_reported_with_rays_reason(ray_one_gpu, tmp_path):
    """Three one-CPU units on a two-CPU cluster: the third waits, and says why."""
    from hf_posbias.executors.options import ExecutorSettings
    from hf_posbias.executors.ray import run_ray
    from hf_posbias.executors.units import Unit

    units = [Unit(f"report/{n}", "report", time.sleep, args=(4,)) for n in ("a", "b", "c")]
    lines: list[str] = []
    settings = ExecutorSettings(executor="ray", cpus_per_task=1)
    run_ray(units, str(tmp_path), settings, lines.append, ray_one_gpu, waiting_report_s=1.0)
    waiting = [x for x in lines if "not started after" in x]
    # at any time two units hold both CPUs: one of the three waits for one of them
    reason = "(Ray: pending until 0 GPU, 1 CPU are free; free now 1/1 GPU, 0/2 CPU)"
    assert any(line.endswith(reason) for line in waiting), lines
    # a unit removes its waiting record when it starts
    assert not list((tmp_path / "units").glob("*.waiting.json"))


def test_status_shows_the_reason_a_unit_waits(local_study, tmp_path, capsys):
    from hf_posbias.executors.units import WaitingRecord, write_waiting

    out = tmp_path / "s"
    shutil.copytree(local_study, out)
    uid = "eval/posbias-tiny-a-uniform/TinyStudyTask"
    (out / "eval" / "posbias-tiny-a-uniform" / "TinyStudyTask" / "posbias_study_eval.json").unlink()
    now = time.time()  # handed to the engine after its last run
    write_waiting(out, WaitingRecord(uid, now, "Slurm: PENDING (Resources)", now + 75.0))
    assert main(["study", "status", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"waiting  {uid}: queued 75 s by then: Slurm: PENDING (Resources)" in lines


def test_slurm_refuses_a_gres_the_partition_lacks_before_any_job(
    slurm, small_spec, tmp_path, capsys
):
    if slurm != "slurm":
        pytest.skip("needs the real single-node Slurm (slurm-wlm and munge, as root)")
    out = tmp_path / "gres"
    argv = ["study", "run", small_spec, "--out", str(out), "--in-process", "--executor", "slurm",
            "--gpus-per-task", "1", "--slurm-time", "10"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "a job asks for 1 GPU and 1 CPU, but partition 'test' offers at most 0 GPU" in err[0]
    assert not (out / "slurm").exists() and not (out / "models").exists()


def test_a_unit_that_starts_while_the_engine_is_asked_is_not_reported_waiting(tmp_path):
    """The watch asks the engine why a unit waits; the unit starts meanwhile (its worker removes
    a waiting record that is not there yet): no waiting line, no record left behind."""
    from hf_posbias.executors.driver import PendingWatch
    from hf_posbias.executors.units import Unit, execute_unit, waiting_path

    lines: list[str] = []
    watch = PendingWatch(str(tmp_path), lines.append, after_s=0.0)
    unit = Unit("report/a", "report", time.sleep, args=(0,))
    watch.handed(unit)

    def reason_while_the_unit_starts(u):
        execute_unit(u, tmp_path, capture=False)
        return "Ray: pending until 0 GPU, 1 CPU are free"

    watch.check([unit], reason_while_the_unit_starts)
    assert lines == [] and not waiting_path(tmp_path, unit).exists()


def test_a_finished_unit_leaves_no_waiting_record(tmp_path):
    """Whatever a watch wrote while a unit was starting, the driver removes it when it ends."""
    from hf_posbias.executors.driver import drive
    from hf_posbias.executors.units import Unit, WaitingRecord, waiting_path, write_waiting

    units = [Unit(f"report/{n}", "report", time.sleep, args=(0,)) for n in ("a", "b")]

    def start(unit):
        write_waiting(str(tmp_path), WaitingRecord(unit.id, 0.0, "stale", 0.0))
        return unit.id

    drive(units, str(tmp_path), start, lambda handles: (handles[0], 0.1), echo=print,
          parallel=2, where="test")  # fmt: skip
    assert not any(waiting_path(tmp_path, u).exists() for u in units)
