"""Extension points: one typed registry per kind, filled by the built-ins and by plugins.

Each extension point is a :class:`Registry` of name → object of ONE type (the type the built-ins
register): benchmarks (:class:`hf_posbias.tasks.benchmark_registry.Benchmark`), bi-encoder remedies
(:class:`hf_posbias.evaluation.runs.remedy_kinds.Remedy`), listwise remedies
(:class:`hf_posbias.listwise.experiments.remedy_kinds.ListwiseRemedy`), reranker kinds
(:class:`hf_posbias.rerankers.kinds.RerankerKind`) and trainable bases
(:class:`hf_posbias.modeling.bases.ModelSpec`). A third party adds one from its own installed
package through a Python entry point of the kind's group (:data:`GROUPS`); the entry point's name
is the name it registers (see docs/extending.md)::

    [project.entry-points."hf_posbias.remedies"]
    meanp = "my_package.meanp:REMEDY"

Plugins are found lazily: :meth:`Registry.names` reads the entry points' names (no plugin is
imported), and a plugin's module is imported when a name that is not built in is asked for, or
when the whole registry is listed — once per process. A plugin that does not load, is not of
the registry's type, registers a name other than its entry point's, or takes a name that is
already taken (a built-in, a reserved word, another plugin) is a one-line
:class:`~hf_posbias.errors.PluginError` naming its distribution and entry point.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class Colour:
    ...     name: str
    >>> colours = Registry("example.colours", Colour, what="colour", builtins=lambda: [
    ...     Colour("red"), Colour("blue")])
    >>> colours.names(), colours.get("red"), colours.get("green")
    (['red', 'blue'], Colour(name='red'), None)
    >>> colours.source("blue")
    'built-in'
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from typing import Generic, TypeVar

from hf_posbias.errors import PluginError, first_line

T = TypeVar("T")

GROUPS: dict[str, str] = {
    "benchmarks": "hf_posbias.benchmarks",
    "remedies": "hf_posbias.remedies",
    "rerankers": "hf_posbias.rerankers",
    "bases": "hf_posbias.bases",
    "listwise_remedies": "hf_posbias.listwise_remedies",
}
"""The entry-point group of each extension point."""

BUILT_IN = "built-in"
"""The :meth:`Registry.source` of an object hf-posbias itself registers."""


NO_REMEDY = "none"
"""The plain model (or reranker) under every remedy verb: a choice of ``--remedy`` and the first
row of ``posbias listwise reranker-remedies``, never a remedy (no plugin may take the name)."""


@functools.lru_cache(maxsize=1)
def _installed_entry_points() -> EntryPoints:
    # One scan of the installed distributions for every group (each scan reads every
    # distribution's metadata): `posbias --help` pays it once, not once per extension point.
    return entry_points()


def _distribution(ep: EntryPoint) -> str:
    """The name of the distribution that declares ``ep``."""
    dist = getattr(ep, "dist", None)
    return str(dist.name) if dist is not None else "an unknown distribution"


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered object and where it comes from (``built-in`` or a distribution)."""

    name: str
    value: T
    source: str


