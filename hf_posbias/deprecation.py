"""Former library calls kept for one release, with a ``DeprecationWarning``.

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
