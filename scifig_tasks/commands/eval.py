"""``scifig eval ARGS...``: lmms-eval's own command line run in this process with the scifig tasks, a model preset,
the replies cached, keys masked, and an exit status that says whether every task and sample was scored and every
model request answered. The manual:
docs/lmms-eval.md (``scifig eval``, resuming a stopped run); how the command line is built: docs/cli.md.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.commands import HELP
from scifig_tasks.commands.tasks_path import tasks_path

if TYPE_CHECKING:
    from scifig_tasks.lmms_eval.output_folder import RunRequests


class EvalFailed(RuntimeError):
    """lmms-eval finished without a result for every requested task."""


CLI_EVALUATE_SINGLE = "lmms_eval.__main__.cli_evaluate_single"
"""The run patch through which ``scifig eval`` learns each configuration's results or exception: lmms-eval's CLI
catches every exception of a run, logs it and exits 0 (:mod:`scifig_tasks.lmms_eval.patches` says why no public
mechanism serves)."""


def tracking(
    outcomes: list[dict[str, Any]],
    failures: list[str],
    evaluate_single: Any,
    quiet: bool = False,
    requests: RunRequests | None = None,
) -> Any:
    """lmms-eval's ``cli_evaluate_single`` that appends its results to ``outcomes`` and its exception
    (:func:`failure_text`), or the requested tasks without results, to ``failures``. The exception is re-raised for
    lmms-eval to report (its traceback), unless ``quiet``: then the configuration ends without results, as lmms-eval
    ends it, and nothing but scifig's one line says why. With ``requests``, the configuration's tasks and the model's
    endpoint (:func:`model_endpoint`) are noted for the count of its failed requests."""

    @functools.wraps(evaluate_single)
    def tracked(args: argparse.Namespace) -> Any:
        noting = (
            requests.noting(model_endpoint(getattr(args, "model", None), getattr(args, "model_args", None)))
            if requests is not None
            else contextlib.nullcontext()
        )
        try:
            with noting:
                results, samples = evaluate_single(args)
        except Exception as exc:
            failures.append(failure_text(exc))
            if quiet:
                return None, None
            raise
        if results is not None:
            missing = _missing_tasks(args.tasks, results)
            if missing:
                failures.append(f"no results for: {', '.join(missing)}")
            outcomes.append(results)
        return results, samples

    return tracked


ENDPOINT_ARGUMENTS = ("base_url", "api_base", "api_url", "server_url")
"""The ``--model_args`` of lmms-eval's API models that name the server their requests go to."""


def model_endpoint(model: str | None, model_args: Any, environ: Mapping[str, str] | None = None) -> str | None:
    """Where the model's requests go, as lmms-eval's API models choose it, credentials masked
    (:func:`scifig_tasks.core.secrets.mask_credentials`, with the labels of the process's secrets): a URL in
    ``--model_args`` (:data:`ENDPOINT_ARGUMENTS`; a string ``k=v,...`` or a mapping), else ``OPENAI_API_BASE`` for the
    OpenAI-compatible models (their name holds ``openai``); None when neither says (a local model, another API)."""
    from scifig_tasks.core import settings
    from scifig_tasks.core.secrets import mask_credentials

    given = model_args if isinstance(model_args, Mapping) else _parsed_model_args(str(model_args or ""))
    url = next((str(given[name]) for name in ENDPOINT_ARGUMENTS if given.get(name)), None)
    if url is None and "openai" in (model or "").lower():
        url = (os.environ if environ is None else environ).get("OPENAI_API_BASE") or None
    return None if url is None else mask_credentials(url, settings.process_secrets())


def _parsed_model_args(text: str) -> dict[str, str]:
    """``k=v,k=v`` as lmms-eval splits ``--model_args``."""
    pairs = (item.split("=", 1) for item in text.split(",") if "=" in item)
    return {name.strip(): value.strip() for name, value in pairs}


def failure_text(exc: Exception) -> str:
    """How a failure inside a run is said after ``FAILED:``: ``what — what to do`` for a
    :class:`~scifig_tasks.core.errors.CommandError`, ``Type: message`` for anything else."""
    from scifig_tasks.core.errors import CommandError

    if isinstance(exc, CommandError):
        return f"{exc.what} — {exc.todo}" if exc.todo else exc.what
    return f"{type(exc).__name__}: {exc}"


