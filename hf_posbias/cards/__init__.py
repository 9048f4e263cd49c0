"""Cards: dataset and model cards rendered from the Jinja templates in dataset_cards/ and
model_cards/ (:mod:`~hf_posbias.cards.templates`), and the checkpoint card both trainers write
(:mod:`~hf_posbias.cards.checkpoint`).

Templates are filled only with measured statistics passed in by the caller; an undefined
variable is an error (``StrictUndefined``), so a card can never ship with a silent blank.

Example:
    >>> from hf_posbias.cards.templates import available_templates
    >>> "model.md.j2" in available_templates("model")
    True
"""
