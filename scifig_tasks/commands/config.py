"""``scifig config``: the effective settings, one row each -- name, value, where it came from.

Rule implemented: what scifig will use is shown from the same :class:`~scifig_tasks.core.settings.Settings` value
scoring reads (:mod:`scifig_tasks.core.settings`), never from a second reading of the environment. A secret (an API
key) is shown as ``<set>`` / ``<unset>``, never its value, in both forms; every other value is shown whole, its
credentials masked (a URL's ``user:password@`` as a label naming the variable: ``Settings.masked``): one too
long for its column is wrapped at its spaces onto the lines below, within the column, and a word longer than the
column (a path, a URL) gets a line of its own, whole, starting at the column, the only kind of line wider than
:data:`WIDTH` columns. ``--json`` gives every setting with its type, default, documentation and source, for
machines. Values that do not parse and unknown ``SCIFIG_*`` variables are listed after the table (one line each);
exit status 1 when a value does not parse.
"""

from __future__ import annotations

import argparse
import json
import os
import textwrap
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from scifig_tasks.commands import HELP
from scifig_tasks.core import registry, settings
from scifig_tasks.core.settings import DECLARED, Setting, Settings

WIDTH = 100
"""Columns every line of the table fits."""
_SOURCE_WIDTH = len("command line")


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns, broken at spaces; a word longer than ``width`` whole on a line
    of its own."""
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]


def listed() -> dict[str, Setting[Any]]:
    """Every setting in listing order: the declared ones, then the local-data setting of each registered data source
    (the :data:`~scifig_tasks.core.settings.DATA_VARIABLE` family), documented from the sources that read it."""
    readers: dict[str, list[Any]] = {}
    for source in registry.sources().values():
        readers.setdefault(source.env_var, []).append(source)
    data = {}
    for name, sources in readers.items():
        built = (
            "the Hub dataset"
            if sources[0].hub_path
            else "the seeded set, built once"
            if sources[0].default_data
            else ""
        )
        data[name] = replace(
            settings.data_setting(name),
            doc="local " + " and ".join(source.name for source in sources) + " data",
            shown_default=built or "unset",
        )
    return {**DECLARED, **data, **settings.benchmark_settings()}


def table(given: Settings, width: int = WIDTH) -> list[str]:
    """One row per declared setting: name, value (secrets ``<set>`` / ``<unset>``; a default shown as documented),
    source (``default``, ``environment``, ``command line``; ``deprecated`` marked). A value too long for its column
    goes on in the column on the lines below (:func:`_wrapped`); one word longer than the column starts below the
    row's first line."""
    shown = listed()
    name_width = max(len(name) for name in shown)
    value_width = width - name_width - _SOURCE_WIDTH - len(" deprecated") - 4
    lines = [f"{'setting':<{name_width}}  {'value':<{value_width}}  from"]
    for name, setting in shown.items():
        value = given.shown(setting)
        source = given.source(setting) + (" deprecated" if setting.deprecated else "")
        cells = _wrapped(value, value_width)
        if len(cells[0]) > value_width:  # one long word (a path, a URL): whole, on the line below
            cells.insert(0, "")
        lines.append(f"{name:<{name_width}}  {cells[0]:<{value_width}}  {source}".rstrip())
        lines += [f"{'':<{name_width}}  {cell}" for cell in cells[1:]]
    return lines


def problems(given: Settings, environ: Mapping[str, str]) -> list[str]:
    """One line per value that does not parse (credentials masked, :meth:`Settings.masked`) and per unknown
    ``SCIFIG_*`` variable of ``environ``."""
    found = [given.masked(error) for error in given.errors.values()]
    for name, close in settings.unknown(environ):
        found.append(settings.unknown_message(name, close, prefix="", listing=False))
    return found


def as_json(given: Settings, environ: Mapping[str, str]) -> dict[str, Any]:
    """Every setting for machines: value (``null`` for a secret, with ``set``; any other text with its credentials
    masked, as the table shows it), source, default, type, doc."""
    entries = []
    for name, setting in listed().items():
        entry: dict[str, Any] = {"name": name, "group": setting.group, "source": given.source(setting)}
        if setting.secret:
            entry |= {"secret": True, "value": None, "set": name in given.raw}
        elif name in given.errors:
            entry |= {"value": given.masked(given.raw[name]), "error": given.masked(given.errors[name])}
        else:
            value = given.get(setting)
            text = value is not None and not isinstance(value, (bool, int, float))
            entry["value"] = given.masked(str(value)) if text else value
        entry |= {"default": setting.describe_default(), "accepts": setting.accepts, "doc": setting.doc}
        if setting.deprecated:
            entry["deprecated"] = f"use {setting.deprecated}"
        entries.append(entry)
    unknown = [{"name": name, "did_you_mean": close} for name, close in settings.unknown(environ)]
    return {"settings": entries, "unknown": unknown}


def run(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    given = Settings.from_environment(env, warn=False)
    if args.json:
        print(json.dumps(as_json(given, env), indent=2))
    else:
        print("\n".join(table(given)))
        for line in problems(given, env):
            print(line)
    return 1 if given.errors else 0


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "config",
        help=HELP["config"],
        description=(
            "Every setting scifig reads, one row each: its variable, the value in effect (the documented default "
            "when it is not set; API keys only as <set> or <unset>, a URL's user:password@ as <credential>) and "
            "where it came from; a long value is shown "
            "whole, on the lines below. Values that do not parse and unknown SCIFIG_* variables are listed after "
            "the table; exit status 1 when a value does not parse."
        ),
        epilog="examples:\n  scifig config\n  SCIFIG_JUDGE=gpt-4o-mini scifig config --json",
    )
    parser.add_argument("--json", action="store_true", help="print every setting as JSON, with its type and doc")
    parser.set_defaults(handler=run)
