"""Builders that turn raw sources into position-bucketed retrieval sets (task folders).

Every builder returns a validated :class:`~hf_posbias.tasks.taskdata.PositionTaskData`
(save it with ``.save(folder)``); its ``task.json`` ``extra`` carries the bucket rule and a build
report that counts everything dropped and why. The CLI exposes each as
``posbias benchmark <name> --input … --out <task dir>``.

=====================  ==========================================================
``squad-posq``         :func:`build_squad_posq` — SQuAD v2 → SQuAD-PosQ (Z25)
``fineweb-posq``       :func:`build_fineweb_posq` — NovaSearch/FineWeb-PosQ (Z25)
``posir``              :func:`build_posir` — infgrad/PosIR-Benchmark-v1 (Z26)
``scifact``            :func:`build_scifact` — SciFact evidence positions
``climate-fever``      :func:`build_climate_fever` — Climate-FEVER evidence positions
``fever``              :func:`build_fever` — FEVER claims + wiki-pages
``hotpotqa``           :func:`build_hotpotqa` — HotpotQA distractor format
``from-jsonl``         :func:`build_from_jsonl` / :func:`build_from_records` — your own data
=====================  ==========================================================

Example:
    >>> from hf_posbias.tasks.benchmarks import build_from_records
    >>> data = build_from_records([{"query": "q", "document": "x" * 30, "evidence_start": 25}])
    >>> data.bucket_counts()
    {'begin': 0, 'middle': 0, 'end': 1}
"""

from __future__ import annotations

from hf_posbias.tasks.builders.climate_fever import build_climate_fever
from hf_posbias.tasks.builders.common import BuildReport, TaskAssembler, format_report
from hf_posbias.tasks.builders.fever import build_fever
from hf_posbias.tasks.builders.fineweb import build_fineweb_posq
from hf_posbias.tasks.builders.hotpotqa import build_hotpotqa
from hf_posbias.tasks.builders.jsonl import build_from_jsonl, build_from_records
from hf_posbias.tasks.builders.posir import build_posir
from hf_posbias.tasks.builders.scifact import build_scifact
from hf_posbias.tasks.builders.squad import build_squad_posq

__all__ = [
    "BuildReport",
    "TaskAssembler",
    "build_climate_fever",
    "build_fever",
    "build_fineweb_posq",
    "build_from_jsonl",
    "build_from_records",
    "build_hotpotqa",
    "build_posir",
    "build_scifact",
    "build_squad_posq",
    "format_report",
]
