"""BibTeX entries of every source hf-posbias cites: one entry and one key per source.

Dataset cards, model cards, task metadata, the PSI metric module and the docs quote these
constants; nothing else spells a BibTeX entry. Combine several with :func:`bibtex`.

Example:
    >>> from hf_posbias.citations import YHP26, Z25, bibtex
    >>> bibtex(YHP26, Z25).count("@")
    2
    >>> citation_key(Z25)
    'zeng2025positionbias'
"""

from __future__ import annotations

import re

YHP26 = """@misc{yu2026positionbias,
  title = {Is Position Bias in Dense Retrievers Built In -- or Learned from Data?},
  author = {Yu and Han and Park},
  year = {2026},
  eprint = {2605.26578},
  archivePrefix = {arXiv}
}"""
"""The study hf-posbias reproduces: position-controlled training data shapes the bias."""

Z25 = """@inproceedings{zeng2025positionbias,
  title = {An Empirical Study of Position Bias in Modern Information Retrieval},
  author = {Zeng, Ziyang and Zhang, Dun and Li, Jiacheng and Zou, Panxiang and Yang, Yuqing},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2025},
  year = {2025},
  note = {arXiv:2505.13950; earlier title: Benchmarking the Myopic Trap: Positional Bias in
          Information Retrieval}
}"""
"""SQuAD-PosQ, FineWeb-PosQ and the Position Sensitivity Index (PSI)."""

Z26 = """@article{zeng2026posir,
  title = {PosIR: Position-Aware Heterogeneous Information Retrieval Benchmark},
  author = {Zeng, Ziyang and others},
  journal = {arXiv preprint arXiv:2601.08363},
  year = {2026},
  url = {https://arxiv.org/abs/2601.08363}
}"""
"""PosIR: 10 languages x 31 domains with evidence spans."""

Q26 = """@misc{qiao2026debiasfirst,
  title = {LLM-based Listwise Reranking under the Effect of Positional Bias},
  author = {Qiao and others},
  year = {2026},
  note = {DebiasFirst: inverse-propensity loss weighting and position-aware augmentation}
}"""
"""DebiasFirst: listwise LLM rerankers under controlled input position."""

C24 = """@inproceedings{coelho2024dwell,
  title = {Dwell in the Beginning: How Language Models Embed Long Documents for Dense
           Retrieval},
  author = {Coelho, Jo{\\~a}o and Martins, Bruno and Magalh{\\~a}es, Jo{\\~a}o and Callan, Jamie
            and Xiong, Chenyan},
  booktitle = {Proceedings of the 62nd Annual Meeting of the Association for Computational
               Linguistics (Volume 2: Short Papers)},
  year = {2024}
}"""
"""The evidence-moving probe."""

ICT = """@inproceedings{lee-etal-2019-latent,
  title = {Latent Retrieval for Weakly Supervised Open Domain Question Answering},
  author = {Lee, Kenton and Chang, Ming-Wei and Toutanova, Kristina},
  booktitle = {Proceedings of the 57th Annual Meeting of the Association for Computational
               Linguistics},
  year = {2019},
  pages = {6086--6096},
  url = {https://aclanthology.org/P19-1612}
}"""
"""The Inverse Cloze Task, hf-posbias's offline query generator."""

SQUAD2 = """@inproceedings{rajpurkar-etal-2018-know,
  title = {Know What You Don't Know: Unanswerable Questions for {SQuAD}},
  author = {Rajpurkar, Pranav and Jia, Robin and Liang, Percy},
  booktitle = {Proceedings of the 56th Annual Meeting of the Association for Computational
               Linguistics (Volume 2: Short Papers)},
  year = {2018},
  pages = {784--789},
  url = {https://aclanthology.org/P18-2124}
}"""

SCIFACT = """@inproceedings{wadden-etal-2020-fact,
  title = {Fact or Fiction: Verifying Scientific Claims},
  author = {Wadden, David and Lin, Shanchuan and Lo, Kyle and Wang, Lucy Lu and
            van Zuylen, Madeleine and Cohan, Arman and Hajishirzi, Hannaneh},
  booktitle = {Proceedings of the 2020 Conference on Empirical Methods in Natural Language
               Processing (EMNLP)},
  year = {2020},
  pages = {7534--7550},
  url = {https://aclanthology.org/2020.emnlp-main.609}
}"""

CLIMATE_FEVER = """@misc{diggelmann2020climatefever,
  title = {CLIMATE-FEVER: A Dataset for Verification of Real-World Climate Claims},
  author = {Diggelmann, Thomas and Boyd-Graber, Jordan and Bulian, Jannis and
            Ciaramita, Massimiliano and Leippold, Markus},
  year = {2020},
  eprint = {2012.00614},
  archivePrefix = {arXiv},
  primaryClass = {cs.CL}
}"""

FEVER = """@inproceedings{thorne-etal-2018-fever,
  title = {{FEVER}: a Large-scale Dataset for Fact Extraction and {VER}ification},
  author = {Thorne, James and Vlachos, Andreas and Christodoulopoulos, Christos and
            Mittal, Arpit},
  booktitle = {Proceedings of the 2018 Conference of the North American Chapter of the
               Association for Computational Linguistics (NAACL-HLT)},
  year = {2018},
  pages = {809--819},
  url = {https://aclanthology.org/N18-1074}
}"""

HOTPOTQA = """@inproceedings{yang-etal-2018-hotpotqa,
  title = {{H}otpot{QA}: A Dataset for Diverse, Explainable Multi-hop Question Answering},
  author = {Yang, Zhilin and Qi, Peng and Zhang, Saizheng and Bengio, Yoshua and
            Cohen, William and Salakhutdinov, Ruslan and Manning, Christopher D.},
  booktitle = {Proceedings of the 2018 Conference on Empirical Methods in Natural Language
               Processing},
  year = {2018},
  pages = {2369--2380},
  url = {https://aclanthology.org/D18-1259}
}"""

_KEY = re.compile(r"@\w+\{([^,\s]+),")


def citation_key(entry: str) -> str:
    """The BibTeX key of one entry."""
    match = _KEY.search(entry)
    if not match:
        raise ValueError("not a BibTeX entry")
    return match.group(1)


def bibtex(*entries: str) -> str:
    """Several entries as one BibTeX block, each once, in the given order."""
    seen: dict[str, str] = {}
    for entry in entries:
        seen.setdefault(citation_key(entry), entry.strip())
    return "\n\n".join(seen.values())
