"""Publishing: the end of the data flow (scored pool + training sets → Hub dataset repos).

- :mod:`~hf_posbias.publish.repo` — the repo-folder layout (``README.md``, ``.gitattributes``,
  ``data/<config>/`` parquet shards) that ``load_dataset`` reads like the Hub repo;
- :mod:`~hf_posbias.publish.dataset_card` — what the pool and training-set cards say
  (``DatasetCardInfo``, measured tables) and ``write_pool_repo`` / ``write_train_repo``.

Uploading a written folder is :func:`hf_posbias.hub.upload_folder`; reading one back is
:func:`hf_posbias.rows.readers.read_dataset`. Nothing upstream of this package imports it.

Example:
    >>> from hf_posbias.publish.dataset_card import DatasetCardInfo
    >>> DatasetCardInfo.__name__
    'DatasetCardInfo'
"""
