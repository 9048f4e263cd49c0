"""The data pipeline end to end: corpus → generate → verify → sample → publish.

Each stage reads the previous stage's folder inside one *work* directory and writes its own, so
a stage can be rerun alone (``posbias data generate --work W``) and a killed run resumes where it
stopped (generation and verification write shards; see :mod:`hf_posbias.shards`)::

    W/corpus/      manifest.json, documents.parquet, report.json   (posbias data corpus)
    W/heldout/     documents.parquet, report.json                  (corpus, with --holdout)
    W/candidates/  manifest.json, shards/, candidates.parquet, report.json  (posbias data generate)
    W/scored/      manifest.json, shards/, report.json [, audit.json]       (posbias data verify)
    W/train/       manifest.json, <config>.parquet, <config>.json           (posbias data sample)
    OUT/pool/, OUT/train/   Hub dataset repo folders                        (posbias data publish)

Every stage **records the parameters it used** in its ``manifest.json`` (corpus: source, bins,
limit, holdout; generate: generator and its options, seed; verify: panel members and their
normalisations, δ; sample: seed, budget, minimum cell, configurations), together with a
fingerprint of its input. Later stages and ``publish`` read them from there — never from
command-line defaults — so a card cannot contradict the data it describes; a stage rerun with
other parameters stops with a one-line error (or, with ``overwrite``, replaces that stage's
output) instead of mixing outputs.

:func:`~hf_posbias.pipeline.runner.build` runs them all with ``W = OUT/work``, after validating
every option first (:func:`~hf_posbias.pipeline.runner.prepare_build`): nothing is written
before the whole configuration is known to be usable. The same inputs and seed give
byte-identical parquet files. ``--executor ray|slurm``
(:class:`~hf_posbias.executors.options.ExecutorSettings`, taken by ``build``, ``generate`` and
``verify``) makes each generate and verify shard one unit of work
(:mod:`hf_posbias.executors.stages`) and gives the same files as ``local``, the default.

Example (each third of a document has its own topic, so an ICT query drawn from one third is
verifiably about that third):

    >>> import json, tempfile
    >>> from pathlib import Path
    >>> tmp = Path(tempfile.mkdtemp())
    >>> topics = [["river", "delta", "silt", "flood", "bank", "reed"],
    ...           ["castle", "tower", "siege", "wall", "gate", "moat"],
    ...           ["market", "grain", "trade", "coin", "stall", "price"]]
    >>> def third(w, j):
    ...     return " ".join(f"The {w[(j + i) % 6]} and the {w[(j + i + 1) % 6]} met the "
    ...                     f"{w[(j + i + 2) % 6]} by the {w[(j + i + 3) % 6]}." for i in range(4))
    >>> lines = [json.dumps({"id": f"d{j}", "text": " ".join(third(t, j) for t in topics)})
    ...          for j in range(6)]
    >>> _ = (tmp / "c.jsonl").write_text("\\n".join(lines))
    >>> from hf_posbias.pipeline.stage_settings import BuildSettings
    >>> from hf_posbias.pipeline.runner import build
    >>> result = build(BuildSettings(corpus=str(tmp / "c.jsonl"), out=tmp / "out", progress=False))
    >>> sorted(p.name for p in (tmp / "out").iterdir())
    ['pool', 'train', 'work']
    >>> from hf_posbias.rows.readers import read_dataset
    >>> sorted(set(read_dataset(result.train_dir, "uniform")["target_position"]))
    ['begin', 'end', 'middle']

The room's modules: :mod:`~hf_posbias.pipeline.checks` (stage folders, corpus sources, option
checks), :mod:`~hf_posbias.pipeline.stage_settings` (the stage verbs' settings),
:mod:`~hf_posbias.pipeline.stages` (the stage runners) and :mod:`~hf_posbias.pipeline.runner`
(``posbias data build``). The documents (:mod:`hf_posbias.corpus`) and the position configurations
and controlled sampling (:mod:`hf_posbias.sampling`) are rooms of their own on lower floors:
generation, verification, training and publish import them without importing the stages.
"""
