"""The ``scifig`` command line (the ``scifig`` console script): the parser with every sub-command and the dispatch;
``eval``, ``demo``, ``curate`` and ``tasks-path`` live here, the other commands in their own modules.

* ``scifig eval ARGS...`` runs lmms-eval's own CLI in this process with ``ARGS`` unchanged, adds this package's
  task folder as ``--include_path`` (unless one is given, as ``--include_path DIR`` or ``--include_path=DIR``), and
  — unlike ``lmms-eval``, which exits 0 whatever happened — exits non-zero when a task is not found, data is bad,
  scoring raised or any sample could not be judged
  (:func:`~scifig_tasks.core.judge.judge_failures`; the summary line names the tasks).
  API keys and URL credentials (``user:password@`` in an environment value or an argument such as
  ``--model_args base_url=...``) never reach the screen or the output folder (:mod:`scifig_tasks.core.secrets`):
  they are masked as ``<NAME_OF_THE_VARIABLE>`` in what lmms-eval prints and, after the run, in the files it wrote
  under ``--output_path`` (a model server echoing the key otherwise lands in the samples file; lmms-eval stores the
  model arguments in the results file).
  ``--preset NAME`` expands a model preset (:mod:`scifig_tasks.core.presets`) to lmms-eval arguments; explicit
  arguments win. ``scifig eval --help`` prints this command's help, then lmms-eval's options.
  Model replies are cached by default (:func:`with_default_cache`: ``<--output_path>/.scifig-cache/<--model>``,
  an explicit ``--use_cache PATH`` wins, ``--no-cache`` turns it off; one line says which at the start) with the
  rules of :mod:`scifig_tasks.lmms_eval.response_cache`, so the same command run again after a stop asks the model
  only what it has not answered.
  Before lmms-eval starts, every name of ``--tasks`` must be a task, group or tag of scifig or lmms-eval
  (:func:`scifig_tasks.commands.tasks.unknown_tasks_message`): an unknown one ends the command in one line with the
  closest name, exit status 2. A task that cannot be scored without the LLM judge is refused there too, in one line,
  when none is configured (:func:`scifig_tasks.core.judge.required.judge_refusal`).
  The output folder (:mod:`scifig_tasks.lmms_eval.output_folder`): one ``scifig eval`` at a time per
  ``--output_path`` (a second one is refused in one line while the first runs), and a results or samples file that
  could not be written whole (a full disk) ends the run naming it, with nothing left under its name.
  A failure inside the run is said in one line, ``scifig eval: FAILED: ...``; lmms-eval's traceback of it only under
  ``scifig --debug eval ...`` (:func:`tracking`). The model phase draws one progress bar with a time estimate; on
  success the run ends with two lines on stderr: the results file(s) and ``scifig report PATH --out
  <output_path>/report``.
* ``scifig demo --out DIR`` generates a small GRAB set with the generator (``--per-task`` questions per task,
  balanced over question types and complexity), scores it through the real lmms-eval CLI with the offline
  ``scifig_chance`` model, prints the results table and writes the report of ``scifig report`` (``DIR/report/``);
  its last line is the path of ``report.html``. No network, no weights. Quiet unless ``--verbose``: what lmms-eval
  and the generator print (log lines, progress bars, lmms-eval's own tables) goes to ``DIR/demo.log``.
* ``scifig tasks`` lists the tasks to run (:mod:`scifig_tasks.commands.tasks`).
* ``scifig curate BENCH ...`` builds a benchmark's data locally; each registered benchmark whose description names a
  ``curate`` reference (``curation/<bench>/cli.py:register``, :mod:`scifig_tasks.core.registry`) adds its own
  sub-commands (``register(subparsers)``, each setting ``handler``), in the registry's name order (this package never
  imports ``curation`` by name: the reference is resolved when ``scifig`` builds its parser; the demo's GRAB
  generator is the ``scifig.builders`` entry point ``grab``).
* ``scifig tasks-path`` prints the task folder (for ``lmms-eval --include_path``); ``scifig --version`` the version.
* Commands registered from their own modules (:data:`scifig_tasks.commands.COMMANDS`): ``report``, ``compare``,
  ``rescore`` and ``export-upstream``, ``vlmeval`` and ``export-tsv`` (VLMEvalKit), ``presets``, ``doctor``,
  ``config``, ``finetune`` and ``finetune-data``.
* Start-up: the parser is built with the chosen command in full and every other one as its name and help line from
  :data:`~scifig_tasks.commands.COMMANDS` (:func:`build_parser`), so a command imports only its own module, and
  ``scifig --help`` / ``--version`` none of them.

Every parser is a :class:`scifig_tasks.commands.format.Parser`: what ``--help`` prints is written for users (what the
command does, each option, an example); these notes are not shown.

Errors: :func:`main` is the boundary. An error that ends a command is printed as one line on stderr, ``scifig
COMMAND: what happened — what to do`` (:func:`scifig_tasks.commands.format.error_line`), with a non-zero exit status;
the traceback only under the global ``scifig --debug COMMAND ...``. A command that fails removes the output folders
it created and left empty (:mod:`scifig_tasks.commands.outputs`).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import os
import sys
import traceback
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scifig_tasks.commands import COMMANDS, HELP

if TYPE_CHECKING:
    from scifig_tasks.core.benchmark import Benchmark


class EvalFailed(RuntimeError):
    """lmms-eval finished without a result for every requested task."""


def tasks_path() -> Path:
    from scifig_tasks.lmms_eval import TASKS_DIR

    return TASKS_DIR


CLI_EVALUATE_SINGLE = "lmms_eval.__main__.cli_evaluate_single"
"""The run patch through which ``scifig eval`` learns each configuration's results or exception: lmms-eval's CLI
catches every exception of a run, logs it and exits 0 (:mod:`scifig_tasks.lmms_eval.patches` says why no public
mechanism serves)."""


def tracking(outcomes: list[dict[str, Any]], failures: list[str], evaluate_single: Any, quiet: bool = False) -> Any:
    """lmms-eval's ``cli_evaluate_single`` that appends its results to ``outcomes`` and its exception
    (:func:`failure_text`), or the requested tasks without results, to ``failures``. The exception is re-raised for
    lmms-eval to report (its traceback), unless ``quiet``: then the configuration ends without results, as lmms-eval
    ends it, and nothing but scifig's one line says why."""

    @functools.wraps(evaluate_single)
    def tracked(args: argparse.Namespace) -> Any:
        try:
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
    from scifig_tasks.lmms_eval.output_folder import EVALUATION_TRACKER, complete_files
    from scifig_tasks.lmms_eval.patches import during_run
    from scifig_tasks.lmms_eval.plugin import install

    install()
    import lmms_eval.__main__ as lmms_main

    argv = list(argv)
    if _option(argv, "--include_path") is None:
        argv += ["--include_path", str(tasks_path())]
    outcomes: list[dict[str, Any]] = []
    failures: list[str] = []
    saved_argv = sys.argv
    sys.argv = ["lmms-eval", *argv]
    try:
        with (
            during_run(
                {
                    CLI_EVALUATE_SINGLE: functools.partial(tracking, outcomes, failures, quiet=quiet),
                    EVALUATION_TRACKER: functools.partial(complete_files, written=written),
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
    :mod:`scifig_tasks.lmms_eval.output_folder`: a folder another run holds is refused in one line); 1 when it failed
    or any sample could not be judged or was counted wrong for want of a judge, 2 when ``--tasks`` names a task that
    does not exist (said before lmms-eval starts); a task that cannot be scored without the LLM judge, none being
    configured, is refused before lmms-eval starts (1). A failure inside the run is one line; lmms-eval's traceback of
    it only with ``debug``."""
    from scifig_tasks.commands.tasks import requested_tasks, unknown_tasks_message
    from scifig_tasks.core.errors import CommandError
    from scifig_tasks.core.presets import PresetError
    from scifig_tasks.lmms_eval.output_folder import run_lock
    from scifig_tasks.lmms_eval.presets import apply_preset

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
        if failed or absent:
            return 1
    from scifig_tasks.lmms_eval.output_folder import next_step_lines

    for line in next_step_lines(written, _option(argv, "--output_path") or "."):
        print(line, file=sys.stderr)
    return 0


def _missing_tasks(tasks: str | None, results: dict[str, Any]) -> list[str]:
    found = set(results.get("results", {})) | set(results.get("groups", {}))
    requested = [name for name in (tasks or "").split(",") if name and "*" not in name and not os.path.exists(name)]
    return [name for name in requested if name not in found]


def results_table(results: dict[str, Any]) -> str:
    """Markdown table: accuracy with 95% Wilson interval for every task and group, then per GRAB task type."""
    rows = ["| task | n | accuracy | 95% CI |", "|---|---:|---:|---:|"]
    entries = {**results.get("results", {}), **results.get("groups", {})}
    for name in sorted(entries):
        breakdown = entries[name].get("breakdown,none")
        if not isinstance(breakdown, dict):
            continue
        overall = breakdown["overall"]["all"]
        low, high = overall["ci95"]
        rows.append(
            f"| {name} | {overall['n']} | {100 * overall['accuracy']:.1f}% | {100 * low:.1f}-{100 * high:.1f}% |"
        )
    return "\n".join(rows)


DEMO_DPI = 60
"""The demo renders small images: the chance model never looks at them."""


def demo(out: Path, per_task: int, seed: int, workers: int | None = None, verbose: bool = False) -> int:
    """``scifig demo``: generate GRAB, score it with ``scifig_chance`` through lmms-eval, write the report. Quiet by
    default (one line saying what runs, the results table, the report's path); ``verbose`` shows what the generator
    and lmms-eval print, which otherwise goes to ``OUT/demo.log``."""
    from scifig_tasks.commands.format import error_line
    from scifig_tasks.core.errors import CommandError
    from scifig_tasks.core.resources import installed_entry_point
    from scifig_tasks.report.build import build_report

    log = out / "demo.log"
    if not verbose:
        print(
            f"Generating {4 * per_task} GRAB questions and scoring them with scifig_chance through lmms-eval",
            flush=True,
        )
        print(f"(their output: {log}) ...", flush=True)
    try:
        with contextlib.nullcontext() if verbose else output_to(log):
            build_grab = installed_entry_point("scifig.builders", "grab")  # curation.grab.build.build_grab
            built = build_grab(out / "data", seed=seed, limit=4 * per_task, dpi=DEMO_DPI, workers=workers)
            os.environ["SCIFIG_GRAB_DATA"] = str(built.out)
            os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            argv = ["--model", "scifig_chance", "--model_args", f"seed={seed}", "--tasks", "grab"]
            argv += ["--output_path", str(out / "results"), "--log_samples"]
            (result,) = run_lmms_eval(argv)
            report = build_report([out / "results"], out / "report")
    except Exception as exc:
        if verbose or not log.is_file():  # nothing was written to the log: the boundary says what happened
            raise
        what = error_line("", exc)[0].removeprefix("scifig: ")
        raise CommandError(what, f"what ran is in {log}", status=1) from exc
    print(f"\nGRAB (generated locally, {built.rows} questions) scored through lmms-eval with scifig_chance:\n")
    print(results_table(result))
    print(f"\nReport ({len(report.figures)} figures{', every sample in samples.html' if report.samples else ''}):")
    print(report.html.resolve())
    return 0


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """Send everything written to the standard output and error into ``log``: Python's prints, lmms-eval's logger
    (which holds the original stream), progress bars and child processes (file descriptors 1 and 2)."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as file:
        sys.stdout.flush()
        sys.stderr.flush()
        saved: list[int] = []
        for fd in (1, 2):
            with contextlib.suppress(OSError):
                saved.append(os.dup(fd))
                os.dup2(file.fileno(), fd)
        try:
            with contextlib.redirect_stdout(file), contextlib.redirect_stderr(file):
                yield
        finally:
            with contextlib.suppress(ValueError, OSError, io.UnsupportedOperation):
                sys.stdout.flush()
                sys.stderr.flush()
            for fd, copy in zip((1, 2), saved, strict=False):
                os.dup2(copy, fd)
                os.close(copy)


def curated_benchmarks() -> list[Benchmark]:
    """The registered benchmarks with a ``curate`` command (``"module:register"``), in the registry's name order: the
    order their ``scifig curate`` sub-commands are listed."""
    from scifig_tasks.core import registry

    return [described for described in registry.benchmarks().values() if described.curate]


def benchmark_titles(benchmarks: Iterable[Benchmark] | None = None) -> list[str]:
    """The titles of ``benchmarks`` (default: every registered one), in the registry's name order."""
    from scifig_tasks.core import registry

    chosen = registry.benchmarks().values() if benchmarks is None else benchmarks
    return [described.title for described in chosen]


def in_words(items: Sequence[str]) -> str:
    """``a, b and c`` (``a`` for one item, empty for none)."""
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def curate_variables() -> list[str]:
    """The variables ``scifig curate`` commands print (each curated benchmark's data sources that a curate command
    builds), in the registry's order."""
    found: list[str] = []
    for described in curated_benchmarks():
        for source in described.sources.values():
            if source.build_command and source.env_var not in found:
                found.append(source.env_var)
    return found


DESCRIPTION = """\
Scientific-figure benchmarks - {titles} - for lmms-eval and VLMEvalKit: evaluate a model, build or extend the
benchmarks' data, report results with the papers' figures, fine-tune a model on curated data."""
"""``{titles}``: the registered benchmarks' titles (:func:`build_parser`)."""

EPILOG = """\
examples:
  scifig demo --out scifig-demo         offline, no model weights: generate GRAB, score it, write a report
  scifig presets                        the model presets
  scifig eval --preset gpt-4o --tasks grab,scifibench --output_path runs --log_samples
  scifig report runs --out report       tables and the papers' figures: report/report.html

Run "scifig COMMAND --help" for a command's options and an example."""

EVAL_DESCRIPTION = """\
Run lmms-eval's own command line with the scifig tasks available ({names} and their
sub-tasks). The options are lmms-eval's, passed to it unchanged (listed below); the scifig task folder is added as
--include_path unless you give one.

Differences from running lmms-eval directly: the exit status is 1 when a task was not found, data was bad, scoring
failed or any sample could not be scored by the LLM judge (lmms-eval exits 0 whatever happened); API keys and the
credentials of URLs (user:password@) are masked, shown as <NAME_OF_THE_VARIABLE>, on the screen and in the files
written under --output_path; --preset fills in the model options from a model preset.

Resuming: the model's replies are cached as they arrive (lmms-eval's --use_cache, by default
OUTPUT_PATH/.scifig-cache/MODEL; --use_cache DIR for another folder, --no-cache for none). Run the same command
again after a stop (Ctrl-C, a crash, a server that went down) and only the questions without a reply go to the model.
Sampled requests (temperature above 0) are not cached."""

EVAL_EPILOG = """\
examples:
  scifig eval --preset gpt-4o --tasks grab,scifibench --output_path runs --log_samples
  scifig eval --model qwen2_vl --model_args pretrained=Qwen/Qwen2-VL-2B-Instruct --tasks plot_twist \\
      --output_path runs --log_samples"""

DEMO_DESCRIPTION = """\
Try the whole path on this machine with no network and no model weights: generate a small GRAB set with the GRAB
generator (--per-task questions for each of its four tasks, balanced over question types and complexity), score it
through the real lmms-eval command line with scifig_chance (a model that answers at random), print the results
table and write the HTML report with the GRAB figures and every sample. The last line printed is the report to open
in a browser.

Written under --out: data/ (the generated questions), results/ (lmms-eval's results and sample logs), report/
(report.html, report.md, figures/, samples.html)."""

DEMO_EPILOG = """\
example:
  scifig demo --out scifig-demo
  # then open scifig-demo/report/report.html (the last line printed); scifig-demo/demo.log holds what ran"""

CURATE_DESCRIPTION = """\
Build a benchmark's data on this machine ({titles}), in the schema of the published Hugging Face dataset: each
benchmark's commands below generate it, curate it from source material or convert a published copy. Each command
ends by printing the variable that points the tasks at the result ({variables}) instead of the Hub."""
"""``{titles}``, ``{variables}``: of the benchmarks with a curate command (:func:`_add_curate`)."""

CURATE_EPILOG = """\
examples:
  scifig curate grab --out grab-data --limit 40
  SCIFIG_GRAB_DATA=grab-data scifig eval --preset gpt-4o --tasks grab --output_path runs"""

TASKS_PATH_DESCRIPTION = """\
Print the folder holding the scifig task definitions, to give to lmms-eval's --include_path. An installed scifig
makes lmms-eval find the tasks without it; the explicit form also lists them in "lmms-eval tasks list"."""

TASKS_PATH_EPILOG = """\
example:
  lmms-eval --include_path "$(scifig tasks-path)" --model openai --tasks grab --output_path runs"""


def lmms_eval_help() -> str:
    """lmms-eval's own option list, under a heading (or how to install it)."""
    from scifig_tasks.commands.format import framework_help

    return framework_help("lmms-eval", "lmms_eval.__main__", "parse_eval_args", "lmms-eval", "lmms")


def _add_eval(commands: Any) -> None:
    from scifig_tasks.commands.format import ForwardedHelp
    from scifig_tasks.core import registry

    parser = commands.add_parser(
        "eval",
        help=HELP["eval"],
        description=EVAL_DESCRIPTION.format(names=", ".join(registry.benchmarks())),
        epilog=EVAL_EPILOG,
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


def _add_demo(commands: Any) -> None:
    parser = commands.add_parser(
        "demo",
        help=HELP["demo"],
        description=DEMO_DESCRIPTION,
        epilog=DEMO_EPILOG,
    )
    parser.add_argument("--out", type=Path, default=Path("scifig-demo"), help="output folder (default: scifig-demo)")
    parser.add_argument(
        "--per-task", type=positive_int, default=10, help="questions per GRAB task (default: 10, 40 in all)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the generator and of the random answers (0)")
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="processes drawing the graphs (default: CPU count, at most 8)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="also print what the generator and lmms-eval print (log lines, progress bars, lmms-eval's tables)",
    )


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _add_curate(commands: Any) -> None:
    from scifig_tasks.core import registry

    curated = curated_benchmarks()
    titles = benchmark_titles(curated)
    curate = commands.add_parser(
        "curate",
        help=HELP["curate"].format(titles=", ".join(titles)),
        description=CURATE_DESCRIPTION.format(titles=", ".join(titles), variables=", ".join(curate_variables())),
        epilog=CURATE_EPILOG,
    )
    benchmarks = curate.add_subparsers(dest="curate_command", required=True, metavar="BENCHMARK", title="benchmarks")
    for described in curated:
        registry.resolve(described.curate)(benchmarks)  # "curation.<bench>.cli:register"


def _add_tasks_path(commands: Any) -> None:
    commands.add_parser(
        "tasks-path", help=HELP["tasks-path"], description=TASKS_PATH_DESCRIPTION, epilog=TASKS_PATH_EPILOG
    )


def version_line() -> str:
    """``scifig 0.2.0`` plus the checkout's commit when run from one."""
    from scifig_tasks.core.provenance import checkout, scifig_version

    commit, modified = checkout()
    where = f" (commit {commit[:12]}{', modified' if modified else ''})" if commit else ""
    return f"scifig {scifig_version()}{where}"


def build_parser(full: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The ``scifig`` parser: every sub-command in full, or (``full`` given) only the commands named in ``full``,
    the others listed by name and help line alone (:data:`~scifig_tasks.commands.COMMANDS`), so that their modules
    are not imported. ``scifig --help`` prints the same text either way."""
    import importlib

    from scifig_tasks.commands.format import Parser

    description = DESCRIPTION.format(titles=in_words(benchmark_titles()))
    parser = Parser(prog="scifig", description=description, epilog=EPILOG)
    parser.add_argument("--version", action=_Version)
    parser.add_argument(
        "--debug", action="store_true", help="on an error, print the traceback instead of the one-line message"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    built = {command.adds for command in COMMANDS if full is None or command.name in full}
    added: set[str] = set()
    for command in COMMANDS:
        if command.adds not in built:
            titles = ", ".join(benchmark_titles(curated_benchmarks())) if "{titles}" in command.help else ""
            commands.add_parser(command.name, help=command.help.format(titles=titles))
        elif command.adds not in added:  # one function may add several commands (vlmeval and export-tsv)
            added.add(command.adds)
            module, _, function = command.adds.partition(":")
            getattr(importlib.import_module(module), function)(commands)
    return parser


class _Version(argparse._VersionAction):
    """``--version``: argparse's own, the line made only when it is asked for (it runs ``git``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        self.version = version_line()
        super().__call__(parser, namespace, values, option)


def chosen_command(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names: its first argument that is not an option (the global options take no
    value)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``scifig`` command; the error boundary: an error ends the command in one line on stderr (the traceback
    under ``--debug``) and a non-zero exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = chosen_command(argv)
    parser = build_parser(full=[chosen] if chosen else [])
    args, rest = parser.parse_known_args(argv)
    command = " ".join(filter(None, (args.command, getattr(args, "curate_command", None))))
    try:
        return _run(parser, args, rest)
    except KeyboardInterrupt:
        print(f"scifig {command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        from scifig_tasks.commands.format import error_line

        line, status = error_line(command, exc)
        print(line, file=sys.stderr)
        return status


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace, rest: list[str]) -> int:
    if args.command == "eval":
        presets = [item for name in args.preset or [] for item in ("--preset", name)]
        return eval_command(presets + rest, debug=args.debug, cache=not args.no_cache)
    if rest and not getattr(args, "passthrough", False):
        parser.error(f"unrecognised arguments: {' '.join(rest)}")
    args.rest = rest
    from scifig_tasks.commands.outputs import run_handler  # a failed command removes the empty folders it made

    if args.command == "demo":
        return run_handler(lambda args: demo(args.out, args.per_task, args.seed, args.workers, args.verbose), args)
    if hasattr(args, "handler"):
        return run_handler(args.handler, args)
    print(tasks_path())
    return 0


if __name__ == "__main__":
    sys.exit(main())
