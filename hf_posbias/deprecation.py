"""Former library calls and module paths kept for one release, with a ``DeprecationWarning``.

Module paths: the rooms-by-job layout moved modules (``hf_posbias.evaluation.data.tasks`` is
:mod:`hf_posbias.tasks.mteb_tasks` now, see :data:`MOVED_MODULES`); :func:`install_moved_modules`
(run by ``import hf_posbias``) keeps the old paths importable, each serving the new module's
names, and says where the module lives now.

The library calls behind the verbs (``evaluate_model``, ``audit_model``, ``run_study``, …) once
took the verb's settings object; they take explicit keyword arguments now, as
``mteb.evaluate(model, tasks, …)`` does. :func:`former_settings_call` keeps the old call working:
it unpacks the settings object into the new call and says what to write instead.

Example:
    >>> import warnings
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Options:
    ...     n: int = 1
    >>> @former_settings_call(Options, lambda o: ((), {"n": o.n}), instead="double(n=...)")
    ... def double(*, n: int) -> int:
    ...     return 2 * n
    >>> double(n=2)
    4
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     double(Options(n=3))
    6
    >>> str(caught[0].message)
    'double(Options) is deprecated and will be removed in the next release: call double(n=...)'
"""

from __future__ import annotations

import functools
import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

Unpack = Callable[..., tuple[tuple[Any, ...], dict[str, Any]]]
"""``unpack(settings, *later_args, **kwargs)`` → the new call's positional arguments (after the
ones before the settings object) and its keyword arguments."""


def former_settings_call(
    settings_type: type, unpack: Unpack, *, instead: str, position: int = 0
) -> Callable[[F], F]:
    """Accept the former call of the decorated function: a ``settings_type`` object as
    positional argument ``position``.

    Such a call is turned into the new one by ``unpack`` and warns (``DeprecationWarning``,
    naming the call to write ``instead``); any other call goes through unchanged.
    """

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if len(args) > position and isinstance(args[position], settings_type):
                warnings.warn(
                    f"{func.__name__}({type(args[position]).__name__}) is deprecated and will be "
                    f"removed in the next release: call {instead}",
                    DeprecationWarning,
                    stacklevel=2,
                )
                later, keywords = unpack(*args[position:], **kwargs)
                return func(*args[:position], *later, **keywords)
            return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


MOVED_MODULES: dict[str, str] = {
    "hf_posbias.evaluation.data": "hf_posbias.tasks",
    "hf_posbias.evaluation.data.tasks": "hf_posbias.tasks.mteb_tasks",
    "hf_posbias.evaluation.data.taskdata": "hf_posbias.tasks.taskdata",
    "hf_posbias.evaluation.data.positions": "hf_posbias.tasks.positions",
    "hf_posbias.evaluation.data.registry": "hf_posbias.tasks.registry",
    "hf_posbias.evaluation.data.benchmarks": "hf_posbias.tasks.benchmarks",
    "hf_posbias.evaluation.data.beir": "hf_posbias.tasks.beir",
    "hf_posbias.evaluation.builders": "hf_posbias.tasks.builders",
    **{
        f"hf_posbias.evaluation.builders.{name}": f"hf_posbias.tasks.builders.{name}"
        for name in (
            "climate_fever",
            "common",
            "fever",
            "fineweb",
            "hotpotqa",
            "jsonl",
            "posir",
            "scifact",
            "squad",
        )
    },
    "hf_posbias.evaluation.statistics": "hf_posbias.statistics",
    "hf_posbias.evaluation.statistics.psi": "hf_posbias.statistics.psi",
    "hf_posbias.evaluation.statistics.scoring": "hf_posbias.statistics.scoring",
    "hf_posbias.evaluation.statistics.uncertainty": "hf_posbias.statistics.uncertainty",
    "hf_posbias.evaluation.statistics.levels": "hf_posbias.statistics.levels",
    "hf_posbias.evaluation.statistics.position_scoring": "hf_posbias.tasks.position_scoring",
    "hf_posbias.evaluation.statistics.compare": "hf_posbias.evaluation.compare",
    "hf_posbias.evaluation.statistics.summary": "hf_posbias.evaluation.summary",
    "hf_posbias.evaluation.metrics": "hf_posbias.statistics.metrics",
    "hf_posbias.evaluation.construction": "hf_posbias.construction",
    "hf_posbias.evaluation.construction.build": "hf_posbias.construction.build",
    "hf_posbias.evaluation.construction.recipe": "hf_posbias.construction.recipe",
    "hf_posbias.evaluation.construction.settings": "hf_posbias.construction.settings",
    "hf_posbias.evaluation.runs.audit": "hf_posbias.analysis.audit",
    "hf_posbias.listwise.records": "hf_posbias.rerankers.records",
    "hf_posbias.listwise.rerankers": "hf_posbias.rerankers",
    **{
        f"hf_posbias.listwise.rerankers.{name}": f"hf_posbias.rerankers.{name}"
        for name in (
            "base",
            "first",
            "generative",
            "identifiers",
            "loading",
            "pointwise",
            "prompt",
            "window",
        )
    },
    # the data pipeline's room (issue 41): its loose modules moved in
    "hf_posbias.corpus": "hf_posbias.pipeline.corpus",
    "hf_posbias.sampling": "hf_posbias.pipeline.sampling",
    # the demo is a small study on the embedded default: it lives with the study
    "hf_posbias.demo": "hf_posbias.study.demo",
    # what both trainers share (issue 41): the neutral room hf_posbias.trainer_base
    **{
        f"hf_posbias.training.{name}": f"hf_posbias.trainer_base.{name}"
        for name in ("callbacks", "memory", "scaffold", "shapes")
    },
}
"""Former module path → where the module lives now (the rooms-by-job layout)."""


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves each former path of :data:`MOVED_MODULES` as a module of its own that hands out
    the new module's names: the new module itself is left untouched (its ``__spec__`` and
    ``__name__`` stay true)."""

    def find_spec(self, fullname: str, path: object, target: object = None) -> object:
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec: object) -> None:
        return None  # the default module object; exec_module fills it

    def exec_module(self, module: types.ModuleType) -> None:
        new_name = MOVED_MODULES[module.__name__]
        warnings.warn(
            f"{module.__name__} moved to {new_name}: import it from there (the old path "
            "goes in the next release)",
            DeprecationWarning,
            stacklevel=2,
        )
        new = importlib.import_module(new_name)
        module.__doc__ = new.__doc__
        module.__all__ = getattr(new, "__all__", [n for n in vars(new) if not n.startswith("_")])
        module.__getattr__ = functools.partial(getattr, new)  # PEP 562: names served lazily
        module.__dir__ = lambda: dir(new)


def install_moved_modules() -> None:
    """Make the former module paths of :data:`MOVED_MODULES` importable (once per process).

    Example:
        >>> import warnings
        >>> install_moved_modules()
        >>> MOVED_MODULES["hf_posbias.evaluation.statistics.psi"]
        'hf_posbias.statistics.psi'
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     from hf_posbias.evaluation.statistics.psi import psi as former_psi
        >>> from hf_posbias.statistics.psi import psi
        >>> former_psi is psi, psi([0.5, 1.0])
        (True, 0.5)
    """
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        # First: a former path is always the redirect, even where an older copy of the module
        # is still on disk (a stale file from an earlier install, an editable checkout).
        sys.meta_path.insert(0, _MovedModuleFinder())
