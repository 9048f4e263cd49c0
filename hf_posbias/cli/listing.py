"""The listings of the extension points: what is registered, and which package registered it.

One verb, ``posbias list KIND``, one table per kind of extension point:

    posbias list benchmarks  what `posbias benchmark build` takes, the tasks each builds, and
                             the recipe `posbias benchmark from-corpus`
    posbias list bases       the base models (`posbias train --model`, a study's bases)
    posbias list remedies    the remedies: bi-encoder (`--remedy`, a study's …) and listwise
    posbias list rerankers   the reranker kinds (`--reranker`), in the order they are tried

Each table has a ``source`` column: ``built-in``, or the distribution of the plugin that
registered the row (:mod:`hf_posbias.plugins`; docs/extending.md).

Example:
    >>> print(remedies_table().to_markdown().splitlines()[2])
    | none | bi-encoder | — | built-in | the plain model |
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from hf_posbias.cli.common import add_verb
from hf_posbias.settings import Settings, setting
from hf_posbias.tables import MarkdownTable, format_cell


@dataclass(kw_only=True)
class ListSettings(Settings):
    """The settings of ``posbias list``."""

    kind: str = setting("what to list", positional=True, choices=lambda: list(LISTINGS))


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``posbias list {benchmarks,bases,remedies,rerankers}``.

    Example:
        >>> from hf_posbias.cli import build_parser
        >>> build_parser().parse_args(["list", "remedies"]).kind
        'remedies'
    """
    add_verb(
        subparsers,
        "list",
        ListSettings,
        lambda s: print(LISTINGS[s.kind]().to_markdown()),
        help="what is registered: benchmarks, bases, remedies, rerankers",
        description="One table of an extension point, with a source column: built-in, or the "
        "distribution of the plugin that registered the row (docs/extending.md).",
    )


def benchmarks_table() -> MarkdownTable:
    """Every benchmark ``posbias benchmark build`` takes, the tasks it builds and where it
    comes from (:func:`hf_posbias.tasks.benchmark_registry.benchmark_listing`, also
    ``pb.list_benchmarks()``); its last row is the recipe ``posbias benchmark from-corpus``,
    which builds a benchmark of any corpus (a verb of its own, marked as such).

    Example:
        >>> print(benchmarks_table().to_markdown().splitlines()[-1])  # doctest: +ELLIPSIS
        | from-corpus | — | built-in | recipe, `posbias benchmark from-corpus`: ...
    """
    from hf_posbias.tasks.benchmark_registry import benchmark_listing

    return benchmark_listing().table()


def remedies_table() -> MarkdownTable:
    """Every remedy of both model kinds: the bi-encoder's (``--remedy``: ``none``, the built-in
    ones, then plugins'), then the listwise reranker's (``posbias listwise reranker-remedies``)."""
    from hf_posbias.evaluation.runs.remedies import REMEDY_REGISTRY
    from hf_posbias.listwise.experiments.remedies import LISTWISE_REMEDY_REGISTRY
    from hf_posbias.plugins import NO_REMEDY

    rows = [[NO_REMEDY, "bi-encoder", "—", "built-in", "the plain model"]]
    for kind, registry in (("bi-encoder", REMEDY_REGISTRY), ("listwise", LISTWISE_REMEDY_REGISTRY)):
        for name, entry in registry.entries().items():
            reads = ", ".join(entry.value.reads) or "—"
            rows.append([name, kind, reads, entry.source, entry.value.help])
    return MarkdownTable(["remedy", "kind", "reads", "source", "description"], rows)


def rerankers_table() -> MarkdownTable:
    """Every reranker kind, in the order a reranker argument is matched against them."""
    from hf_posbias.rerankers.loading import RERANKER_REGISTRY, reranker_kinds

    entries = RERANKER_REGISTRY.entries()
    rows = [
        [str(kind.order), kind.name, entries[kind.name].source, kind.help]
        for kind in reranker_kinds()
    ]
    return MarkdownTable(["order", "kind", "source", "takes"], rows)


def bases_table() -> MarkdownTable:
    """Every registered base model: YHP26 Table 2's columns (kind, positional encoding,
    pooling, size, maximum length) with Table 9's checkpoint and App. D's learning rate."""
    from hf_posbias.modeling.bases import BASE_REGISTRY

    columns = ["base", "checkpoint", "kind", "positional encoding", "pooling", "params (M)"]
    columns += ["max length", "lr", "source"]
    rows = []
    for name, entry in BASE_REGISTRY.entries().items():
        spec = entry.value
        size = format_cell(spec.params_m)
        rows.append(
            [name, spec.checkpoint, spec.kind, spec.positional_encoding, spec.pooling, size]
            + [str(spec.max_length), f"{spec.lr:g}", entry.source]
        )
    return MarkdownTable(columns, rows)


LISTINGS: dict[str, Callable[[], MarkdownTable]] = {
    "benchmarks": benchmarks_table,
    "bases": bases_table,
    "remedies": remedies_table,
    "rerankers": rerankers_table,
}
"""kind → its table: ``posbias list KIND``."""