def run_lmms_eval(argv: Sequence[str], quiet: bool = False, written: list[Path] | None = None) -> list[dict[str, Any]]:
    """Run lmms-eval's CLI in-process; return its results dicts or raise :class:`EvalFailed`. With ``--use_cache``
    the cache is scifig's (:mod:`scifig_tasks.lmms_eval.response_cache`: replies stored as they arrive, keys that
    hold what the model is sent). The results and samples files are whole or an error
    (:func:`scifig_tasks.lmms_eval.output_folder.complete_files`; the results files' paths appended to ``written``);
    ``quiet``: lmms-eval prints no traceback of a
    failure (:func:`tracking`). The patches are checked against the installed lmms-eval before it runs: one that
    changed raises :class:`~scifig_tasks.lmms_eval.patches.LmmsEvalVersionError` (one line)."""
    from scifig_tasks.lmms_eval.output_folder import EVALUATION_TRACKER, RunRequests, complete_files
    from scifig_tasks.lmms_eval.patches import during_run
    from scifig_tasks.lmms_eval.plugin import install

    install()
    import lmms_eval.__main__ as lmms_main

    argv = list(argv)
    if _option(argv, "--include_path") is None:
        argv += ["--include_path", str(tasks_path())]
    outcomes: list[dict[str, Any]] = []
    failures: list[str] = []
    requests = RunRequests()  # each configuration's model requests, counted into its results
    saved_argv = sys.argv
    sys.argv = ["lmms-eval", *argv]
    try:
        with (
            during_run(
                {
                    CLI_EVALUATE_SINGLE: functools.partial(
                        tracking, outcomes, failures, quiet=quiet, requests=requests
                    ),
                    EVALUATION_TRACKER: functools.partial(complete_files, written=written, annotate=requests.annotate),
                }
            ),
            _response_cache(_cache_option(argv) is not None),
        ):
            lmms_main.cli_evaluate()
    finally:
        sys.argv = saved_argv
    if failures:
        raise EvalFailed("; ".join(failures))
    if not outcomes and int(os.environ.get("RANK", "0")) == 0:
        # under `accelerate launch` / torchrun, lmms-eval returns the gathered results on rank 0 only
        raise EvalFailed("lmms-eval produced no results")
    return outcomes


def _option(argv: Sequence[str], name: str) -> str | None:
    """The last value of ``name`` in ``argv``, given as ``name VALUE`` or ``name=VALUE``."""
    value = None
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(f"{name}="):
            value = arg.split("=", 1)[1]
    return value


CACHE_OPTIONS = ("--use_cache", "-c")
"""lmms-eval's spellings of its response-cache option."""
CACHE_FOLDER = ".scifig-cache"
"""The default cache of ``scifig eval``: ``<--output_path>/.scifig-cache/<--model>``."""


def _cache_option(argv: Sequence[str]) -> str | None:
    """The cache folder ``argv`` gives lmms-eval (``--use_cache PATH`` / ``-c PATH``), if any."""
    values = [value for name in CACHE_OPTIONS if (value := _option(argv, name)) is not None]
    return values[-1] if values else None


def _response_cache(enabled: bool) -> contextlib.AbstractContextManager[None]:
    if not enabled:
        return contextlib.nullcontext()
    from scifig_tasks.lmms_eval.response_cache import installed

    return installed()


def with_default_cache(argv: Sequence[str], cache: bool = True) -> tuple[list[str], str]:
    """``argv`` with ``scifig eval``'s default response cache, and the one line that says what is cached.

    Rule: replies are cached unless ``cache`` is false (``--no-cache``); an explicit ``--use_cache PATH`` wins;
    otherwise the cache is ``<--output_path>/.scifig-cache/<--model>``, and nothing is cached without
    ``--output_path``. ``--no-cache`` with ``--use_cache`` is refused
    (:class:`~scifig_tasks.commands.format.CommandError`).
    """
    import re

    from scifig_tasks.core.errors import CommandError

    argv = list(argv)
    given, output = _cache_option(argv), _option(argv, "--output_path")
    if not cache:
        if given is not None:
            raise CommandError("--no-cache and --use_cache both given", "keep one of them")
        return argv, "scifig eval: model replies are not cached (--no-cache): a stopped run starts again from the start"
    if given is None and output is None:
        return argv, (
            "scifig eval: model replies are not cached (no --output_path): give --use_cache DIR to resume a stopped run"
        )
    if given is None:
        model = re.sub(r"[^A-Za-z0-9._-]+", "-", _option(argv, "--model") or "model")
        given = str(Path(output or ".") / CACHE_FOLDER / model)
        argv += ["--use_cache", given]
    return argv, (
        f"scifig eval: model replies are cached in {given}: run the same command again to resume, "
        "only unanswered questions go to the model (--no-cache: off)"
    )


