"""Your own prompt, verbatim: a Jinja template file in place of a stage's shipped prompt.

Every LLM stage of the toolkit ships the project's own wording. A researcher who wants another
one — a paper's prompt as printed — passes a prompt file (``--stage1-prompt-file``,
``--summary-prompt-file``, …): a Jinja template that may use the stage's documented variables
(:data:`PROMPT_STAGES`) and nothing else. The file is checked when the settings are read, before
any model loads or any request is sent: an unknown variable, or a template that does not parse,
is one line naming the file, the variable and the variables the stage knows.

The shipped prompts are Python ``str.format`` strings (``{title}``); a file is Jinja
(``{{ title }}``), so JSON braces need no escaping. Both have ``.format(**values)``, so a stage
renders whichever it was given the same way (:func:`stage_prompt`). Where each paper prints its
prompts: ``docs/papers.md``.

Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "summary.j2"
    >>> _ = path.write_text("Summarise {{ title }}: {{ passage }} Reply as JSON {}")
    >>> prompt = load_prompt_file(path, "summary")
    >>> prompt.format(title="Owls", passage="Owls nest in trees.")
    'Summarise Owls: Owls nest in trees. Reply as JSON {}'
    >>> _ = path.write_text("Summarise {{ titel }}")
    >>> load_prompt_file(path, "summary")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hf_posbias.errors.InputError: ...: unknown variable 'titel' in the summary prompt (known: ...)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_posbias.errors import InputError
from hf_posbias.settings import flag_name, setting


@dataclass(frozen=True)
class PromptStage:
    """One LLM stage whose prompt a file may replace: its variables, its setting and flag."""

    name: str
    variables: tuple[str, ...]
    what: str

    @property
    def field(self) -> str:
        """The settings field that names the stage's prompt file (``stage1_prompt_file``)."""
        return f"{self.name}_prompt_file"

    @property
    def flag(self) -> str:
        """Its flag (``--stage1-prompt-file``)."""
        return flag_name(self.field)


PROMPT_STAGES: dict[str, PromptStage] = {
    s.name: s
    for s in (
        PromptStage(
            "stage1",
            ("title", "document", "personas"),
            "query generation, stage 1 (persona, difficulty, query length; YHP26)",
        ),
        PromptStage(
            "stage2",
            ("persona", "difficulty", "length", "position", "title", "document", "segment"),
            "query generation, stage 2 (a query for the target segment; YHP26)",
        ),
        PromptStage(
            "summary",
            ("title", "passage"),
            "benchmark builder: the passage summary (Zeng et al.)",
        ),
        PromptStage(
            "faq",
            ("summary", "chunk", "n"),
            "benchmark builder: FAQ questions of a chunk (Zeng et al.)",
        ),
        PromptStage(
            "judge",
            ("query", "segment"),
            "benchmark builder: the 0-4 relevance judge of both filtering stages (Zeng et al.)",
        ),
        PromptStage(
            "audit",
            ("query", "segment"),
            "the yes/no segment audit judge (YHP26)",
        ),
    )
}
"""Every stage a prompt file can replace, by name."""


@dataclass(frozen=True)
class PromptTemplate:
    """A prompt file's Jinja template for one stage (rendered with :meth:`format`)."""

    stage: str
    path: str
    text: str

    def format(self, **values: Any) -> str:
        """The prompt with ``values`` filled in (every variable must be given)."""
        import jinja2

        env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
        return env.from_string(self.text).render(**values)

    def __str__(self) -> str:
        return self.text


def load_prompt_file(path: str | Path, stage: str) -> PromptTemplate:
    """Read and check a prompt file for ``stage`` (:data:`PROMPT_STAGES`); one-line errors."""
    import jinja2
    from jinja2 import meta

    known = PROMPT_STAGES[stage]
    target = Path(path)
    if not target.is_file():
        raise InputError(f"{known.flag}: prompt file {target} not found")
    text = target.read_text(encoding="utf-8")
    try:
        parsed = jinja2.Environment().parse(text)
    except jinja2.TemplateSyntaxError as err:
        raise InputError(
            f"{target}: not a Jinja template (line {err.lineno}: {err.message})"
        ) from None
    unknown = sorted(meta.find_undeclared_variables(parsed) - set(known.variables))
    if unknown:
        raise InputError(
            f"{target}: unknown variable {unknown[0]!r} in the {stage} prompt "
            f"(known: {', '.join(known.variables)})"
        )
    return PromptTemplate(stage, str(target), text)


def prompt_file_setting(stage: str, prompt: str, *, scope: str = "") -> Any:
    """The ``<stage>_prompt_file`` setting: a file replacing ``prompt``, whose help names the
    stage's variables (:data:`PROMPT_STAGES`); ``scope`` starts the help (``"LLM generators: "``).

    Example:
        >>> print(prompt_file_setting("summary", "the summary prompt").metadata["help"])
        Jinja template replacing the summary prompt (variables: title, passage)
    """
    variables = ", ".join(PROMPT_STAGES[stage].variables)
    return setting(
        f"{scope}Jinja template replacing {prompt} (variables: {variables})", default=None
    )


def check_prompt_files(settings: Any, *stages: str) -> None:
    """Read and check the prompt file ``settings`` gives for each of ``stages`` (its
    ``<stage>_prompt_file``), so that a bad file is one line before any model loads.

    Example:
        >>> from types import SimpleNamespace
        >>> check_prompt_files(SimpleNamespace(faq_prompt_file="nowhere.j2"), "faq")
        Traceback (most recent call last):
        ...
        hf_posbias.errors.InputError: --faq-prompt-file: prompt file nowhere.j2 not found
    """
    for stage in stages:
        path = getattr(settings, PROMPT_STAGES[stage].field)
        if path is not None:
            load_prompt_file(path, stage)


def stage_prompt(path: str | Path | None, stage: str, shipped: str) -> str | PromptTemplate:
    """The prompt of ``stage``: the file's template when a file is given, else ``shipped``.

    Example:
        >>> stage_prompt(None, "judge", "Q: {query}").format(query="why?")
        'Q: why?'
    """
    return shipped if path is None else load_prompt_file(path, stage)
