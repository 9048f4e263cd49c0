"""The one registry of position benchmarks: builder CLI, task metadata and task classes.

Every benchmark is ONE module under :mod:`hf_posbias.tasks.builders` that defines a
module-level ``BENCHMARK = Benchmark(...)``: what ``posbias benchmark build <name>`` takes (its
flags and the function that builds the task folder from its source) and the :class:`TaskCard` of
each task it builds (name, description, licence, citation from :mod:`hf_posbias.citations`,
default buckets, domains …).
The builder writes the card's licence, reference and citation into ``task.json``; the mteb task
classes in :mod:`hf_posbias.tasks.mteb_tasks` take their ``TaskMetadata`` from the same card
(``card.task_metadata()``), so the three cannot drift apart (a test checks that every card has
a class and every class a card).

Discovery walks the builders package, so this module stays light (no mteb, no pandas):
``posbias --help`` lists the sources without importing a heavy library. A new built-in benchmark
is one new builder module; a third party's is a ``Benchmark`` in its own package, registered by
an entry point of the group ``hf_posbias.benchmarks`` (:data:`BENCHMARK_REGISTRY`;
docs/extending.md). Its tasks get their mteb class from
:func:`hf_posbias.tasks.mteb_tasks.task_class`.

Example:
    >>> from hf_posbias.tasks.benchmark_registry import benchmarks, card_names
    >>> "scifact" in benchmarks()
    True
    >>> card_names()[:2]
    ['SQuAD-PosQ', 'SQuAD-PosQ-tiny']
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError, PluginError
from hf_posbias.plugins import BUILT_IN, GROUPS, Registry
from hf_posbias.tables import MarkdownTable

if TYPE_CHECKING:
    from mteb.abstasks.task_metadata import TaskMetadata

    from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

BUILDERS_PACKAGE = "hf_posbias.tasks.builders"
DEFAULT_LANGUAGES: tuple[str, ...] = ("eng-Latn",)
SPLIT = "test"
DEFAULT_TOP_K = 100
"""Documents retrieved per query (Z25's top-100)."""


def mteb_license(value: str) -> str:
    """A licence as mteb accepts it: one of its identifiers, a URL, or ``not specified``.

    Imports mteb (its closed list of licence identifiers).

    Example:
        >>> mteb_license("CC BY-SA 4.0"), mteb_license("https://x.org/l"), mteb_license("mine")
        ('cc-by-sa-4.0', 'https://x.org/l', 'not specified')
    """
    from typing import get_args

    from mteb.types._metadata import Licenses

    text = (value or "").strip()
    if re.match(r"https?://\S+$", text):
        return text
    lowered = re.sub(r"[\s_]+", "-", text.lower())
    return lowered if lowered in get_args(Licenses) else "not specified"


@dataclass(frozen=True)
class TaskCard:
    """Static facts about a named position task (becomes its mteb ``TaskMetadata``).

    ``license`` is spelled once, as mteb accepts it (an identifier of its list or a URL);
    ``citation`` is a constant of :mod:`hf_posbias.citations` (or several joined by
    :func:`hf_posbias.citations.bibtex`).
    """

    name: str
    class_name: str
    description: str
    reference: str
    citation: str
    license: str
    buckets: tuple[str, ...]
    domains: tuple[str, ...] = ("Encyclopaedic", "Written")
    date: tuple[str, str] = ("2016-01-01", "2018-06-30")
    annotations_creators: str = "derived"
    sample_creation: str = "found"
    task_subtypes: tuple[str, ...] = ("Question answering",)
    adapted_from: tuple[str, ...] = ()
    languages: tuple[str, ...] = DEFAULT_LANGUAGES

    def variant(self, suffix: str, class_suffix: str, note: str) -> TaskCard:
        """A derived card (e.g. the tiny sample of a benchmark)."""
        return replace(
            self,
            name=f"{self.name}{suffix}",
            class_name=f"{self.class_name}{class_suffix}",
            description=f"{self.description} {note}",
        )

    def task_info(self, *, name: str, description: str, source: str) -> TaskInfo:
        """The ``task.json`` header of a folder built for this card: its licence, reference and
        citation come from the card, so the folder and the mteb metadata cannot disagree
        (buckets are filled in by the builder's assembler).

        Example:
            >>> from hf_posbias.tasks.builders.scifact import CARD
            >>> info = CARD.task_info(name="X", description="d", source="s")
            >>> info.license == CARD.license and info.citation == CARD.citation
            True
        """
        from hf_posbias.tasks.taskdata import TaskInfo

        return TaskInfo(
            name=name,
            description=description,
            buckets=[],
            source=source,
            license=self.license,
            reference=self.reference,
            citation=self.citation,
        )

    def task_metadata(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        dataset_path: str | None = None,
        revision: str = "main",
        languages: Sequence[str] | None = None,
        license: str | None = None,
        reference: str | None = None,
        citation: str | None = None,
        main_score: str = "ndcg_at_10",
    ) -> TaskMetadata:
        """The mteb ``TaskMetadata`` of this card (overrides come from a built ``task.json``).

        All queries of a task are evaluated in ONE subset (``default``), or one per language
        when several languages are given; per-position scores come from the task's
        ``task_specific_scores``.
        """
        return task_metadata(
            name=name or self.name,
            description=description or self.description,
            dataset_path=dataset_path or f"hf-posbias/{self.name}",
            revision=revision,
            languages=list(languages or self.languages),
            license=license or self.license,
            reference=reference or self.reference,
            citation=citation or self.citation,
            main_score=main_score,
            card=self,
        )


def task_metadata(
    *,
    name: str,
    description: str,
    dataset_path: str,
    revision: str,
    languages: Sequence[str],
    license: str,
    reference: str | None,
    citation: str,
    main_score: str = "ndcg_at_10",
    card: TaskCard | None = None,
) -> TaskMetadata:
    """Complete mteb ``TaskMetadata`` for a position task (imports mteb).

    One language → one ``default`` subset holding every query; several → one subset each.
    """
    from mteb.abstasks.task_metadata import TaskMetadata

    langs = list(languages) or list(DEFAULT_LANGUAGES)
    eval_langs: Any = langs if len(langs) == 1 else {lang: [lang] for lang in langs}
    valid_reference = reference if reference and re.match(r"https?://\S+$", reference) else None
    return TaskMetadata(
        name=name,
        description=description,
        dataset={"path": dataset_path, "revision": revision},
        reference=valid_reference,
        type="Retrieval",
        category="t2t",
        modalities=["text"],
        eval_splits=[SPLIT],
        eval_langs=eval_langs,
        main_score=main_score,
        date=card.date if card else ("2016-01-01", "2026-01-01"),
        domains=list(card.domains) if card else ["Written"],
        task_subtypes=list(card.task_subtypes) if card else ["Question answering"],
        license=mteb_license(license),
        annotations_creators=card.annotations_creators if card else "derived",
        dialect=[],
        sample_creation=card.sample_creation if card else "found",
        bibtex_citation=citation or "",
        adapted_from=list(card.adapted_from) if card and card.adapted_from else None,
        contributed_by="hf-posbias",
    )


@dataclass(frozen=True)
class Benchmark:
    """One benchmark: a source of ``posbias benchmark build`` and the task card(s) it builds.

    Attributes:
        name: the source's name: ``posbias benchmark build <name>``.
        help: one line for ``posbias benchmark build --help`` and ``posbias list benchmarks``.
        cards: the cards of the tasks it builds (the first is the main one).
        settings: the source's settings dataclass (its flags, ``--input``/``--out`` included).
        build: builds the task from those settings.
        order: its place among the built-in sources.
    """

    name: str
    help: str
    cards: tuple[TaskCard, ...]
    settings: type
    build: Callable[[Any], PositionTaskData]
    order: int = 100


def _builtin_benchmarks() -> list[Benchmark]:
    """The ``BENCHMARK`` (or ``BENCHMARKS``) of every module of the builders package, by
    (order, name)."""
    package = importlib.import_module(BUILDERS_PACKAGE)
    found: list[Benchmark] = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{BUILDERS_PACKAGE}.{info.name}")
        bench = getattr(module, "BENCHMARK", None)
        if isinstance(bench, Benchmark):
            found.append(bench)
        # A module building several sets (builders/standard.py) lists them as BENCHMARKS.
        found.extend(b for b in getattr(module, "BENCHMARKS", ()) if isinstance(b, Benchmark))
    return sorted(found, key=lambda b: (b.order, b.name))


BENCHMARK_REGISTRY: Registry[Benchmark] = Registry(
    GROUPS["benchmarks"],
    Benchmark,
    what="benchmark",
    builtins=_builtin_benchmarks,
    name_of=lambda bench: bench.name,
)
"""The benchmark registry: the builders package's modules, then the plugins of the entry-point
group ``hf_posbias.benchmarks`` (each a :class:`Benchmark`, named by its source)."""


def benchmarks() -> dict[str, Benchmark]:
    """Every registered benchmark by source name: the built-ins in order, then the plugins
    (imports the builder modules and the benchmark plugins).

    A task name built by two benchmarks is refused (a plugin's in one line naming its
    distribution).
    """
    entries = BENCHMARK_REGISTRY.entries()
    builder: dict[str, str] = {}
    for name, entry in entries.items():
        for card in entry.value.cards:
            other = builder.setdefault(card.name, name)
            if other == name:
                continue
            if entry.source == BUILT_IN:
                raise RuntimeError(f"benchmarks {other!r} and {name!r} both build {card.name!r}")
            raise PluginError(
                f"benchmark {name!r} of distribution {entry.source} builds the task "
                f"{card.name!r}, which the benchmark {other!r} ({entries[other].source}) "
                "builds already"
            )
    return {name: entry.value for name, entry in entries.items()}


@dataclass(frozen=True)
class BenchmarkRow:
    """One registered benchmark as ``posbias list benchmarks`` lists it."""

    benchmark: str
    """The source's name: ``posbias benchmark build <benchmark>``."""
    tasks: tuple[str, ...]
    """The tasks it builds (none for a builder of plain tasks from any data set)."""
    source: str
    """``built-in``, or the distribution of the plugin that registered it."""
    description: str


class BenchmarkListing(list[BenchmarkRow]):
    """Every registered benchmark, one :class:`BenchmarkRow` each (:func:`benchmark_listing`);
    shown (``repr``, ``str``, a notebook's cell) as the table ``posbias list benchmarks``
    prints.

    Example:
        >>> listing = benchmark_listing()
        >>> listing[0].benchmark, listing[0].tasks
        ('squad-posq', ('SQuAD-PosQ', 'SQuAD-PosQ-tiny'))
        >>> print(repr(listing).splitlines()[0])
        | benchmark | tasks | source | description |
    """

    COLUMNS = ("benchmark", "tasks", "source", "description")

    def table(self) -> MarkdownTable:
        """The rows as a table (an empty tuple of tasks shown as ``—``)."""
        rows = [[r.benchmark, ", ".join(r.tasks) or "—", r.source, r.description] for r in self]
        return MarkdownTable(list(self.COLUMNS), rows)

    def __repr__(self) -> str:
        return self.table().to_markdown()

    __str__ = __repr__

    def _repr_markdown_(self) -> str:  # Jupyter renders the table
        return repr(self)


RECIPE = "from-corpus"
"""The recipe that builds a new position benchmark from any corpus (Z25's): a verb of its own,
``posbias benchmark from-corpus``, not a source of ``posbias benchmark build``."""
RECIPE_HELP = "build a position benchmark from any corpus (Z25's FineWeb-PosQ recipe)"


def benchmark_listing() -> BenchmarkListing:
    """Every registered benchmark, the tasks it builds and where it comes from, then the recipe
    (:data:`RECIPE`): the rows of ``posbias list benchmarks`` and ``pb.list_benchmarks()`` (a
    task name built twice is refused first: :func:`benchmarks`)."""
    benchmarks()
    registered = [
        BenchmarkRow(name, tuple(c.name for c in entry.value.cards), entry.source, entry.value.help)
        for name, entry in BENCHMARK_REGISTRY.entries().items()
    ]
    recipe = f"recipe, `posbias benchmark {RECIPE}`: {RECIPE_HELP}"
    return BenchmarkListing([*registered, BenchmarkRow(RECIPE, (), "built-in", recipe)])


def cards() -> dict[str, TaskCard]:
    """Every task card by task name."""
    return {card.name: card for bench in benchmarks().values() for card in bench.cards}


TASKS_DIR_ENV = "POSBIAS_TASKS_DIR"
"""Environment variable: a folder holding built task folders named after the tasks."""
HUB_NAMESPACE_ENV = "POSBIAS_HUB_NAMESPACE"
"""Environment variable: the Hub namespace whose ``<namespace>/<task name>`` repos hold tasks."""
DEFAULT_HUB_NAMESPACE = "hf-posbias"


def named_task_folder(name: str) -> Path | None:
    """The built folder of the registered task ``name`` at ``$POSBIAS_TASKS_DIR/<name>``, or
    ``None`` (then the task downloads from :func:`named_task_repo`).

    Example:
        >>> named_task_folder("No-Such-Task") is None
        True
    """
    root = os.environ.get(TASKS_DIR_ENV)
    if root:
        candidate = Path(root).expanduser() / name
        if (candidate / "task.json").exists():
            return candidate
    return None


def named_task_repo(name: str) -> str:
    """The Hub dataset repo a registered task downloads from when it has no folder.

    Example:
        >>> named_task_repo("PosIR").endswith("/PosIR")
        True
    """
    return f"{os.environ.get(HUB_NAMESPACE_ENV, DEFAULT_HUB_NAMESPACE)}/{name}"


def card_names() -> list[str]:
    """Names of the registered tasks (what ``get_task`` accepts besides a folder)."""
    return list(cards())


def find_card(name: str) -> TaskCard | None:
    """The card of a task name (case-insensitive), or ``None``."""
    known = cards()
    if name in known:
        return known[name]
    folded = {k.lower(): v for k, v in known.items()}
    return folded.get(str(name).lower())


def require_card(name: str) -> TaskCard:
    """The card of ``name``; an unknown name is a one-line error listing the known ones.

    Example:
        >>> require_card("PosIX")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: unknown task 'PosIX' (did you mean 'PosIR'?); known tasks: ...
    """
    card = find_card(name)
    if card is None:
        from hf_posbias.suggestions import suggest

        raise InputError(
            f"unknown task {name!r}{suggest(name, card_names())}; known tasks: "
            f"{', '.join(card_names())}"
        )
    return card


def resolve_task_reference(name_or_path: Any) -> tuple[Any, TaskCard | None]:
    """``(folder, card)`` of what ``posbias evaluate --task`` takes, checked without mteb.

    An existing folder gives its path (its ``task.json`` read and checked) and the card of its
    task name if registered; a registered name gives ``(None, card)``. A missing folder or an
    unknown name is one :class:`InputError` line with the closest known names, before any heavy
    library loads (:func:`hf_posbias.tasks.mteb_tasks.get_task` builds the task from this).

    Example:
        >>> resolve_task_reference("squad-posq-tiny")[1].name
        'SQuAD-PosQ-tiny'
        >>> resolve_task_reference("/nonexistent")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: task folder /nonexistent does not exist (or give a task ...
    """
    from pathlib import Path

    from hf_posbias.tasks.taskdata import read_task_info

    text = str(name_or_path)
    candidate = Path(text).expanduser()
    if candidate.exists():
        return candidate, find_card(read_task_info(candidate).name)
    if is_missing_folder(text):
        raise InputError(
            f"task folder {text} does not exist (or give a task name: {', '.join(card_names())})"
        )
    return None, require_card(text)


def is_missing_folder(reference: str) -> bool:
    """Whether a task reference names a folder (a path, not a registered task name) that is not
    there: what :func:`resolve_task_reference` refuses, and what a study's dry run lists as
    not built yet.

    Example:
        >>> is_missing_folder("tasks/beir/nfcorpus-not-built"), is_missing_folder("PosIR")
        (True, False)
    """
    import os
    from pathlib import Path

    text = str(reference)
    if Path(text).expanduser().exists() or find_card(text) is not None:
        return False
    return text.startswith((".", "/", "~")) or os.sep in text
