"""``scifig tasks``: which name to run, in lmms-eval and in VLMEvalKit, and what it reproduces; and the check that
``scifig eval --tasks`` names tasks that exist, before lmms-eval starts (:func:`unknown_tasks_message`).

Manual: docs/cli.md, "`scifig tasks`".
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scifig_tasks.commands import HELP
from scifig_tasks.core.lmms_eval_names import lmms_eval_tasks_dir, names_in, yaml_names
from scifig_tasks.core.task_files import NO_VALUE, TaskInfo, scifig_tasks, top_level
from scifig_tasks.lmms_eval import TASKS_DIR, task_folders

WIDTH = 100
"""The listing fits a terminal of this many columns."""

LIST_REQUESTS = frozenset({"list", "list_groups", "list_tags", "list_subtasks", "list_with_num"})
"""``--tasks`` values that ask lmms-eval for a listing rather than name tasks."""


def vlmeval_names() -> dict[str, str]:
    """lmms-eval name -> the VLMEvalKit dataset name that runs it, from ``scifig_tasks.vlmeval.names`` when that
    module exists (else empty): its datasets, and the groups VLMEvalKit runs as several datasets."""
    try:
        from scifig_tasks.vlmeval import names  # type: ignore[attr-defined]
    except ImportError:
        return {}
    found = dict(names.vlmeval_names())
    for group in getattr(names, "GROUPS", {}):
        found.setdefault(group, group)
    return found


HEADER = ("task (lmms-eval)", "VLMEvalKit", "questions", "paper", "protocol")
SAME = "same"
"""The VLMEvalKit cell of a task whose dataset has the lmms-eval name, when the full names do not fit."""


@dataclass
class _Row:
    benchmark: str
    indent: str
    name: str
    vlmeval: str | None
    facts: tuple[str, str, str]  # questions, paper, protocol


def listing(show_all: bool = False, vlmeval: dict[str, str] | None = None) -> str:
    """The table of ``scifig tasks``: one line per task, a blank line between benchmarks, at most :data:`WIDTH`
    columns (the VLMEvalKit column says "same" for a shared name when the full names would not fit)."""
    tasks = scifig_tasks()
    vlmeval = vlmeval_names() if vlmeval is None else vlmeval
    rows: list[_Row] = []
    for info in top_level(tasks):
        facts = (info.fact("questions"), info.fact("table"), info.fact("protocol"))
        rows.append(_Row(info.benchmark, "", info.name, vlmeval.get(info.name), facts))
        if show_all:
            for member in _members(info, tasks):
                child = tasks[member]
                protocol = child.metadata.get("scifig_protocol") or info.metadata.get("scifig_protocol") or NO_VALUE
                facts = (child.fact("questions"), child.fact("table"), str(protocol))
                rows.append(_Row(info.benchmark, "  ", member, vlmeval.get(member), facts))
    lines = _render(rows, same=False)
    if max(map(len, lines)) > WIDTH:
        lines = _render(rows, same=True)
        lines.append(f'VLMEvalKit "{SAME}": the VLMEvalKit dataset has the lmms-eval name.')
    return "\n".join([*lines, *_footer()])


def _render(rows: list[_Row], same: bool) -> list[str]:
    def vlmeval_cell(row: _Row) -> str:
        if row.vlmeval is None:
            return NO_VALUE
        return SAME if same and row.vlmeval == row.name else row.vlmeval

    table = [HEADER] + [(row.indent + row.name, vlmeval_cell(row), *row.facts) for row in rows]
    widths = [max(len(cells[column]) for cells in table) for column in range(len(HEADER))]
    lines = [_line(HEADER, widths)]
    for previous, (row, cells) in zip([None, *rows], zip(rows, table[1:], strict=True), strict=False):
        if previous is not None and previous.benchmark != row.benchmark:
            lines.append("")
        lines.append(_line(cells, widths))
    return [*lines, ""]


def _members(info: TaskInfo, tasks: dict[str, TaskInfo]) -> Iterable[str]:
    """The tasks of a group, depth first (a member group's own members follow it)."""
    for member in info.members:
        if member in tasks:
            yield member
            yield from _members(tasks[member], tasks)


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    name, vlm, questions, table, protocol = cells
    return (
        f"{name.ljust(widths[0])}  {vlm.ljust(widths[1])}  {questions.rjust(widths[2])}  "
        f"{table.ljust(widths[3])}  {protocol}"
    ).rstrip()


def _footer() -> list[str]:
    from scifig_tasks.core import registry

    refused = [f"left out: {line}" for line in registry.refused().values()]
    return [
        "protocol: default = scifig's scoring, paper = the paper's own setting (the task name chooses it)",
        "run: scifig eval --tasks NAME,...   one task: scifig tasks NAME   with the tasks in groups: --all",
        *(["", *refused] if refused else []),
    ]


def details(name: str, vlmeval: dict[str, str] | None = None) -> str:
    """What ``scifig tasks NAME`` prints: the facts of one task or group (with its use of the LLM judge,
    :func:`scifig_tasks.core.judge.required.judge_use`), its members and its YAML."""
    from scifig_tasks.core.judge.required import judge_use

    tasks = scifig_tasks()
    info = tasks[name]
    vlmeval = vlmeval_names() if vlmeval is None else vlmeval
    lines = [f"{info.name}: {info.fact('summary')}"]
    lines.append(f"  VLMEvalKit: {vlmeval.get(info.name, NO_VALUE)}")
    lines.append(f"  questions (published set): {info.fact('questions')}")
    lines.append(f"  paper: {info.fact('table')}   protocol: {info.fact('protocol')}")
    lines += textwrap.wrap(judge_use(name), WIDTH, initial_indent="  LLM judge: ", subsequent_indent="    ")
    if info.members:
        lines += textwrap.wrap(", ".join(info.members), WIDTH, initial_indent="  tasks: ", subsequent_indent="    ")
    groups = [other.name for other in tasks.values() if name in other.members]
    if groups:
        lines.append(f"  in: {', '.join(groups)}")
    lines.append(f"  file: {info.path}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# names scifig eval --tasks accepts


def known_task_names(include_paths: Sequence[str] = ()) -> set[str] | None:
    """Every name lmms-eval would accept in ``--tasks`` here: scifig's (this package's task folder and every
    registered benchmark's), lmms-eval's own, those of the given ``--include_path`` folders and of
    ``LMMS_EVAL_PLUGINS``' task folders. None when lmms-eval is not installed."""
    builtin = lmms_eval_tasks_dir()
    if builtin is None:
        return None
    outside = [folder for folder in task_folders() if not folder.is_relative_to(TASKS_DIR)]
    folders = [TASKS_DIR, *outside, builtin, *(Path(path) for path in include_paths)]
    for plugin in filter(None, os.environ.get("LMMS_EVAL_PLUGINS", "").split(",")):
        try:
            spec = importlib.util.find_spec(f"{plugin}.tasks")
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            folders.append(Path(next(iter(spec.submodule_search_locations))))
    names: set[str] = set()
    for folder in folders:
        if folder.is_dir():
            names |= yaml_names(folder)
        elif folder.is_file() and folder.suffix == ".yaml":
            names |= set(names_in(folder.read_text(encoding="utf-8", errors="replace")))
    return names


def requested_tasks(tasks: str) -> list[str]:
    """The names of a ``--tasks`` value that must exist: not patterns (``*``), YAML files or folders."""
    if tasks in LIST_REQUESTS or os.path.isdir(tasks):
        return []
    return [name for name in tasks.split(",") if name and "*" not in name and not os.path.isfile(name)]


def unknown_tasks_message(tasks: str, include_paths: Sequence[str] = ()) -> str | None:
    """``unknown task 'grabb' — did you mean grab? (scifig tasks lists them)`` for the names of ``tasks`` that no
    task folder defines; None when every name exists (or lmms-eval is not installed: it will say so itself)."""
    wanted = requested_tasks(tasks)
    if not wanted:
        return None
    known = known_task_names(include_paths)
    if known is None:
        return None
    unknown = [name for name in wanted if name not in known]
    if not unknown:
        return None
    ours = set(scifig_tasks())
    suggestions: list[str] = []
    for name in unknown:
        close = difflib.get_close_matches(name, sorted(ours), n=1, cutoff=0.6)
        close = close or difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        suggestions += [match for match in close if match not in suggestions]
    quoted = ", ".join(f"'{name}'" for name in unknown)
    what = f"unknown task{'s' if len(unknown) > 1 else ''} {quoted}"
    if suggestions:
        return f"{what} — did you mean {', '.join(suggestions)}? (scifig tasks lists them)"
    return f"{what} — scifig tasks lists scifig's, lmms-eval --tasks list every task"


# ---------------------------------------------------------------------------------------------------------------
# the command


DESCRIPTION = """\
List the benchmarks' tasks: the name to give to scifig eval --tasks (lmms-eval) and to scifig vlmeval --data
(VLMEvalKit), the number of questions in the published set, the table or section of the paper the task reproduces
and its scoring protocol (default: scifig's; paper: the paper's own setting, chosen by the task name). Without
--all: the groups and tasks you run; with --all, each group's tasks under it. With NAME: one task in detail."""

EPILOG = """\
examples:
  scifig tasks
  scifig tasks --all
  scifig tasks grab_llm_extract
  scifig eval --preset gpt-4o --tasks grab,scifibench --output_path runs"""


def run(args: Any) -> int:
    """``scifig tasks [NAME] [--all]``."""
    from scifig_tasks.core.errors import CommandError

    if args.name:
        from scifig_tasks.core import registry

        tasks = scifig_tasks()
        refused = registry.left_out([args.name])
        if args.name not in tasks and refused is not None:
            raise CommandError(refused, status=1)
        if args.name not in tasks:
            close = difflib.get_close_matches(args.name, sorted(tasks), n=1, cutoff=0.6)
            hint = f"did you mean {close[0]}?" if close else "scifig tasks --all lists them"
            raise CommandError(f"no scifig task '{args.name}'", hint)
        print(details(args.name))
        return 0
    print(listing(show_all=args.all))
    return 0


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "tasks",
        help=HELP["tasks"],
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    parser.add_argument("name", nargs="?", help="show one task or group in detail")
    parser.add_argument("--all", action="store_true", help="also list the tasks inside each group")
    parser.set_defaults(handler=run)
