"""The command line a newcomer sees (issue 40): few verbs grouped by job, one listing verb,
former names hidden but working (with one warning), measured by ``scripts/cli_surface.py``."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from hf_posbias.cli import JOBS, build_parser, main

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cli_surface.py"


def _surface_module():
    spec = importlib.util.spec_from_file_location("cli_surface", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_help_shows_at_most_12_verbs_each_on_one_line_under_its_job() -> None:
    surface = _surface_module()
    parser = build_parser()
    counts = surface.surface(parser)
    assert counts["verbs"] <= 12
    # Issue 40 measured 52 leaves on e2b93ad and asks for at most 40.
    assert counts["leaves"] <= 40
    help_text = parser.format_help()
    placed = [name for _, names in JOBS for name in names]
    assert sorted(placed) == sorted(surface.visible_verbs(parser))  # no verb under "other"
    listing = help_text.split("commands (", 1)[1].splitlines()[1:]
    verb_lines = [line for line in listing if line.startswith("    ")]
    assert len(verb_lines) == counts["verbs"]
    assert all(len(line) <= 80 for line in verb_lines), verb_lines  # one terminal line each


@pytest.mark.parametrize(
    ("kind", "first_column"),
    [
        ("benchmarks", "benchmark"),
        ("bases", "base"),
        ("remedies", "remedy"),
        ("rerankers", "order"),
    ],
)
def test_list_prints_each_kind_with_its_source_column(kind, first_column, capsys) -> None:
    assert main(["list", kind]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    assert header.startswith(f"| {first_column} |") and "| source |" in header


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["study", "bases"], ["list", "bases"]),
        (["study", "remedies"], ["list", "remedies"]),
        (["benchmark", "list"], ["list", "benchmarks"]),
        (["listwise", "rerankers"], ["list", "rerankers"]),
    ],
)
def test_a_former_listing_verb_prints_the_same_table_and_warns(old, new, capsys) -> None:
    assert main(new) == 0
    expected = capsys.readouterr()
    assert main(old) == 0
    got = capsys.readouterr()
    assert got.out == expected.out and expected.err == ""
    assert f"use `posbias {' '.join(new)}`" in got.err and "0.3.0" in got.err


def test_a_former_verb_is_hidden_runs_the_new_one_and_warns_once() -> None:
    code = (
        "from hf_posbias.cli import build_parser\n"
        "p = build_parser()\n"
        "a = p.parse_args(['build', '--corpus', 'c', '--out', 'o'])\n"
        "b = p.parse_args(['build', '--corpus', 'c', '--out', 'o'])\n"
        "n = p.parse_args(['data', 'build', '--corpus', 'c', '--out', 'o'])\n"
        "listed = [line.split()[0] for line in p.format_help().split('commands (')[1]"
        ".splitlines() if line.startswith('    ')]\n"
        "print(a.func == n.func, a.corpus, 'build' in listed, 'data' in listed)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "c", "False", "True"]
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: `posbias build` is deprecated (removed in 0.3.0); use `posbias data build`"
    ]


def test_a_former_flag_spelling_is_accepted_but_not_shown() -> None:
    parser = build_parser()
    train = parser._subparsers._group_actions[0].choices["train"]
    assert "--batch-size" not in train.format_help() and "--global-batch" in train.format_help()
    with pytest.warns(DeprecationWarning, match="--batch-size is deprecated; use --global-batch"):
        args = parser.parse_args(["train", "--model", "m", "--config", "begin", "--data", "d",
                                  "--out", "o", "--batch-size", "8"])  # fmt: skip
    assert args.global_batch == 8


def _tucked(parser, path=()):
    """(group parser, its path, tucked verb names) for every group that tucks verbs away."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            names = getattr(action, "posbias_tucked", ())
            if names:
                yield parser, path, names
            for name, sub in action.choices.items():
                if name not in getattr(action, "posbias_renamed", {}):
                    yield from _tucked(sub, (*path, name))


