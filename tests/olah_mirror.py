"""A real Hub-compatible HTTP server for tests: the ``olah`` mirror in offline mode.

olah 0.5.4 serves every git repository found at ``<mirrors-path>/<repo_type>s/<org>/<name>``
(a working tree with ``.git``) through the Hub's HTTP API — ``/api/datasets/<id>/revision/main``,
``/api/.../tree``, ``/datasets/<id>/resolve/<rev>/<path>`` — so ``huggingface_hub`` and
``datasets`` read it like huggingface.co. It has no write routes (uploads are tested by patching
``HfApi``). Clients must set ``HF_ENDPOINT`` before importing the HF libraries, leave
``HF_HUB_OFFLINE`` unset and set ``HF_HUB_DISABLE_XET=1``: :func:`client_env` builds that.

Usage (any test file; this module is imported by name, tests/ has no ``__init__.py``)::

    from olah_mirror import add_git_repo, olah_server
    add_git_repo(mirror_root, "datasets", "org/name", folder)
    with olah_server(mirror_root, tmp_path / "olah") as endpoint:
        subprocess.run([...], env=client_env(endpoint, tmp_path / "hf-home"))
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from guards import HANG_GUARD_S

# Fixed identity and dates: the commit (and so every sha olah reports) is reproducible, and git
# does not depend on the user's global config (no lfs filters, no signing, no hooks).
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "posbias-tests",
    "GIT_AUTHOR_EMAIL": "tests@posbias.invalid",
    "GIT_COMMITTER_NAME": "posbias-tests",
    "GIT_COMMITTER_EMAIL": "tests@posbias.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+00:00",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def olah_available() -> bool:
    """Whether olah (and git, which it reads mirrors with) can be used."""
    return importlib.util.find_spec("olah") is not None and shutil.which("git") is not None


def add_git_repo(mirror_root: Path, repo_type: str, repo_id: str, folder: Path) -> Path:
    """Copy ``folder`` into the mirror as a git repository with one commit on ``main``.

    ``repo_type`` is olah's plural folder name: ``"datasets"``, ``"models"`` or ``"spaces"``.
    Files are committed as plain blobs (no LFS), which olah serves directly.
    """
    target = Path(mirror_root) / repo_type / repo_id
    shutil.copytree(folder, target, ignore=shutil.ignore_patterns(".git", ".cache"))
    env = {**os.environ, **_GIT_ENV}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=target, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", f"publish {repo_id}")
    return target


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_config(mirror_root: Path, work_dir: Path, port: int) -> Path:
    """olah's TOML config: offline, serving ``mirror_root``, caching under ``work_dir``."""
    work_dir.mkdir(parents=True, exist_ok=True)
    config = work_dir / "olah.toml"
    config.write_text(
        "[basic]\n"
        'host = "127.0.0.1"\n'
        f"port = {port}\n"
        f'repos-path = "{work_dir / "repos"}"\n'
        f'mirrors-path = ["{Path(mirror_root)}"]\n'
        'mirror-scheme = "http"\n'
        f'mirror-netloc = "127.0.0.1:{port}"\n'
        f'mirror-lfs-netloc = "127.0.0.1:{port}"\n'
        "\n[accessibility]\n"
        # Offline: never contact huggingface.co; answer only from the mirror folders.
        "offline = true\n"
    )
    return config


def _wait_until_serving(endpoint: str, proc: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"olah exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            # Any HTTP answer (even 404) means uvicorn is accepting requests.
            urllib.request.urlopen(f"{endpoint}/api/whoami-v2", timeout=2)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"olah did not answer on {endpoint} within {timeout:.0f} s")


@contextlib.contextmanager
def olah_server(
    mirror_root: Path, work_dir: Path, *, timeout: float = HANG_GUARD_S
) -> Iterator[str]:
    """Run olah on a free 127.0.0.1 port for the duration of the block; yields the endpoint.

    The server is a child process of this one, stopped (terminate, then kill) on exit.
    """
    port = free_port()
    config = write_config(mirror_root, work_dir, port)
    log = work_dir / "olah.out"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "olah.server",
                "--config",
                str(config),
                "--log-path",
                str(work_dir / "logs"),
            ],
            cwd=work_dir,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(endpoint, proc, log, timeout)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def client_env(endpoint: str, hf_home: Path) -> dict[str, str]:
    """Environment for a subprocess that reads from the mirror with fresh, private caches."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HUB_DISABLE_XET="1",
        HF_HOME=str(hf_home),
        HF_DATASETS_CACHE=str(hf_home / "datasets"),
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        HF_HUB_DISABLE_TELEMETRY="1",
    )
    return env
