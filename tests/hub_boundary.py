"""huggingface_hub's ``HfApi`` at the boundary, for the tests of what the toolkit uploads.

The olah mirror (``olah_mirror``) serves repos but has no write routes: an upload is checked
here, and what it sent can then be committed to the mirror. Imported by name (tests/ has no
``__init__.py``): ``from hub_boundary import capture_uploads``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest


class CapturingHfApi:
    """huggingface_hub.HfApi at the boundary: ``whoami`` answers as the Hub does for ``user``;
    ``upload_folder`` records its arguments in ``calls``, copies the files huggingface_hub would
    send (its filter of ``allow_patterns`` / ``ignore_patterns`` and its default ignores) to
    ``root/<repo_id>`` and answers the ``CommitInfo`` huggingface_hub documents (``pr_url`` for a
    pull request)."""

    user = "posbias-test"
    root: Path = Path()
    calls: list[tuple[str, dict[str, Any]]] = []

    def __init__(self, token: str | None = None) -> None:
        self.token = token

    def whoami(self, token: str | None = None) -> dict[str, Any]:
        return {"type": "user", "name": self.user, "orgs": []}

    def create_repo(self, repo_id: str, **kwargs: Any) -> str:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kwargs}))
        return f"https://huggingface.co/{repo_id}"

    def upload_folder(self, **kwargs: Any) -> Any:
        from huggingface_hub import CommitInfo
        from huggingface_hub.utils import DEFAULT_IGNORE_PATTERNS, filter_repo_objects

        self.calls.append(("upload_folder", kwargs))
        folder, target = Path(kwargs["folder_path"]), self.root / kwargs["repo_id"]
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        sent = filter_repo_objects(
            files,
            allow_patterns=kwargs.get("allow_patterns"),
            ignore_patterns=[*(kwargs.get("ignore_patterns") or []), *DEFAULT_IGNORE_PATTERNS],
        )
        for name in sent:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folder / name, target / name)
        repo = kwargs["repo_id"]
        pr = "https://huggingface.co/" + repo + "/discussions/1" if kwargs["create_pr"] else None
        return CommitInfo(
            commit_url=f"https://huggingface.co/{repo}/commit/{'0' * 40}",
            commit_message=kwargs["commit_message"],
            commit_description="",
            oid="0" * 40,
            pr_url=pr,
        )


def capture_uploads(monkeypatch: pytest.MonkeyPatch, root: Path) -> type[CapturingHfApi]:
    """Put :class:`CapturingHfApi` in place of ``huggingface_hub.HfApi`` (uploads copied under
    ``root``), with a token in ``HF_TOKEN``."""
    import huggingface_hub

    CapturingHfApi.root = root
    CapturingHfApi.calls = []
    CapturingHfApi.user = "posbias-test"
    monkeypatch.setattr(huggingface_hub, "HfApi", CapturingHfApi)
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    return CapturingHfApi
