"""Listwise LLM rerankers under controlled *input* position (Q26, DebiasFirst).

hf-posbias measures where in a document the evidence sits; this package measures where in a
reranker's *input list* the relevant passage sits, and provides the pieces to train that bias
away. The reranker kinds themselves (records, the protocol, identifiers, the prompt, FIRST
scoring, generation mode, ListT5, the pointwise control, the sliding window, loading by name)
are the room :mod:`hf_posbias.rerankers`, shared with evaluation. Modules, one concept each:

- :mod:`~hf_posbias.listwise.experiments.experiment_settings` — one settings dataclass per
  experiment verb;
- :mod:`~hf_posbias.listwise.experiments.exchange` — rank_llm ``Request`` / ``Candidate`` /
  ``Result`` JSON;
- :mod:`~hf_posbias.listwise.experiments.taskio`,
  :mod:`~hf_posbias.listwise.experiments.firststage`,
  :mod:`~hf_posbias.listwise.experiments.lists` — task folders (BEIR or the project's own), the
  first stage (the package BM25, :mod:`hf_posbias.bm25`, or dense), query selection and the
  controlled lists;
- :mod:`~hf_posbias.listwise.experiments.runs` — the resumable per-query loop every experiment
  shares; :mod:`~hf_posbias.listwise.experiments.controlled` (the 1…k test),
  :mod:`~hf_posbias.listwise.experiments.shuffle` (original vs shuffled order),
  :mod:`~hf_posbias.listwise.experiments.propensity` (Eq. 5),
  :mod:`~hf_posbias.listwise.experiments.aggregate` (Borda, Kemeny local search),
  :mod:`~hf_posbias.listwise.experiments.plots`;
- :mod:`~hf_posbias.listwise.training.augment` (Pos-Aug),
  :mod:`~hf_posbias.listwise.training.trainset` (``build-train``, RankZephyr/FIRST data),
  :mod:`~hf_posbias.listwise.training.losses` (L_Rank, L_Rank-IPS, the DebiasFirst joint loss),
  :mod:`~hf_posbias.listwise.training.collate` (training batches);
- :mod:`~hf_posbias.listwise.training.finetune_settings`,
  :mod:`~hf_posbias.listwise.training.train`, :mod:`~hf_posbias.listwise.training.card` — the
  DebiasFirst fine-tune (``posbias listwise train``,
  ``accelerate launch -m hf_posbias.listwise.training.train``), its checkpoint and model card;
  :mod:`~hf_posbias.listwise.experiments.compare` — two ``test`` runs against each other
  (paired); :mod:`~hf_posbias.listwise.demo` — the before/after demo;
  :mod:`~hf_posbias.listwise.experiments.slider` — the 1…k test one (query, position) at a time
  (the Space's listwise tab).

Nothing heavy is imported here.

Example:
    >>> from hf_posbias.rerankers.identifiers import identifier_labels
    >>> identifier_labels(3)
    ['A', 'B', 'C']
"""
