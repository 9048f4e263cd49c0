"""Every flag that takes a number declares its range, and refuses a number outside it and a word
in one line with exit status 2, before any heavy library loads (issue 49).

The flags are found by walking :func:`hf_posbias.cli.build_parser` (every verb, every group),
so a new numeric flag is tested the day it is added: it must declare a range
(``setting(range=…)``; :data:`hf_posbias.settings.ANY_NUMBER` is the deliberate "any number").
The required arguments of each verb get plausible values built from the parser itself. The cases
run through :func:`hf_posbias.cli.main` in one fresh process, which then says which heavy
libraries the refusals imported (none may).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from hf_posbias.cli import build_parser
from hf_posbias.cli.common import Verb
from hf_posbias.setting_values import ANY_NUMBER, NumberRange
from hf_posbias.settings import Settings, settings_from_args

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "sentence_transformers", "mteb", "datasets")
WORD = "abc"


def _verbs(
    parser: argparse.ArgumentParser,
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command that runs under ``parser`` (:func:`hf_posbias.cli.common.walk_commands`),
    with its command path; a command that takes a source first, once per source."""
    from hf_posbias.cli.common import walk_commands

    found = []
    for command in walk_commands(parser):
        found += [((*command.path, name), sub) for name, sub in command.sources.items()]
        found += [] if command.sources else [(command.path, command.parser)]
    return found


def _number_type(action: argparse.Action) -> type | None:
    """``int`` or ``float`` when the flag converts its text to that number (a number-or-word
    flag, ``--gpus-per-task 0.5|auto``, too), else ``None``."""
    kind = action.type.args[0] if isinstance(action.type, functools.partial) else action.type
    return kind if kind in (int, float) else None


def _inside(action: argparse.Action) -> str:
    """A number the flag takes (for a required numeric flag beside the one under test)."""
    declared: NumberRange = action.posbias_range
    value = 1.0 if declared.low is None else declared.low + 1
    return str(int(value) if _number_type(action) is int else value)


def _plausible(action: argparse.Action, out: str) -> list[str]:
    """Values for a required argument: a choice it offers, a number in its range, the output
    folder for ``out``, else a word (no check may read it before the numbers are checked)."""
    if action.choices:
        value = str(next(iter(action.choices)))
    elif _number_type(action) is not None:
        value = _inside(action)
    elif action.dest == "out":
        value = out
    else:
        value = "x"
    return [value]


def _required(parser: argparse.ArgumentParser, skip: argparse.Action, out: str) -> list[str]:
    """The required arguments of a verb with plausible values, positionals first, and its
    output folder where it takes one (``study run`` needs it unless it is a dry run)."""
    positionals, options = [], []
    for action in parser._actions:
        if action is skip or isinstance(action, argparse._HelpAction):
            continue
        if not action.option_strings and action.nargs not in ("?", "*"):
            positionals += _plausible(action, out)
        elif action.option_strings and (action.required or action.dest == "out"):
            options += [action.option_strings[0], *_plausible(action, out)]
    return positionals + options


def _text(value: float, kind: type) -> str:
    return str(int(value)) if kind is int and value == int(value) else str(value)


@dataclass(frozen=True)
class Case:
    """One command line that must be refused: ``kind`` is ``range`` (a number outside the
    declared range) or ``word`` (no number at all)."""

    verb: str
    flag: str
    kind: str
    argv: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.verb} {self.flag} {self.argv[-1]}"


