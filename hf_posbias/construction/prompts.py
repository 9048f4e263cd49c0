"""The recipe's LLM prompts: the shipped summary and FAQ prompts, a user's prompt file in their
place, and the 0–4 relevance judge the two filtering stages ask.

The summary and FAQ prompts are the project's own (Z25 prints its FAQ prompt in App. B.2; its
App. B.1 is an empty heading, the summary prompt being printed in the Myopic Trap version's
App. C.1); the judge's lives with the judge (:data:`hf_posbias.verification.judge.RELEVANCE_0_4`).
A stage's ``--<stage>-prompt-file`` replaces its prompt verbatim
(:mod:`hf_posbias.generation.prompt_files`).

Example:
    >>> from hf_posbias.construction.recipe_settings import BenchmarkBuildSettings
    >>> settings = BenchmarkBuildSettings(corpus="demo", out="t")
    >>> stage_prompt(settings, "summary") == SUMMARY_PROMPT
    True
    >>> relevance_judge(settings).template == stage_prompt(settings, "judge")
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hf_posbias.construction.recipe_settings import BenchmarkBuildSettings
    from hf_posbias.verification.judge import JudgePrompt

SUMMARY_SYSTEM = "You write concise, faithful summaries."
SUMMARY_PROMPT = (
    "Write a global summary of the passage below in 2 to 4 sentences.\n\n"
    "Title: {title}\n<passage>\n{passage}\n</passage>\n\n"
    'Answer with JSON: {{"summary": "<the summary>"}}'
)
SUMMARY_SCHEMA: dict[str, Any] = {
    "title": "summary",
    "type": "object",
    "properties": {"summary": {"type": "string", "minLength": 1, "maxLength": 600}},
    "required": ["summary"],
    "additionalProperties": False,
}
FAQ_SYSTEM = "You write FAQ entries for a document. You answer with one JSON object only."
FAQ_PROMPT = (
    "Summary of the whole document:\n{summary}\n\n"
    "A chunk of the document:\n<chunk>\n{chunk}\n</chunk>\n\n"
    "Write up to {n} frequently asked questions that this chunk answers. Each question must be "
    "answerable from the chunk alone and must make sense without seeing the chunk. Mark a "
    'question "simple" when one sentence of the chunk answers it, "complicated" when the answer '
    "combines several sentences.\n"
    'Answer with JSON: {{"faqs": [{{"question": "...", "answer": "...", "type": "simple"}}]}}'
)
"""FAQ generation (after Z25 prompt B.2): a chunk plus the passage summary → a JSON list."""


def summary_of(reply: str, constrained: bool) -> str:
    """The summary in a reply: the JSON field, or (free-form decoding) the reply itself.

    Example:
        >>> summary_of('{"summary": " A B. "}', True), summary_of('{"summ', True)
        ('A B.', '')
    """
    from hf_posbias.generation.llm import extract_json_object

    try:
        return str(extract_json_object(reply).get("summary") or "").strip()
    except ValueError:
        return "" if constrained else reply.strip()


def stage_prompt(settings: BenchmarkBuildSettings, stage: str) -> Any:
    """The prompt of ``stage`` (``summary``, ``faq``, ``judge``): the shipped one, or the
    user's prompt file (``settings.<stage>_prompt_file``)."""
    from hf_posbias.generation.prompt_files import stage_prompt as load_stage_prompt
    from hf_posbias.verification.judge import RELEVANCE_0_4

    shipped = {"summary": SUMMARY_PROMPT, "faq": FAQ_PROMPT, "judge": RELEVANCE_0_4.template}
    return load_stage_prompt(getattr(settings, f"{stage}_prompt_file"), stage, shipped[stage])


def relevance_judge(settings: BenchmarkBuildSettings) -> JudgePrompt:
    """The 0-4 relevance judge with the prompt of :func:`stage_prompt` (``judge``)."""
    from dataclasses import replace

    from hf_posbias.verification.judge import RELEVANCE_0_4

    return replace(RELEVANCE_0_4, template=stage_prompt(settings, "judge"))
