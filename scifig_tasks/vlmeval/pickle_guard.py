"""``scifig vlmeval`` starts no run in a work dir holding a pickle that would run code when loaded: VLMEvalKit loads
the pickles of its work dir itself (its resume checkpoints, a prediction file it fell back to, any
``<model>_<dataset>.pkl`` its run summary finds), and loading a pickle runs whatever code it names. The pickles
VLMEvalKit writes for scifig's datasets hold plain data (replies by index) and pass. No VLMEvalKit import.

Manual: docs/vlmeval.md, "Pickles".
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from scifig_tasks.core.errors import CommandError
from scifig_tasks.core.pickle_files import NOT_LOADED, WORK_DIR_TODO, code_pickles

DEFAULT_WORK_DIR = "./outputs"
"""VLMEvalKit's ``--work-dir`` when none is given."""


def work_dir(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> Path:
    """The work dir VLMEvalKit's runner takes from ``argv``: ``$MMEVAL_ROOT`` when set, else ``--work-dir`` (the last
    one, as its parser reads it), else :data:`DEFAULT_WORK_DIR`."""
    environ = os.environ if environ is None else environ
    if "MMEVAL_ROOT" in environ:
        return Path(environ["MMEVAL_ROOT"])
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--work-dir", default=DEFAULT_WORK_DIR)
    return Path(parser.parse_known_args(list(argv))[0].work_dir)


def refuse_code_pickles(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> None:
    """Raise a :class:`~scifig_tasks.core.errors.CommandError` (exit 1) naming the first pickle under the run's work
    dir that would run code when loaded (:func:`scifig_tasks.core.pickle_files.code_pickles`), before VLMEvalKit is
    imported; a work dir without one, or none yet, passes."""
    found = code_pickles(work_dir(argv, environ))
    if not found:
        return
    (path, what), more = found[0], len(found) - 1
    also = f" (and {more} more such pickle{'s' if more > 1 else ''} there)" if more else ""
    raise CommandError(
        f"{path}: a pickle that runs code when loaded ({what}){also}; VLMEvalKit loads the pickles of its work dir, "
        f"and {NOT_LOADED}",
        WORK_DIR_TODO,
        status=1,
    )
