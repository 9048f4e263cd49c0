"""run_generation: report, outputs on disk, manifest pinning, and resume after a kill."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from hf_posbias.corpus.documents import Document, prepare_documents
from hf_posbias.corpus.sources import read_wikiextractor
from hf_posbias.errors import InputError
from hf_posbias.generation.base import GenerationResult
from hf_posbias.generation.ict import ICTGenerator
from hf_posbias.generation.stage import load_candidates, run_generation


@pytest.fixture(scope="module")
def wiki_docs(shared_data):
    docs, _ = prepare_documents(read_wikiextractor(shared_data / "wikipedia_enwiki_wikiextractor"))
    extra, _ = prepare_documents([{"id": "nolines", "text": "a line without a stop\n" * 20}])
    return docs + extra


@dataclass
class CountingICT:
    """ICT with a call counter that can simulate a kill (KeyboardInterrupt) after N documents."""

    inner: ICTGenerator
    crash_after: int | None = None
    calls: list[str] = field(default_factory=list)
    name: str = "ict"

    def params(self) -> dict[str, Any]:
        return self.inner.params()

    def generate(self, document: Document) -> GenerationResult:
        if self.crash_after is not None and len(self.calls) >= self.crash_after:
            raise KeyboardInterrupt
        self.calls.append(document.id)
        return self.inner.generate(document)


def test_report_and_files(wiki_docs, tmp_path):
    cands, report = run_generation(
        wiki_docs, ICTGenerator(), tmp_path, shard_size=8, progress=False
    )
    assert report.documents_in == len(wiki_docs)
    assert report.documents_excluded == {"no_eligible_sentence": 1}
    assert report.examples["no_eligible_sentence"] == ["nolines"]
    assert report.documents_with_candidates == len(wiki_docs) - 1
    assert report.candidates == len(cands)
    assert sum(report.positions_skipped.values()) + len(cands) == 3 * (len(wiki_docs) - 1)
    cells = sum(sum(row.values()) for row in report.per_bin_position.values())
    assert cells == len(cands)
    assert list(report.per_bin_position)[0] == "512-1024"  # sorted by lower edge
    assert load_candidates(tmp_path) == cands
    assert json.loads((tmp_path / "report.json").read_text()) == report.to_dict()
    assert any("documents excluded (no_eligible_sentence): 1" in x for x in report.summary_lines())
    # Candidates come in document order, then begin/middle/end.
    order = {d.id: i for i, d in enumerate(wiki_docs)}
    keys = [(order[c.doc_id], ("begin", "middle", "end").index(c.target_position)) for c in cands]
    assert keys == sorted(keys)


def test_resume_after_kill_redoes_nothing_and_matches_uninterrupted_run(wiki_docs, tmp_path):
    reference, ref_report = run_generation(
        wiki_docs, ICTGenerator(seed=5), tmp_path / "ref", shard_size=4, progress=False
    )
    crashing = CountingICT(ICTGenerator(seed=5), crash_after=10)
    with pytest.raises(KeyboardInterrupt):
        run_generation(wiki_docs, crashing, tmp_path / "run", shard_size=4, progress=False)
    finished = sorted((tmp_path / "run" / "shards").glob("shard-*.parquet"))
    assert len(finished) == 2  # 10 documents done = 2 full shards of 4; shard 3 was cut off
    assert not (tmp_path / "run" / "candidates.parquet").exists()

    resumed = CountingICT(ICTGenerator(seed=5))
    cands, report = run_generation(
        wiki_docs, resumed, tmp_path / "run", shard_size=4, progress=False
    )
    assert resumed.calls == [d.id for d in wiki_docs[8:]]  # finished shards not recomputed
    ids = [c.candidate_id for c in cands]
    assert len(ids) == len(set(ids))
    assert cands == reference and report == ref_report
    ref_bytes = (tmp_path / "ref" / "candidates.parquet").read_bytes()
    assert (tmp_path / "run" / "candidates.parquet").read_bytes() == ref_bytes

    # A third run finds everything finished and generates nothing.
    idle = CountingICT(ICTGenerator(seed=5))
    assert (
        run_generation(wiki_docs, idle, tmp_path / "run", shard_size=4, progress=False)[0] == cands
    )
    assert idle.calls == []


def test_resume_with_other_settings_or_documents_is_refused(wiki_docs, tmp_path):
    run_generation(wiki_docs[:6], ICTGenerator(seed=0), tmp_path, shard_size=4, progress=False)
    with pytest.raises(InputError, match="other parameters"):
        run_generation(wiki_docs[:6], ICTGenerator(seed=1), tmp_path, shard_size=4, progress=False)
    changed = [
        Document(d.id, d.text + " ", d.title, d.length_bin, d.segments) for d in wiki_docs[:6]
    ]
    with pytest.raises(InputError, match="other parameters"):
        run_generation(changed, ICTGenerator(seed=0), tmp_path, shard_size=4, progress=False)


def test_duplicate_document_ids_are_refused(wiki_docs, tmp_path):
    with pytest.raises(InputError, match="unique"):
        run_generation([wiki_docs[0], wiki_docs[0]], ICTGenerator(), tmp_path, progress=False)
