"""The Hub, write side: the one Hub token lookup and the one upload, for datasets and models.

``posbias data build --repo-id`` uploads the dataset repo folders :mod:`hf_posbias.publish` writes;
``posbias train --push-to-hub`` uploads a checkpoint folder; ``posbias benchmark publish`` a
position task's repo folder; ``posbias evaluate --push-results`` a model's ``.eval_results``.
All go through :func:`upload_folder` (``HfApi.create_repo`` + ``HfApi.upload_folder``; the Hub
host comes from ``HF_ENDPOINT`` through huggingface_hub, never from a hard-coded URL), with the
token from :func:`resolve_token`; a repo the token's user does not own gets a pull request
(``create_pr=None``: :func:`owns_repo` decides). Reading datasets back is :mod:`hf_posbias.rows`.

Offline, everything up to the network call is tested by patching ``HfApi`` at this boundary.

Example:
    >>> resolve_token("hf_given")
    'hf_given'
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from hf_posbias.errors import BackendError, InputError, first_line

HUB_METADATA_ENTRIES = frozenset({".git", ".cache"})
"""Entries of a local folder that belong to git / huggingface_hub, not to the repo content
(``upload_folder`` skips them)."""
LOCAL_ONLY = ".posbias*"
"""What an upload leaves out: the lock and run record a posbias run keeps in its folder."""

REPO_TYPES: tuple[str, ...] = ("dataset", "model", "space")


def stays_home(name: str) -> bool:
    """Whether a folder entry is no content of the repo it is uploaded to: git's or
    huggingface_hub's metadata (:data:`HUB_METADATA_ENTRIES`), or the lock, run record and
    set-aside run a ``posbias`` run keeps in its output folder (:data:`LOCAL_ONLY`).

    Example:
        >>> [stays_home(n) for n in (".git", ".posbias-run.json", ".posbias.lock", "README.md")]
        [True, True, True, False]
    """
    return name in HUB_METADATA_ENTRIES or fnmatch.fnmatch(name, LOCAL_ONLY)


def resolve_token(
    token: str | None = None, *, purpose: str = "", flag: str | None = "--token"
) -> str:
    """The Hub token: the argument, else ``HF_TOKEN``, else huggingface_hub's stored login.

    Args:
        token: an explicit token (``--token``).
        purpose: what needs it, for the error message (e.g. ``"--push-to-hub me/model"``).
        flag: the command-line option that passes a token, if the command has one.

    Raises:
        BackendError: no token anywhere (one line saying where one can come from).

    Example:
        >>> resolve_token("hf_explicit")
        'hf_explicit'
    """
    if token:
        return token
    from huggingface_hub import get_token

    try:
        found = get_token()  # HF_TOKEN first, then the token file of `hf auth login`
    except Exception:  # an unreadable token file is the same as no token
        found = None
    if not found:
        what = f"{purpose}: " if purpose else ""
        where = f"pass {flag}, " if flag else ""
        raise BackendError(f"{what}no Hub token: {where}set HF_TOKEN or run `hf auth login`")
    return found


def check_repo_id(repo_id: str) -> str:
    """Refuse a repo id that is not ``<owner>/<name>`` (one line, before any work starts).

    Example:
        >>> check_repo_id("posbias-org/wiki")
        'posbias-org/wiki'
        >>> check_repo_id("wiki")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: repo id 'wiki' must be <owner>/<name>
    """
    parts = str(repo_id).split("/")
    if len(parts) != 2 or not all(parts) or any(" " in p for p in parts):
        raise InputError(f"repo id {repo_id!r} must be <owner>/<name>")
    return str(repo_id)


def upload_folder(
    folder: str | Path,
    repo_id: str,
    *,
    repo_type: str = "dataset",
    token: str | None = None,
    private: bool = False,
    commit_message: str = "Upload with hf-posbias",
    create_repo: bool = True,
    create_pr: bool | None = False,
) -> str:
    """Create ``repo_id`` if needed and upload ``folder`` to it; returns the repo URL (or the
    pull request's URL).

    Works for any repo type: a dataset folder from
    :func:`hf_posbias.publish.repo.write_dataset_repo`, or a model checkpoint folder with
    ``repo_type="model"``. The folder's entries land at the repo's root, beside what the repo holds
    already.

    Args:
        create_repo: create the repo when it does not exist (``False``: it must exist, as a
            model repo that receives evaluation results).
        create_pr: open a pull request instead of committing to ``main``; ``None``: a pull
            request unless the token's user owns the repo (:func:`owns_repo`).

    Raises:
        InputError: the folder is missing or empty, or the repo id / type is malformed.
        BackendError: no token, the Hub refused the request or could not be reached.

    Example:
        >>> upload_folder("/nonexistent", "me/x", token="hf_x")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: nothing to upload: /nonexistent is not a folder
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"nothing to upload: {folder} is not a folder")
    if all(stays_home(p.name) for p in folder.iterdir()):
        raise InputError(f"nothing to upload: {folder} is empty")
    if repo_type not in REPO_TYPES:
        raise InputError(f"repo_type must be one of {', '.join(REPO_TYPES)}, got {repo_type!r}")
    check_repo_id(repo_id)
    token = resolve_token(token, purpose=f"upload to {repo_id}")

    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.errors import HTTPError as HubTransportError

    api = huggingface_hub.HfApi(token=token)
    try:
        if create_pr is None:
            create_pr = not owns_repo(repo_id, token=token, api=api)
        if create_repo:
            api.create_repo(
                repo_id, token=token, private=private, repo_type=repo_type, exist_ok=True
            )
        commit = api.upload_folder(
            repo_id=repo_id,
            folder_path=str(folder),
            repo_type=repo_type,
            token=token,
            commit_message=commit_message,
            create_pr=create_pr,
            # A run's lock and record (hf_posbias.locks, hf_posbias.output_folders) stay home.
            ignore_patterns=[LOCAL_ONLY],
        )
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        raise BackendError(
            f"the Hub refused the upload to {repo_id} (HTTP {status}): {first_line(exc)}"
        ) from exc
    except (HubTransportError, OSError) as exc:
        # OSError covers ConnectionError and huggingface_hub's OfflineModeIsEnabled.
        raise BackendError(
            f"cannot reach the Hub to upload {repo_id} ({type(exc).__name__}): {first_line(exc)}"
        ) from exc
    pr_url = getattr(commit, "pr_url", None)
    return str(pr_url) if create_pr and pr_url else repo_url(repo_id, repo_type)