def test_a_tucked_away_verb_runs_is_named_in_its_groups_help_and_documented() -> None:
    docs = Path(__file__).resolve().parents[2] / "docs"
    pages = " ".join(" ".join(p.read_text().split()) for p in docs.glob("*.md"))
    found = list(_tucked(build_parser()))
    assert {path for _, path, _ in found} == {("benchmark",), ("listwise",)}
    for group, path, names in found:
        help_text = " ".join(group.format_help().split()).split("see also", 1)[1]
        for name in names:
            command = f"posbias {' '.join(path)} {name}"
            assert f"{command}," in help_text or f"{command}." in help_text, command
            assert f"`{command}`" in pages, command
            verbs = group._subparsers._group_actions[0]
            assert name not in [a.dest for a in verbs._choices_actions]
            assert callable(verbs.choices[name].get_default("func")), command


def test_a_shared_flag_reads_the_same_in_every_verb() -> None:
    """--seed, --out, --batch-size … (hf_posbias.settings.SHARED_HELPS): one meaning, one help
    text in every visible verb (another default aside)."""
    from hf_posbias.settings import flag_name
    from hf_posbias.shared_helps import SHARED_HELPS

    surface = _surface_module()
    parser = build_parser()
    meanings = surface.flag_helps(parser, fold_defaults=True)
    for name, text in SHARED_HELPS.items():
        flag = flag_name(name)
        assert meanings[flag] == {" ".join(text.split())}, flag
    # --seed had 15 help texts and --out 14 on e2b93ad; the count of flags whose help differs
    # between verbs only goes down (scripts/cli_surface.py --helps lists them).
    assert surface.surface(parser)["flags_with_several_meanings"] <= len(SEVERAL_FORMS)


SEVERAL_FORMS = {
    "--model": "the model a verb runs or trains; a bi-encoder, a listwise causal LM or several "
    "labelled models, each verb says which forms it loads",
    "--task": "the task a verb reads: position task folders or registered names (evaluate), a "
    "BEIR folder (listwise), one folder to subsample",
    "--input": "the source a benchmark builder reads; each reads its own format (SQuAD JSON, a "
    "PosIR snapshot, SciFact CSVs, JSONL rows …)",
    "--data": "the training data a verb reads: a posbias data folder, a listwise training set, "
    "or (listwise convert) a RankZephyr/FIRST file",
}
"""Flags whose one meaning ("what this verb reads") takes forms that differ by verb: each
verb's help names the forms it accepts (one shared text would list forms a verb refuses)."""


def test_each_flag_name_has_one_help_text_across_the_visible_verbs() -> None:
    """Issue 40: "each flag name has one meaning across verbs". Walking the parser, every flag of
    the visible leaves has one help text (the appended ``(default: …)`` aside), except the
    input-naming flags of :data:`SEVERAL_FORMS`. A flag that meant another thing in one verb was
    renamed there (``--max-window``, …; the old spelling a hidden alias)."""
    surface = _surface_module()
    meanings = surface.flag_helps(build_parser(), fold_defaults=True)
    several = {flag: texts for flag, texts in meanings.items() if len(texts) > 1}
    assert sorted(several) == sorted(SEVERAL_FORMS), {
        flag: sorted(texts) for flag, texts in several.items() if flag not in SEVERAL_FORMS
    }


def test_the_meanings_measure_folds_only_the_appended_default() -> None:
    """A default a help text spells out itself says what the flag means; only the one the
    settings append is folded (scripts/cli_surface.py)."""
    import argparse
    from dataclasses import dataclass

    from hf_posbias.settings import add_settings_arguments, setting

    @dataclass
    class A:
        n: int = setting("how many", default=3)
        name: str | None = setting("task name (default: the file name)", default=None)

    @dataclass
    class B:
        n: int = setting("how many", default=5)
        name: str | None = setting("task name (default: <name>-sample)", default=None)

    parser = argparse.ArgumentParser(prog="p")
    verbs = parser.add_subparsers()
    for name, cls in (("a", A), ("b", B)):
        add_settings_arguments(verbs.add_parser(name, help=name), cls)
    meanings = _surface_module().flag_helps(parser, fold_defaults=True)
    assert meanings["--n"] == {"how many"}
    assert len(meanings["--name"]) == 2