def numeric_flags() -> list[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    """(verb, its parser, flag) for every flag of every verb that takes a number."""
    return [
        (" ".join(path), parser, action)
        for path, parser in _verbs(build_parser())
        for action in parser._actions
        if action.option_strings and _number_type(action) is not None
    ]


def cases(out: str) -> list[Case]:
    """Every flag that takes a number, fed each value just outside its range and a word."""
    found = []
    for verb, parser, action in numeric_flags():
        flag, kind = action.option_strings[0], _number_type(action)
        base = (*verb.split(), *_required(parser, action, out))
        declared: NumberRange = action.posbias_range
        for value in declared.outside():
            found.append(Case(verb, flag, "range", (*base, flag, _text(value, kind))))
        if kind is float and declared is not ANY_NUMBER:
            found.append(Case(verb, flag, "range", (*base, flag, "nan")))
        found.append(Case(verb, flag, "word", (*base, flag, WORD)))
    return found


def test_every_numeric_flag_declares_its_range() -> None:
    flags = numeric_flags()
    assert len(flags) > 200  # the walk reaches every verb and group (247 flags on 253bfeb)
    undeclared = sorted(f"{verb} {a.option_strings[0]}" for verb, _, a in flags
                        if getattr(a, "posbias_range", None) is None)  # fmt: skip
    # A flag that takes any number says so: setting(range=ANY_NUMBER).
    assert undeclared == []


PROBE = f"""
import contextlib, io, json, sys
HEAVY = {HEAVY!r}
from hf_posbias.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code
        except BaseException as exc:  # a traceback a user would have seen
            code = f"raised {{type(exc).__name__}}: {{exc}}"
    results.append({{"code": code, "err": err.getvalue()}})
print(json.dumps({{"results": results, "heavy": [m for m in HEAVY if m in sys.modules]}}))
"""


@pytest.fixture(scope="module")
def refusals(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Every case run by ``posbias`` in one fresh process: (exit status, stderr) by case id,
    the heavy libraries that process imported, and the output folder the cases named."""
    out = tmp_path_factory.mktemp("numbers") / "out"
    all_cases = cases(str(out))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([list(c.argv) for c in all_cases])],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,  # a guard against a hang, not a speed test
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout)
    by_id = {c.id: r for c, r in zip(all_cases, data["results"], strict=True)}
    return {"cases": by_id, "heavy": data["heavy"], "out": out}


CASES = cases("OUT")  # the same command lines; their ids do not name the output folder


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_number_outside_its_range_or_a_word_is_one_line_and_exit_2(
    case: Case, refusals: dict
) -> None:
    result = refusals["cases"][case.id]
    lines = result["err"].strip().splitlines()
    assert result["code"] == 2, (case.argv, result)
    assert "Traceback" not in result["err"]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert case.flag in lines[0], lines  # the flag --help shows, never a former spelling
    assert repr(case.argv[-1]) in lines[0] or case.argv[-1] in lines[0], lines


def test_the_refusals_load_no_heavy_library_and_write_nothing(refusals: dict) -> None:
    assert refusals["heavy"] == []
    assert not refusals["out"].exists()


def test_python_callers_get_the_range_check_first(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each verb's settings dataclass checks its ranges (Settings.__post_init__, at the end of
    # the cooperative chain) before any check of its own: a library caller building the
    # dataclass is refused as the command line is. Shown by making the range check raise.
    import hf_posbias.settings as settings_module

    class RangesChecked(Exception):
        pass

    def checked(*args: object, **kwargs: object) -> None:
        raise RangesChecked

    monkeypatch.setattr(settings_module, "check_ranges", checked)
    seen = set()
    for path, parser in _verbs(build_parser()):
        run = parser.get_default("func")  # partial(_run, Verb, prog): the verb's declaration
        verb = run.args[0] if isinstance(run, functools.partial) and run.args else None
        if not isinstance(verb, Verb) or verb.settings in seen:
            continue
        cls = verb.settings
        seen.add(cls)
        assert issubclass(cls, Settings), f"posbias {' '.join(path)}: {cls.__name__}"
        namespace = parser.parse_args(_required(parser, None, "out"))  # type: ignore[arg-type]
        with pytest.raises(RangesChecked):
            settings_from_args(cls, namespace)
    assert len(seen) > 40


def test_outside_values_lie_outside() -> None:
    for _, _, action in numeric_flags():
        declared: NumberRange = action.posbias_range
        assert all(not declared.admits(v) for v in declared.outside())
        assert declared is ANY_NUMBER or not declared.admits(math.nan)
