"""Position Sensitivity Index (PSI) as a Hugging Face ``evaluate`` metric.

Load it by local path (works offline; ``evaluate.load("psi")`` would look on the Hub)::

    import evaluate
    from hf_posbias.statistics.metrics import psi_metric_path
    psi = evaluate.load(str(psi_metric_path()))
    psi.compute(scores=[0.5, 0.4, 0.25], positions=["begin", "middle", "end"])

The computation is :func:`hf_posbias.statistics.psi.summarize_positions` — this module
only
adapts inputs and outputs, so there is one PSI formula in the project.
"""

from __future__ import annotations

import datasets
import evaluate

from hf_posbias import citations
from hf_posbias.errors import InputError
from hf_posbias.statistics.psi import summarize_positions

_DESCRIPTION = """\
The Position Sensitivity Index (Zeng et al., 2025) measures how much a retriever's quality
depends on where the relevant information sits in a document: PSI = 1 - min(s) / max(s) over the
per-position scores s (typically nDCG@10 per evidence-position bucket). 0 means position-robust;
1 means the model fails completely at some position. It is undefined when every score is 0 and
must be read together with the mean score (a uniformly bad model also has a low PSI).
"""

_KWARGS_DESCRIPTION = """\
Args:
    scores (`list` of `float`): one non-negative score per position bucket (e.g. nDCG@10), in
        bucket order. `None` marks a bucket without queries: it is reported in
        `empty_positions` and left out of the summary, with a warning.
    positions (`list` of `str`, optional): bucket names, same length as `scores`
        (default `p1`, `p2`, ...).
Returns:
    psi (`float`): 1 - min/max over the non-empty buckets.
    mean (`float`): mean score over the non-empty buckets.
    worst_drop (`float`): largest drop relative to the first bucket, max_i (s_0 - s_i) / s_0.
    best_position (`str`), worst_position (`str`): buckets with the highest / lowest score.
    empty_positions (`list` of `str`): buckets given as `None`.
Examples:
    >>> import evaluate
    >>> from hf_posbias.statistics.metrics import psi_metric_path
    >>> psi = evaluate.load(str(psi_metric_path()))
    >>> out = psi.compute(scores=[0.5, 0.4, 0.25], positions=["begin", "middle", "end"])
    >>> round(out["psi"], 3), round(out["mean"], 4), out["worst_position"]
    (0.5, 0.3833, 'end')
"""

_CITATION = citations.Z25


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Psi(evaluate.Metric):
    """PSI, mean and worst drop over per-position scores."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"scores": datasets.Value("float64"), "positions": datasets.Value("string")}
            ),
            reference_urls=["https://arxiv.org/abs/2505.13950"],
        )

    def compute(self, *, scores=None, positions=None, **kwargs):
        """Like :meth:`evaluate.Metric.compute`; ``positions`` defaults to ``p1``, ``p2``, …."""
        if scores is not None and positions is None:
            positions = [f"p{i + 1}" for i in range(len(scores))]
        if scores is None:  # scores were given through add_batch/add
            return super().compute(**kwargs)
        return super().compute(scores=scores, positions=positions, **kwargs)

    def _compute(self, scores, positions):
        if len(set(positions)) != len(positions):
            raise InputError(f"position names must be unique, got {list(positions)}")
        summary = summarize_positions(dict(zip(positions, scores)))
        return {
            "psi": summary.psi,
            "mean": summary.mean,
            "worst_drop": summary.worst_drop,
            "best_position": summary.best_bucket,
            "worst_position": summary.worst_bucket,
            "empty_positions": summary.empty_buckets,
        }
