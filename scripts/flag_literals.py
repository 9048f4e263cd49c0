#!/usr/bin/env python
"""Count ``raise`` sites whose message spells a command-line flag literally (``"--k must …"``).

A flag named in an error message should come from :func:`hf_posbias.settings.flag_name`, so a
renamed flag (or its alias) cannot drift from what the messages say. This walks every module of
a package with :mod:`ast` and lists each ``raise`` whose string literals (f-string parts
included, ``flag_name(...)`` calls excluded) contain ``--`` followed by a letter.

Usage::

    python scripts/flag_literals.py               # hf_posbias: one line per site, then the count
    python scripts/flag_literals.py --count-only  # just the count
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _literals(node: ast.AST) -> Iterator[str]:
    """The string constants inside ``node`` (an f-string's literal parts included)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


def flag_literal_sites(root: Path) -> list[tuple[str, int, list[str]]]:
    """(file, line, flags) for every ``raise`` under ``root`` that spells a flag literally.

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "m.py").write_text(
        ...     'def f(k):\\n'
        ...     '    if k < 1:\\n'
        ...     '        raise ValueError(f"--k must be >= 1, got {k}")\\n'
        ...     '    raise ValueError(f"{flag_name(\\'k\\')} is fine")\\n'
        ... )
        >>> [(Path(f).name, line, flags) for f, line, flags in flag_literal_sites(folder)]
        [('m.py', 3, ['--k'])]
    """
    sites = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            flags = sorted({f for text in _literals(node.exc) for f in FLAG.findall(text)})
            if flags:
                sites.append((str(path), node.lineno, flags))
    return sites


def main(argv: list[str] | None = None) -> int:
    """Print the sites (or only their number) for the package folder given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", nargs="?", default="hf_posbias")
    parser.add_argument("--count-only", action="store_true")
    args = parser.parse_args(argv)
    sites = flag_literal_sites(Path(args.package))
    if not args.count_only:
        for path, line, flags in sites:
            print(f"{path}:{line}: {' '.join(flags)}")
    print(len(sites))
    return 0


if __name__ == "__main__":
    sys.exit(main())
