"""The evidence-moving section of `posbias analyze audit`, on a task with real evidence spans."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from hf_posbias.analysis.audit_evidence import task_cases
from hf_posbias.cli import main
from hf_posbias.tasks.taskdata import PositionTaskData, TaskInfo

TOPICS = ["river", "mountain", "castle", "harbour", "forest", "desert"]


def _task(folder: Path) -> Path:
    corpus, queries, qrels = [], [], []
    for i, topic in enumerate(TOPICS):
        sentences = [
            f"The {topic} region has a long and varied history.",
            f"Travellers often describe the {topic} as quiet in winter.",
            f"Local records mention the {topic} in several old maps.",
            "Its population grew slowly during the last century.",
            f"Schools near the {topic} teach the regional dialect.",
            f"The {topic} festival is held every spring since {1900 + i}.",
            "Visitors arrive mostly by train or by bus.",
            f"Scientists study the climate around the {topic} each year.",
            "Several museums display objects found in the area.",
            f"Most maps show the {topic} with a small blue symbol.",
        ]
        text = " ".join(sentences)
        evidence = sentences[5]
        start = text.index(evidence)
        bucket = ["begin", "middle", "end"][i % 3]
        corpus.append({"id": f"d{i}", "title": topic, "text": text})
        queries.append(
            {
                "id": f"q{i}",
                "text": f"When did the {topic} festival start?",
                "bucket": bucket,
                "evidence_start": start,
                "evidence_end": start + len(evidence),
                "doc_length": len(text),
            }
        )
        qrels.append({"query_id": f"q{i}", "doc_id": f"d{i}", "score": 1})
    info = TaskInfo(name="FestivalFacts", description="toy", buckets=["begin", "middle", "end"])
    return PositionTaskData(info, corpus, queries, qrels).save(folder)


def test_task_cases_cut_the_span_out(tmp_path: Path) -> None:
    data = PositionTaskData.load(_task(tmp_path / "task"))
    cases, skipped = task_cases(data)
    assert len(cases) == len(TOPICS) and skipped == {}
    assert cases[0].evidence == "The river festival is held every spring since 1900."
    assert "festival" not in cases[0].base


def test_audit_of_an_embedding_model_has_the_evidence_curve(
    minilm_path: str, tmp_path: Path
) -> None:
    task = _task(tmp_path / "task")
    out = tmp_path / "audit"
    assert (
        main(
            [
                "analyze",
                "audit",
                minilm_path,
                "--task",
                str(task),
                "--out",
                str(out),
                "--no-reversal",
            ]
        )
        == 0
    )
    md = (out / "audit.md").read_text()
    assert "## Evidence moving" in md
    assert f"over {len(TOPICS)} pairs" in md
    assert "| FestivalFacts | 6 (unreliable: < 20) |" in md  # the p1…p10 table row
    # What the curve used and what it did not, and that 6 pairs are too few, in both reports.
    html = (out / "audit.html").read_text()
    for text in (f"used {len(TOPICS)} of {len(TOPICS)} pairs", "UNRELIABLE: fewer than 20"):
        assert text in md and text in html
    assert f"{len(TOPICS)} queries with an evidence span" in md
    png = out / "plots" / "evidence-moving-FestivalFacts.png"
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_audit_of_bm25_says_why_there_is_no_curve(tmp_path: Path) -> None:
    task = _task(tmp_path / "task")
    out = tmp_path / "audit"
    assert (
        main(["analyze", "audit", "bm25", "--task", str(task), "--out", str(out), "--no-reversal"])
        == 0
    )
    assert "no embedding to probe" in (out / "audit.md").read_text()


def test_audit_model_takes_its_verbs_settings(tmp_path: Path) -> None:
    from hf_posbias.analysis.audit import audit_model
    from hf_posbias.evaluation.evaluation_settings import ModelAuditSettings
    from hf_posbias.evaluation.runs.runner import evaluate_model

    task = _task(tmp_path / "task")
    settings = ModelAuditSettings(
        model="bm25", task=(str(task),), out=str(tmp_path / "audit"), bootstrap=20, top_k=20
    )
    ctx, md_path, _ = audit_model(settings)
    assert [s.task for s in ctx.summaries] == ["FestivalFacts"] and md_path.is_file()
    # The options it shares with evaluate reach evaluate_model as its keywords.
    [evaluated] = evaluate_model("bm25", [task], out=tmp_path / "evaluate", bootstrap=20, top_k=20)
    [audited] = ctx.summaries
    assert (audited.top_k, audited.intervals) == (20, evaluated.intervals)
    # The settings' reversal (on by default) ran: done or skipped, not left out.
    assert len(ctx.reversals) + len(ctx.reversal_skipped) == 1
    quiet, _, _ = audit_model(replace(settings, out=str(tmp_path / "quiet"), reversal=False))
    assert (quiet.reversals, quiet.reversal_skipped) == ([], {})


@pytest.mark.parametrize("start,end", [(-1, -1), (5, 5)])
def test_queries_without_spans_are_counted(tmp_path: Path, start: int, end: int) -> None:
    data = PositionTaskData.load(_task(tmp_path / "task"))
    data.queries[0]["evidence_start"], data.queries[0]["evidence_end"] = start, end
    cases, skipped = task_cases(data)
    assert len(cases) == len(TOPICS) - 1 and skipped == {"no_evidence_span": 1}