class Registry(Generic[T]):
    """Name → object of one extension point: built-ins first, then the group's plugins.

    Args:
        group: the entry-point group plugins declare themselves in.
        kind: the type every object must have (the type of the built-ins).
        what: what one object is called in messages (``"remedy"``, ``"base model"`` …).
        builtins: the built-in objects, in order (called once, on first use, so a registry whose
            built-ins are discovered by importing modules stays cheap to create).
        name_of: the name an object registers under (default: its ``name`` attribute).
        reserved: names that are neither built-in objects nor available to plugins.
    """

    def __init__(
        self,
        group: str,
        kind: type[T],
        *,
        what: str,
        builtins: Callable[[], Iterable[T]],
        name_of: Callable[[T], str] = lambda value: str(value.name),  # type: ignore[attr-defined]
        reserved: Iterable[str] = (),
    ) -> None:
        self.group = group
        self.kind = kind
        self.what = what
        self.name_of = name_of
        self.reserved = tuple(reserved)
        self._builtins = builtins
        self._entries: dict[str, Entry[T]] | None = None
        self._plugins: set[str] = set()
        self._plugins_loaded = False

    # ----------------------------------------------------------------------- built-ins
    def _known(self) -> dict[str, Entry[T]]:
        if self._entries is None:
            entries: dict[str, Entry[T]] = {}
            for value in self._builtins():
                name = self.name_of(value)
                if name in entries:
                    raise RuntimeError(f"two built-in {self.what}s are named {name!r}")
                entries[name] = Entry(name, value, BUILT_IN)
            self._entries = entries
        return self._entries

    def add(self, value: T, *, source: str = BUILT_IN, overwrite: bool = False) -> T:
        """Register ``value`` from Python (a name already taken is refused unless ``overwrite``).

        Example:
            >>> numbers = Registry("example.numbers", int, what="number", builtins=lambda: [1],
            ...                    name_of=str)
            >>> numbers.add(2), numbers.names()
            (2, ['1', '2'])
        """
        if not isinstance(value, self.kind):
            raise TypeError(f"a {self.what} must be a {self.kind.__name__}, not {value!r}")
        name = self.name_of(value)
        known = self._known()
        if not overwrite and (name in known or name in self.reserved):
            raise ValueError(f"{self.what} {name!r} is already registered")
        known[name] = Entry(name, value, source)
        return value

    # ----------------------------------------------------------------------- plugins
    def _where(self, ep: EntryPoint) -> str:
        """How a message names a plugin: its name, distribution and entry point."""
        return (
            f"plugin {ep.name!r} of distribution {_distribution(ep)} "
            f"(entry point {self.group}: {ep.name} = {ep.value})"
        )

    def _plugin_entry_points(self) -> list[EntryPoint]:
        """The group's entry points, checked for names that are taken (nothing imported)."""
        points = sorted(_installed_entry_points().select(group=self.group), key=lambda e: e.name)
        taken = {n: e for n, e in self._known().items() if n not in self._plugins}
        seen: dict[str, EntryPoint] = {}
        for ep in points:
            if ep.name in self.reserved or ep.name in taken:
                entry = taken.get(ep.name)
                origin = BUILT_IN if entry is None else entry.source
                origin = origin if origin == BUILT_IN else f"{origin}-registered"
                raise PluginError(
                    f"{self._where(ep)} clashes with the {origin} {self.what} {ep.name!r}"
                )
            if ep.name in seen:
                raise PluginError(
                    f"{self._where(ep)} clashes with the {self.what} {ep.name!r} of "
                    f"distribution {_distribution(seen[ep.name])}"
                )
            seen[ep.name] = ep
        return list(seen.values())

    def _load(self, ep: EntryPoint) -> Entry[T]:
        try:
            value = ep.load()
        except Exception as err:  # any import-time failure of foreign code: one line
            raise PluginError(
                f"{self._where(ep)} does not load: {type(err).__name__}: {first_line(err)}"
            ) from None
        if not isinstance(value, self.kind):
            raise PluginError(
                f"{self._where(ep)} is a {type(value).__name__}, not a "
                f"{self.kind.__module__}.{self.kind.__name__}"
            )
        if self.name_of(value) != ep.name:
            raise PluginError(
                f"{self._where(ep)} registers a {self.what} named {self.name_of(value)!r}: name "
                "the entry point after it"
            )
        return Entry(ep.name, value, _distribution(ep))

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        known = self._known()
        for ep in self._plugin_entry_points():
            known[ep.name] = self._load(ep)
            self._plugins.add(ep.name)
        self._plugins_loaded = True

    def clear_plugins(self) -> None:
        """Forget the plugins found so far (after installing or removing a package in a
        running process); built-ins and objects added from Python stay."""
        _installed_entry_points.cache_clear()
        for name in self._plugins:
            self._known().pop(name, None)
        self._plugins.clear()
        self._plugins_loaded = False

    # ----------------------------------------------------------------------- lookups
    def names(self) -> list[str]:
        """Every name: built-ins (and objects added from Python), then plugins, none imported."""
        names = list(self._known())
        return names + [ep.name for ep in self._plugin_entry_points() if ep.name not in names]

    def entries(self) -> dict[str, Entry[T]]:
        """Every object with its source, plugins loaded (what a listing shows)."""
        self._load_plugins()
        return dict(self._known())

    def items(self) -> dict[str, T]:
        """Every object by name, plugins loaded."""
        return {name: entry.value for name, entry in self.entries().items()}

    def get(self, name: str) -> T | None:
        """The object registered as ``name`` (a plugin is imported only when asked for by a
        name that is not built in), or ``None``."""
        known = self._known()
        if name not in known:
            self._load_plugins()
        entry = known.get(name)
        return entry.value if entry is not None else None

    def source(self, name: str) -> str:
        """``built-in`` or the distribution that registered ``name``."""
        self.get(name)
        entry = self._known().get(name)
        if entry is None:
            raise KeyError(name)
        return entry.source


def remedy_registry(
    group: str, kind: type[T], *, what: str, builtins: Callable[[], Iterable[T]]
) -> Registry[T]:
    """The registry of one model kind's remedies (``group``: a key of :data:`GROUPS`), built
    like every other but with :data:`NO_REMEDY` reserved: the bi-encoder remedies and the
    listwise ones are two such registries.

    Example:
        >>> from types import SimpleNamespace as Fix
        >>> fixes = remedy_registry("remedies", Fix, what="fix", builtins=lambda: [Fix(name="a")])
        >>> fixes.group, fixes.reserved, fixes.names()[:1]
        ('hf_posbias.remedies', ('none',), ['a'])
    """
    return Registry(GROUPS[group], kind, what=what, builtins=builtins, reserved=(NO_REMEDY,))
