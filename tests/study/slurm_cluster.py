"""A real single-node Slurm on 127.0.0.1 for the executor tests, when this machine can run one
(root, Debian's slurm-wlm and munge installed); started by the fixture, stopped after it."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "sinfo")


def slurm_conf(root: Path, cpus: int) -> str:
    host = socket.gethostname()
    return f"""ClusterName=posbias-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmctldPort=16917
SlurmdPort=16918
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=2000 State=UNKNOWN
PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""


class SlurmCluster:
    """Start munged (unless one runs), slurmctld and slurmd; :meth:`stop` ends what it started."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pids: list[int] = []
        self.reason = ""

    def start(self) -> bool:
        missing = [d for d in DAEMONS if shutil.which(d) is None]
        if missing:
            self.reason = f"{', '.join(missing)} not installed"
            return False
        if os.geteuid() != 0:
            self.reason = "not root"
            return False
        for name in ("state", "spool"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        conf = self.root / "slurm.conf"
        conf.write_text(slurm_conf(self.root, os.cpu_count() or 1))
        os.environ["SLURM_CONF"] = str(conf)
        if not Path("/run/munge/munge.socket.2").exists():
            Path("/run/munge").mkdir(parents=True, exist_ok=True)
            pidfile = self.root / "munged.pid"
            subprocess.run(["munged", "--force", f"--pid-file={pidfile}"], check=False,
                           capture_output=True)  # fmt: skip
            if pidfile.is_file():
                self.pids.append(int(pidfile.read_text()))
        for daemon in ("slurmctld", "slurmd"):
            proc = subprocess.run([daemon], capture_output=True, text=True, check=False)
            pidfile = self.root / f"{daemon}.pid"
            for _ in range(50):
                if pidfile.is_file() and pidfile.read_text().strip():
                    break
                time.sleep(0.1)
            if not pidfile.is_file():
                self.reason = f"{daemon} did not start: {proc.stderr.strip()[-200:]}"
                self.stop()
                return False
            self.pids.append(int(pidfile.read_text()))
        for _ in range(100):
            out = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True)
            if out.returncode == 0 and out.stdout.strip().startswith("idle"):
                return True
            time.sleep(0.2)
        self.reason = f"the node did not come up ({out.stdout.strip()} {out.stderr.strip()})"
        self.stop()
        return False

    def stop(self) -> None:
        for pid in reversed(self.pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 15)
        self.pids.clear()
        os.environ.pop("SLURM_CONF", None)
