"""Content hashes of folders: the one way hf-posbias fingerprints files on disk.

Caches and revisions keyed by a folder's *name* go stale silently when the folder is rewritten
(``datasets`` caches local folders that way; mteb keys results by ``dataset.revision``), so
every such key is a hash of what the folder holds: each file's relative path, size and bytes.

Example:
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.txt").write_text("one")
    >>> before = folder_digest(folder)
    >>> _ = (folder / "a.txt").write_text("two")
    >>> folder_digest(folder) == before
    False
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def _content_files(root: Path) -> list[Path]:
    # Hidden entries (.git, .cache, .gitattributes, temporary .name.tmp files) are metadata or
    # work in progress, never content.
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )


def folder_digest(
    folder: str | Path,
    *,
    names: Iterable[str] | None = None,
    sample_bytes: int | None = None,
    exclude: str | Path | None = None,
) -> str:
    """SHA-256 (hex) of a folder's content: every file's relative path, size and bytes.

    Args:
        folder: the folder (a missing or empty folder hashes like any other empty content).
        names: hash only these relative paths, in this order (missing ones are skipped);
            ``None`` = every non-hidden file below ``folder``, sorted.
        sample_bytes: files larger than twice this are hashed by their first and last
            ``sample_bytes`` bytes plus their size (model weights: fast, still tells two
            checkpoints apart); ``None`` = whole files.
        exclude: a folder below ``folder`` whose files are left out (an output folder inside
            an input: what a run writes does not change the digest of what it reads).

    Example:
        >>> import tempfile
        >>> a, b = tempfile.mkdtemp(), tempfile.mkdtemp()
        >>> folder_digest(a) == folder_digest(b)  # both empty: same content
        True
    """
    root = Path(folder)
    files = [root / n for n in names] if names is not None else _content_files(root)
    if exclude is not None:
        skipped = Path(exclude).resolve()
        files = [p for p in files if not p.resolve().is_relative_to(skipped)]
    digest = hashlib.sha256()
    for path in files:
        if not path.is_file():
            continue
        size = path.stat().st_size
        digest.update(f"{path.relative_to(root).as_posix()}\0{size}\0".encode())
        with path.open("rb") as handle:
            if sample_bytes is not None and size > 2 * sample_bytes:
                digest.update(handle.read(sample_bytes))
                handle.seek(size - sample_bytes)
                digest.update(handle.read(sample_bytes))
            else:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


def folder_fingerprint(folder: str | Path, sample_bytes: int = 4 << 20) -> str:
    """A content hash of a model folder: file names, sizes and bytes (head+tail of big files).

    Two checkpoints trained from the same base have the same config and the same
    ``model_card_data``; only their weights differ, so the weights must be in the hash.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "w.bin").write_bytes(b"abc")
        >>> folder_fingerprint(d) == folder_fingerprint(d)
        True
    """
    return folder_digest(folder, sample_bytes=sample_bytes)[:12]


__all__ = ["folder_digest", "folder_fingerprint"]