RENAMED_FLAGS = [
    # (argv before the flag, former spelling, new spelling, value, settings field)
    (["listwise", "train", "--model", "m", "--data", "d", "--out", "o"], "--window",
     "--max-window", "12", "window"),
    (["listwise", "train", "--model", "m", "--data", "d", "--out", "o"], "--max-length",
     "--reject-longer-than", "512", "max_length"),
    (["benchmark", "from-corpus", "--corpus", "demo", "--out", "o"], "--min-words",
     "--min-passage-words", "300", "min_words"),
    (["benchmark", "from-corpus", "--corpus", "demo", "--out", "o"], "--tiny-size",
     "--per-position", "50", "tiny_size"),
    (["analyze", "segment-profile", "--model", "m", "--corpus", "demo", "--out", "o"], "--limit",
     "--sample-size", "20", "sample_size"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "old", "new", "value", "field"), RENAMED_FLAGS)
def test_a_renamed_flag_is_hidden_and_its_former_spelling_sets_the_same_field_with_one_warning(
    argv, old, new, value, field, recwarn, capsys
) -> None:
    parser = build_parser()
    given = [] if value is None else [value]
    fresh = parser.parse_args([*argv, new, *given])
    former = parser.parse_args([*argv, old, *given])
    assert (
        getattr(former, field) == getattr(fresh, field) != parser.parse_args(argv).__dict__[field]
    )
    warned = [str(w.message) for w in recwarn if issubclass(w.category, DeprecationWarning)]
    assert warned == [f"{old} is deprecated; use {new}"]
    assert capsys.readouterr().err.splitlines() == [f"warning: {old} is deprecated; use {new}"]
    verb = parser
    for word in argv[: 2 if argv[0] in ("listwise", "benchmark", "analyze") else 1]:
        verb = verb._subparsers._group_actions[0].choices[word]
    shown = verb.format_help()
    assert f"{new} " in shown and f"{old} " not in shown.replace(f"--no-{old[2:]}", "")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["listwise", "remedies"], ["listwise", "reranker-remedies"]),
        (["listwise", "compare"], ["listwise", "compare-tests"]),
        (["study", "report-runs"], ["study", "report"]),
    ],
)
def test_a_renamed_verb_is_hidden_and_runs_its_successor_with_one_warning(
    old, new, monkeypatch, capsys
) -> None:
    """Issue 40: no two visible verbs whose names suggest the same job do different ones:
    ``listwise remedies`` (beside ``analyze remedies``) and ``listwise compare`` (beside
    ``compare``) were renamed, ``study report-runs`` merged into ``study report``."""
    monkeypatch.setattr("hf_posbias.cli.common._WARNED", set())
    parser = build_parser()
    group = parser._subparsers._group_actions[0].choices[old[0]]
    verbs = group._subparsers._group_actions[0]
    listed = [a.dest for a in verbs._choices_actions]
    assert old[1] not in listed and new[1] in listed
    argv = ["A", "B", "--out", "o"] if new[1] != "reranker-remedies" else [
        "--reranker", "bm25", "--task", "t", "--out", "o"]  # fmt: skip
    first = parser.parse_args([*old, *argv])
    parser.parse_args([*old, *argv])
    assert first.func == parser.parse_args([*new, *argv]).func or new[1] == "report"
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(err) == 1 and f"`posbias {' '.join(old)}` is deprecated" in err[0]
    assert f"use `posbias {' '.join(new)}" in err[0]