def owns_repo(repo_id: str, *, token: str, api: Any = None) -> bool:
    """Whether the token's user owns ``repo_id``: its namespace is the user's name or one of
    their organisations (``HfApi.whoami``). Where they do not, a change goes in as a pull
    request, as the Hub asks of a community contribution.

    Example:
        >>> class Api:
        ...     def whoami(self, token=None):
        ...         return {"name": "me", "orgs": [{"name": "my-lab"}]}
        >>> owns_repo("my-lab/model", token="t", api=Api()), owns_repo("them/model", token="t",
        ...     api=Api())
        (True, False)
    """
    if api is None:
        import huggingface_hub

        api = huggingface_hub.HfApi(token=token)
    who = api.whoami(token=token)
    names = {str(who.get("name", ""))} | {
        str(org.get("name", "")) for org in who.get("orgs") or [] if isinstance(org, dict)
    }
    return check_repo_id(repo_id).split("/")[0] in names - {""}


def repo_url(repo_id: str, repo_type: str = "dataset") -> str:
    """The web address of a repo on the Hub that ``HF_ENDPOINT`` points at.

    Example:
        >>> repo_url("me/model", "model").endswith("/me/model")
        True
        >>> "/datasets/me/data" in repo_url("me/data")
        True
    """
    from huggingface_hub import constants

    prefix = {"dataset": "datasets/", "space": "spaces/"}.get(repo_type, "")
    return f"{constants.ENDPOINT.rstrip('/')}/{prefix}{repo_id}"


__all__ = [
    "HUB_METADATA_ENTRIES",
    "check_repo_id",
    "owns_repo",
    "repo_url",
    "resolve_token",
    "stays_home",
    "upload_folder",
]