def eval_command(argv: Sequence[str], debug: bool = False, cache: bool = True) -> int:
    """``scifig eval``: run lmms-eval with keys masked and model replies cached (:func:`with_default_cache`,
    ``cache`` false for ``--no-cache``), holding the output folder (``run_lock`` of
    :mod:`scifig_tasks.lmms_eval.output_folder`: a folder another run holds is refused in one line); 1 when it failed,
    any model request failed (one line last: how many of how many, the endpoint, the first error), or any sample could
    not be judged or was counted wrong for want of a judge, 2 when ``--tasks`` names a task that
    does not exist (said before lmms-eval starts); a task that cannot be scored without the LLM judge, none being
    configured, is refused before lmms-eval starts (1). A failure inside the run is one line; lmms-eval's traceback of
    it only with ``debug``."""
    from scifig_tasks.commands.tasks import requested_tasks, unknown_tasks_message
    from scifig_tasks.core.errors import CommandError
    from scifig_tasks.core.model_presets import PresetError
    from scifig_tasks.lmms_eval.output_folder import run_lock
    from scifig_tasks.lmms_eval.preset_arguments import apply_preset

    try:
        argv = apply_preset(argv)  # --preset NAME expands to lmms-eval args; explicit args win
    except PresetError as exc:
        print(f"scifig eval: FAILED: {exc}", file=sys.stderr)
        return 1
    tasks = _option(argv, "--tasks")
    if tasks is not None:
        from scifig_tasks.core import registry

        refused_plugin = registry.left_out(requested_tasks(tasks))
        if refused_plugin is not None:
            raise CommandError(refused_plugin, status=1)
        include = _option(argv, "--include_path")
        problem = unknown_tasks_message(tasks, [include] if include else [])
        if problem is not None:
            raise CommandError(problem)
        from scifig_tasks.core.judge.required import judge_refusal

        refused = judge_refusal(requested_tasks(tasks))
        if refused is not None:
            raise CommandError(refused.what, refused.todo, status=1)
    argv, cache_line = with_default_cache(argv, cache)
    with run_lock(_option(argv, "--output_path")):  # held until the files are written and masked
        print(cache_line, file=sys.stderr, flush=True)
        return _evaluate(argv, debug)


def _evaluate(argv: list[str], debug: bool) -> int:
    """The run of :func:`eval_command`, its arguments checked and its output folder held."""
    from scifig_tasks.commands.format import error_line
    from scifig_tasks.core import settings
    from scifig_tasks.core.secrets import masked_output
    from scifig_tasks.lmms_eval.concurrency import with_judge_concurrency

    argv, parallel_line = with_judge_concurrency(argv)  # lmms-eval's --process_docs_parallel, sized for the judge
    if parallel_line is not None:
        print(parallel_line, file=sys.stderr, flush=True)
    written: list[Path] = []  # the results files, named by the closing lines
    # the environment's keys and URL credentials, and those of URLs in the arguments (--model_args base_url=...)
    with masked_output(settings.process_secrets(command_line=argv), _option(argv, "--output_path")):
        try:
            _check_data(argv, debug)
            outcomes = run_lmms_eval(argv, quiet=not debug, written=written)
        except EvalFailed as exc:
            print(f"scifig eval: FAILED: {exc}", file=sys.stderr)
            return 1
        except Exception as exc:  # said here, inside the masking: the message may hold a key
            if debug:
                traceback.print_exc()
            else:
                print(error_line("eval", exc)[0], file=sys.stderr)
            return 1
        from scifig_tasks.core.judge import absent_summary, failure_summary, judge_absent, judge_failures

        failed: dict[str, int] = {}
        absent: dict[str, int] = {}
        for results in outcomes:
            for task, count in judge_failures(results).items():
                failed[task] = failed.get(task, 0) + count
            for task, count in judge_absent(results).items():
                absent[task] = absent.get(task, 0) + count
        if absent:
            print(absent_summary("scifig eval", absent), file=sys.stderr)
        if failed:
            print(failure_summary("scifig eval", failed), file=sys.stderr)
        from scifig_tasks.lmms_eval.output_folder import failed_requests

        requests = [line for results in outcomes if (line := failed_requests(results)) is not None]
        for line in requests:  # last: the cause of everything above
            print(f"scifig eval: FAILED: {line}", file=sys.stderr)
        if failed or absent or requests:
            return 1
    from scifig_tasks.commands.outputs import next_step_lines

    for line in next_step_lines("scifig eval", written, _option(argv, "--output_path") or "."):
        print(line, file=sys.stderr)
    return 0


