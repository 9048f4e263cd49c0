"""The study: bases × configurations (× poolings) trained, evaluated, reported and published.

- :mod:`~hf_posbias.study.spec` — the study spec (:class:`StudySpec`), read from YAML/JSON;
- :mod:`~hf_posbias.study.run` — ``posbias study run``: train, evaluate, report, resumably;
- :mod:`~hf_posbias.study.report` — ``posbias study report`` (a study folder, or run folders
  with ``--out``);
- :mod:`~hf_posbias.study.publish` — checkpoints and results to the Hub (``--hub-org``).
"""
