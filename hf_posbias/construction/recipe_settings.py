"""Settings of ``posbias benchmark from-corpus``: every model, threshold, size of Z25's recipe.

Each default is Zeng et al.'s value (App. A.2, A.4) where they give one. Where it names a model
that cannot run offline, the default is the project's offline stand-in and the help names Zeng
et al.'s choice: the packaged SmolLM2-135M (``smollm2-135m``) for summary, FAQ and judges, and
BM25 plus the packaged all-MiniLM-L6-v2 for rerankers and the recall embedder — a smoke-scale
stand-in, not of App. A.2's models' quality (``docs/benchmark_build.md``).

Example:
    >>> s = BenchmarkBuildSettings(corpus="demo", out="task")
    >>> s.chunk_words, s.min_words, s.max_words, s.recall_k, s.tiny_size
    (256, 500, 1024, 1000, 1000)
    >>> BenchmarkBuildSettings(corpus="demo", out="t", chunk_words=2000)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: chunk_words (2000) is larger than the passage range ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hf_posbias.errors import InputError
from hf_posbias.generation.prompt_files import check_prompt_files, prompt_file_setting
from hf_posbias.setting_values import at_least, between
from hf_posbias.settings import (
    ProgressSettings,
    setting,
    setting_label,
    shared_setting,
)

OFFLINE_LLM = "smollm2-135m"
OFFLINE_RERANKERS = "bm25,bi:all-MiniLM-L6-v2"
OFFLINE_EMBEDDER = "all-MiniLM-L6-v2"
GRADES = between(0, 4)
"""The judges' relevance grades (Z25's 0-4 scale)."""


@dataclass(kw_only=True)
class BenchmarkBuildSettings(ProgressSettings):
    """Everything ``posbias benchmark from-corpus`` depends on (pinned in every stage's manifest).

    Not :class:`hf_posbias.pipeline.stage_settings.BuildSettings`, the settings of the data
    pipeline's ``posbias data build``.
    """

    corpus: str = shared_setting("corpus")
    out: str = shared_setting("out")
    hub_folder: str | None = setting(
        "Hub dataset repo folder to write beside the task (default: <out>-hub)", default=None
    )
    task_name: str = setting("task name (task.json, card)", default="PosQ-Build")
    id_field: str = setting("corpus id field", default="id")
    text_field: str = setting("corpus text field", default="text")
    limit: int | None = shared_setting("limit", default=None)
    passages: int | None = setting(
        "build from a seeded sample of this many passages (default: all)",
        default=None,
        range=at_least(1),
    )
    # Not --min-words (the ICT generator's shortest query sentence).
    min_words: int = setting(
        "shortest passage in words (Z25: 500)",
        default=500,
        flag="--min-passage-words",
        range=at_least(1),
    )
    max_words: int = setting(
        "longest passage in words (Z25: 1,024)", default=1024, range=at_least(1)
    )
    cut_long: bool = setting(
        "cut records longer than --max-words at paragraph breaks into passages in range "
        "(Z25 selects passages in range and drops the rest; long articles need this)",
        default=False,
    )
    chunk_words: int = setting(
        "chunk size of the recursive splitter in words (Z25: 256)", default=256, range=at_least(1)
    )
    llm_backend: Literal["local-lm", "openai"] = setting(
        "chat backend of every LLM step: local-lm (transformers, here) or openai (any "
        "OpenAI-compatible endpoint: vLLM, TGI …)",
        default="local-lm",
    )
    llm_model: str = shared_setting(
        "llm_model",
        default=OFFLINE_LLM,
    )
    base_url: str | None = shared_setting("base_url", default=None)
    api_key_env: str = shared_setting("api_key_env", default="OPENAI_API_KEY")
    max_concurrency: int = shared_setting("max_concurrency", default=16)
    constrained: bool = shared_setting(
        "constrained",
        default=True,
    )
    temperature: float = setting(
        "sampling temperature of summary and FAQ", default=0.7, range=at_least(0)
    )
    judge_temperature: float = setting(
        "sampling temperature of the judges", default=0.0, range=at_least(0)
    )
    summary_max_tokens: int = setting("token budget of a summary", default=192, range=at_least(1))
    faq_max_tokens: int = setting(
        "token budget of one chunk's FAQ list", default=384, range=at_least(1)
    )
    faq_max_items: int = setting("most FAQ items per chunk", default=4, range=at_least(1))
    rerankers: str = setting(
        "reranker panel of Stage 1 and Stage 2 (parse_panel spec). Zeng et al.'s Stage 1 panel "
        "(§3.2, App. A.2): maidalun1020/bce-reranker-base_v1, "
        "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1, jinaai/jina-reranker-v1-turbo-en, given "
        "as a comma-separated list; `paper` is YHP26's verification panel (bge-reranker-v2-m3, "
        "gte-multilingual-reranker-base, jina-reranker-v2-base-multilingual), not Zeng's; "
        "offline stand-in: BM25 + MiniLM cosine",
        default=OFFLINE_RERANKERS,
    )
    trust_remote_code: bool = shared_setting(
        "trust_remote_code",
        default=False,
    )
    stage2_rerankers: str | None = setting(
        "Stage 2's pre-labelling panel, apart from Stage 1's (Z25: jina-reranker-v1-turbo-en, "
        "bge-reranker-v2-minicpm-layerwise, gte-reranker-modernbert-base); default: --rerankers",
        default=None,
    )
    judge_model: str | None = setting(
        "Stage 1's 0-4 judge LLM, apart from the generator (Z25: DeepSeek-V3-0324); default: "
        "--llm-model",
        default=None,
    )
    summary_prompt_file: str | None = prompt_file_setting("summary", "the summary prompt")
    faq_prompt_file: str | None = prompt_file_setting("faq", "the FAQ prompt")
    judge_prompt_file: str | None = prompt_file_setting(
        "judge", "the 0-4 judge's prompt of both stages"
    )
    judge_min_score: int = setting(
        "Stage 1: the labelled segment's least 0-4 grade (Z25: 3)", default=3, range=GRADES
    )
    judge_min_gap: int = setting(
        "Stage 1: how far the labelled segment's grade must lie above every other (Z25: 1)",
        default=1,
        range=between(0, 4),
    )
    embedder: str = setting(
        "Stage 2 recall embedding model (offline stand-in: the packaged all-MiniLM-L6-v2)",
        default=OFFLINE_EMBEDDER,
    )
    recall_k: int = setting(
        "Stage 2: passages recalled per question (Z25: 1,000)", default=1000, range=at_least(1)
    )
    prelabel_threshold: float = setting(
        "Stage 2: normalised reranker score a majority must reach (Z25: 0.5)",
        default=0.5,
        range=between(0, 1),
    )
    fn_judges: str = setting(
        "Stage 2: comma-separated LLM judges (Z25: three LLMs; offline: SmolLM2 three times — "
        "at --judge-temperature 0 identical judges are asked once and vote alike)",
        default=f"{OFFLINE_LLM},{OFFLINE_LLM},{OFFLINE_LLM}",
    )
    fn_min_score: int = setting(
        "Stage 2: a judge's grade that counts as relevant (Z25: 3)", default=3, range=GRADES
    )
    fn_min_votes: int = setting(
        "Stage 2: judges needed for a false negative (Z25: 2)", default=2, range=at_least(1)
    )
    # Per position, as fineweb-posq's --per-position (squad-posq's --tiny-size counts all the
    # queries).
    tiny_size: int = shared_setting("per_position", default=1000, flag="--per-position")
    tagging: str = setting(
        "Algorithm 1: single (one tag per chunk, the EMNLP version) or two-tag (the 2025 "
        "'Myopic Trap' version: a chunk straddling two thirds gets both tags, its questions "
        "one row per tag)",
        default="single",
        choices=("single", "two-tag"),
    )
    seed: int = shared_setting("seed")
    shard_size: int = setting(
        "work items per shard (the unit of resumption)", default=8, range=at_least(1)
    )
    batch_size: int = shared_setting("batch_size", default=8)
    overwrite: bool = shared_setting("overwrite", default=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.min_words > self.max_words:
            raise InputError(
                f"{setting_label('min_words', self)} ({self.min_words}) is above "
                f"{setting_label('max_words')} ({self.max_words})"
            )
        if self.chunk_words > self.max_words:
            raise InputError(
                f"{setting_label('chunk_words')} ({self.chunk_words}) is larger than the passage "
                f"range ({setting_label('max_words')} {self.max_words}): every passage would be "
                "one chunk tagged middle"
            )
        check_prompt_files(self, "summary", "faq", "judge")
        if self.fn_min_votes > len(self.judge_models):
            raise InputError(
                f"{setting_label('fn_min_votes')} ({self.fn_min_votes}) is more than the "
                f"{len(self.judge_models)} judge(s) of {setting_label('fn_judges')}"
            )

    @property
    def judge_models(self) -> list[str]:
        """The Stage 2 judges, in order."""
        models = [m.strip() for m in self.fn_judges.split(",") if m.strip()]
        if not models:
            raise InputError(f"{setting_label('fn_judges')} names no judge")
        return models

    @property
    def hub_dir(self) -> str:
        """The Hub dataset repo folder (``<out>-hub`` unless given)."""
        return self.hub_folder or f"{str(self.out).rstrip('/')}-hub"