def _check_data(argv: Sequence[str], debug: bool) -> None:
    """The requested scifig tasks' data, loaded and validated before lmms-eval starts
    (:func:`scifig_tasks.lmms_eval.plugin.check_task_data`); a data problem is said as a run's failure is (its
    traceback with ``debug``). Skipped when ``--include_path`` is given (a folder of the user's may define a task of
    the same name)."""
    from scifig_tasks.commands.tasks import requested_tasks
    from scifig_tasks.core.errors import DataError
    from scifig_tasks.lmms_eval.plugin import check_task_data

    tasks = _option(argv, "--tasks")
    if tasks is None or _option(argv, "--include_path") is not None:
        return
    try:
        check_task_data(requested_tasks(tasks))
    except DataError as exc:
        if debug:
            traceback.print_exc()
        raise EvalFailed(failure_text(exc)) from None


def _missing_tasks(tasks: str | None, results: dict[str, Any]) -> list[str]:
    found = set(results.get("results", {})) | set(results.get("groups", {}))
    requested = [name for name in (tasks or "").split(",") if name and "*" not in name and not os.path.exists(name)]
    return [name for name in requested if name not in found]


DESCRIPTION = """\
Run lmms-eval's own command line with the scifig tasks available ({names} and their
sub-tasks). The options are lmms-eval's, passed to it unchanged (listed below); the scifig task folder is added as
--include_path unless you give one.

Differences from running lmms-eval directly: the exit status is 1 when a task was not found, data was bad, scoring
failed, any request to the model failed (the last line says how many, the endpoint and the first error) or any sample
could not be scored by the LLM judge (lmms-eval exits 0 whatever happened); API keys and the
credentials of URLs (user:password@) are masked, shown as <NAME_OF_THE_VARIABLE>, on the screen and in the files
written under --output_path; --preset fills in the model options from a model preset.

Resuming: the model's replies are cached as they arrive (lmms-eval's --use_cache, by default
OUTPUT_PATH/.scifig-cache/MODEL; --use_cache DIR for another folder, --no-cache for none). Run the same command
again after a stop (Ctrl-C, a crash, a server that went down) and only the questions without a reply go to the model.
Sampled requests (temperature above 0) are not cached."""

EPILOG = """\
examples:
  scifig eval --preset gpt-4o --tasks grab,scifibench --output_path runs --log_samples
  scifig eval --model qwen2_vl --model_args pretrained=Qwen/Qwen2-VL-2B-Instruct --tasks plot_twist \\
      --output_path runs --log_samples"""


def lmms_eval_help() -> str:
    """lmms-eval's own option list, under a heading (or how to install it)."""
    from scifig_tasks.commands.format import framework_help

    return framework_help("lmms-eval", "lmms_eval.__main__", "parse_eval_args", "lmms-eval", "lmms")


def register(commands: Any) -> None:
    """Add ``scifig eval`` to the ``scifig`` command line: its own options; every other argument goes to lmms-eval."""
    from scifig_tasks.commands.format import ForwardedHelp
    from scifig_tasks.core import registry

    parser = commands.add_parser(
        "eval",
        help=HELP["eval"],
        description=DESCRIPTION.format(names=", ".join(registry.benchmarks())),
        epilog=EPILOG,
        usage="%(prog)s [--preset NAME] LMMS_EVAL_OPTION ...",
        add_help=False,
        allow_abbrev=False,  # an abbreviation is lmms-eval's to reject, not a scifig option
    )
    parser.add_argument(
        "-h",
        "--help",
        action=ForwardedHelp,
        framework_help=lmms_eval_help,
        help="show this help and lmms-eval's options",
    )
    parser.add_argument(
        "--preset",
        action="append",
        metavar="NAME",
        help="model preset (scifig presets lists them): sets --model, --model_args and the endpoint's variables; "
        "options you give explicitly win",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="do not cache the model's replies (by default they are kept in OUTPUT_PATH/.scifig-cache/MODEL, or in "
        "lmms-eval's --use_cache DIR, so that the same command run again after a stop asks the model only what it "
        "has not answered)",
    )
    parser.set_defaults(handler=run, passthrough=True)


def run(args: argparse.Namespace) -> int:
    """``scifig eval`` as parsed: ``--preset`` given back to lmms-eval's arguments (:func:`eval_command` expands it),
    the other arguments (``args.rest``) unchanged."""
    presets = [item for name in args.preset or [] for item in ("--preset", name)]
    return eval_command(presets + args.rest, debug=args.debug, cache=not args.no_cache)
