"""One query, its relevant passage moved slot by slot: the 1…k test, one position at a time.

The interactive form of ``posbias listwise test`` (the Space's listwise tab): a
:class:`SliderCase` is one judged query with its first-stage top-k and the relevant passage to
move; :func:`rerank_at` puts that passage at input position p (the others in first-stage order,
:func:`~hf_posbias.listwise.experiments.lists.controlled_list`), reranks with the same
sliding-window path
(:func:`~hf_posbias.rerankers.window.rerank_lists`) and scores nDCG@10 with the project's
one
scorer (:func:`~hf_posbias.listwise.experiments.runs.ndcg_at_10`), so a slot here gives exactly the
row
``posbias listwise test`` writes for that (query, position). A :class:`SliderCurve` collects the
positions visited so far.

Example:
    >>> from hf_posbias.rerankers.records import Passage, WindowRanking
    >>> class KeepOrder:  # a reranker with the strongest primacy bias: output = input
    ...     name, window_size = "keep", None
    ...     def rank_windows(self, windows):
    ...         return [WindowRanking(list(range(len(p))), [0.0] * len(p)) for _, p in windows]
    ...     def describe(self):
    ...         return {}
    >>> corpus = {d: Passage(d, f"text {d}") for d in ("a", "b", "c")}
    >>> task = RerankTask("toy", "test", corpus, {"q": "which?"}, {"q": {"c": 1}})
    >>> case = SliderCase(task, "q", ("a", "b", "c"), "c", False)
    >>> curve = SliderCurve("keep", "q", case.k)
    >>> for p in (3, 1):
    ...     curve.add(rerank_at(KeepOrder(), case, p))
    >>> curve.positions(), [o.output_rank for o in curve.ordered()], round(curve.psi(), 3)
    ([1, 3], [1, 3], 0.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hf_posbias.errors import InputError
from hf_posbias.listwise.experiments.taskio import RerankTask
from hf_posbias.rerankers.base import ListwiseReranker

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from hf_posbias.listwise.experiments.firststage import FirstStage


@dataclass(frozen=True)
class SliderCase:
    """One judged query: its first-stage top-k (in order) and the relevant passage to move
    (``injected``: it was not retrieved and replaces the k-th, as in the controlled test)."""

    task: RerankTask
    query_id: str
    candidates: tuple[str, ...]
    relevant: str
    injected: bool

    @property
    def k(self) -> int:
        """The list length (input slots 1…k)."""
        return len(self.candidates)

    @property
    def query(self) -> str:
        """The query text."""
        return self.task.queries[self.query_id]


def slider_case(task: RerankTask, query_id: str, first_stage: FirstStage, k: int) -> SliderCase:
    """The case of ``query_id``: first-stage top-k and the relevant passage the test moves."""
    from hf_posbias.listwise.experiments.firststage import check_k
    from hf_posbias.listwise.experiments.lists import relevant_for

    if query_id not in task.queries or not task.relevant(query_id):
        raise InputError(f"query {query_id!r} has no relevant document in {task.name}")
    check_k(k, len(task.corpus))
    candidates = first_stage.top_k(task.queries[query_id], k)
    relevant, injected = relevant_for(task, query_id, candidates)
    return SliderCase(task, query_id, tuple(candidates), relevant, injected)


@dataclass(frozen=True)
class SlotOutcome:
    """The reranker's answer with the relevant passage at input ``position`` (1-based)."""

    position: int
    input: list[str]
    ranking: list[str]
    output_rank: int
    """1-based rank of the moved relevant passage in the reranked list."""
    ndcg_at_10: float


def rerank_at(reranker: ListwiseReranker, case: SliderCase, position: int) -> SlotOutcome:
    """Rerank ``case`` with its relevant passage at input ``position`` (see the module doc)."""
    from hf_posbias.listwise.experiments.lists import controlled_list
    from hf_posbias.listwise.experiments.runs import ndcg_at_10
    from hf_posbias.rerankers.window import rerank_lists

    doc_ids = controlled_list(list(case.candidates), case.relevant, int(position))
    passages = case.task.passages(doc_ids)
    (result,) = rerank_lists(reranker, [(case.query, passages)])
    row = {"query_id": case.query_id, "ranking": result.ranking}
    (score,) = ndcg_at_10([row], {case.query_id: case.task.qrels[case.query_id]})
    return SlotOutcome(
        position=int(position),
        input=doc_ids,
        ranking=list(result.ranking),
        output_rank=result.ranking.index(case.relevant) + 1,
        ndcg_at_10=float(score),
    )


@dataclass
class SliderCurve:
    """The positions of one (reranker, query) visited so far; a revisit replaces the point."""

    reranker: str
    query_id: str
    k: int
    outcomes: dict[int, SlotOutcome] = field(default_factory=dict)

    def add(self, outcome: SlotOutcome) -> None:
        """Record (or replace) the outcome at its position."""
        self.outcomes[outcome.position] = outcome

    def positions(self) -> list[int]:
        """Visited input positions, ascending."""
        return sorted(self.outcomes)

    def ordered(self) -> list[SlotOutcome]:
        """The outcomes by input position."""
        return [self.outcomes[p] for p in self.positions()]

    def psi(self) -> float | None:
        """PSI (the project's formula) over the visited positions; ``None`` below two
        positions or when every nDCG@10 is 0."""
        from hf_posbias.statistics.psi import defined_psi

        scores = [o.ndcg_at_10 for o in self.ordered()]
        return defined_psi(scores) if len(scores) >= 2 else None

    def to_dict(self) -> dict[str, Any]:
        """The curve as plain data (JSON)."""
        return {
            "reranker": self.reranker,
            "query_id": self.query_id,
            "k": self.k,
            "positions": self.positions(),
            "ndcg_at_10": [round(o.ndcg_at_10, 6) for o in self.ordered()],
            "output_rank": [o.output_rank for o in self.ordered()],
            "psi": self.psi(),
        }


def slider_figure(curve: SliderCurve, current: int | None = None, title: str = "") -> Figure:
    """nDCG@10 (left axis) and the relevant passage's output rank (right axis, 1 at the top)
    against its input position, for the positions visited so far; ``current`` is marked."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.0), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    xs = curve.positions()
    outcomes = curve.ordered()
    ax.plot(xs, [o.ndcg_at_10 for o in outcomes], marker="o", label="nDCG@10")
    ax.set_ylim(0.0, 1.02)
    ax.set_xlim(0.5, curve.k + 0.5)
    ax.set_xticks(_ticks(curve.k))
    ax.set_xlabel("input position of the relevant passage")
    ax.set_ylabel("nDCG@10")
    ranks = ax.twinx()
    ranks.plot(xs, [o.output_rank for o in outcomes], marker="s", linestyle=":", color="tab:orange")
    ranks.set_ylim(curve.k + 0.5, 0.5)  # rank 1 at the top
    ranks.set_ylabel("output rank of the relevant passage", color="tab:orange")
    if current is not None and current in curve.outcomes:
        ax.axvline(current, color="grey", alpha=0.4)
    ax.set_title(title or f"{curve.reranker}: query {curve.query_id}", fontsize=10)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig


def _ticks(k: int) -> Sequence[int]:
    return list(range(1, k + 1)) if k <= 20 else list(range(1, k + 1, max(1, k // 10)))
