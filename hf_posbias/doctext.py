"""The text a retriever embeds or indexes for a titled document: one function for every verb.

A dense model (``posbias evaluate`` through mteb, the listwise dense and sparse first stages,
the study's evaluation units, ``audit``, the remedies, the Space) and BM25 (``--model bm25``,
the listwise BM25 first stage) all see a document as mteb 2.x's retrieval data loader joins it
(``mteb._create_dataloaders._corpus_to_dict``): the title, one space, the text, stripped; the
text alone (stripped) when the title is empty. BM25's words are the same either way (mteb's own
BM25 joins with a newline, which its word pattern never reads).

The listwise reranker's prompt form (``Title: … Content: …``,
:meth:`hf_posbias.rerankers.records.Passage.content`) is a different thing: what an LLM reads
inside its prompt, and what the pointwise reranker scores; it never decides a first-stage
ranking.

Example:
    >>> retriever_text("Cat", "It purrs. ")
    'Cat It purrs.'
    >>> retriever_text("", " It purrs.")
    'It purrs.'
"""

from __future__ import annotations

DOCUMENT_FORM = "title text"
"""The name of :func:`retriever_text`'s form, recorded in every first stage's cache key and
manifest (``first_stage.json``) so that lists made with another form are never reused."""


def retriever_text(title: str | None, text: str | None) -> str:
    """What a retriever embeds or indexes for a document with ``title`` and ``text``: mteb's
    ``(title + " " + text).strip()``, or ``text.strip()`` without a title."""
    title = title or ""
    text = text or ""
    return (title + " " + text).strip() if title else text.strip()
