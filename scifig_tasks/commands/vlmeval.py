"""``scifig vlmeval`` (VLMEvalKit's own runner after :func:`scifig_tasks.vlmeval.register`) and ``scifig export-tsv``.

Manual: docs/vlmeval.md, "What `scifig vlmeval` and `scifig export-tsv` do".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scifig_tasks.commands import HELP
from scifig_tasks.core import registry
from scifig_tasks.core.errors import CommandError, DataError
from scifig_tasks.core.run_files import SCORES_SUFFIX, replace_file
from scifig_tasks.core.secrets import declared, mask_files, mask_log_records, secrets_of
from scifig_tasks.vlmeval import names, tsv
from scifig_tasks.vlmeval.pickle_guard import refuse_code_pickles, work_dir


class VlmevalFailed(RuntimeError):
    """VLMEvalKit finished without metrics for every requested dataset."""


KEY_OPTIONS = ("--key", "--judge-key")


def secrets(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """What to mask (:mod:`scifig_tasks.core.secrets`): the environment's secrets, ``--key`` / ``--judge-key``
    values, the ``"key"`` / ``"api_key"`` entries of a ``--config`` file, and the credentials of a URL written in
    any argument (``--base-url``, ``--judge-base-url``) or config value (``"api_base"``)."""
    argv = list(argv)
    extra = {value for option in KEY_OPTIONS for value in _values(argv, option)}
    command_line = list(argv)
    for name in _values(argv, "--config"):
        if Path(name).is_file():
            config = json.loads(Path(name).read_text())
            extra |= set(_config_keys(config))
            command_line += list(_strings(config))
    return secrets_of(os.environ if environ is None else environ, extra, command_line)


def _values(argv: list[str], option: str) -> list[str]:
    """Every value of ``option`` in ``argv``, given as ``option VALUE`` or ``option=VALUE``."""
    found = [argv[index + 1] for index, arg in enumerate(argv[:-1]) if arg == option]
    return found + [arg.split("=", 1)[1] for arg in argv if arg.startswith(f"{option}=")]


def _config_keys(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        for name, value in node.items():
            if name.lower() in ("key", "api_key") and isinstance(value, str):
                yield value
            else:
                yield from _config_keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from _config_keys(value)


def _strings(node: Any) -> Iterable[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict | list):
        for value in node.values() if isinstance(node, dict) else node:
            yield from _strings(value)


def renamed_data(argv: Sequence[str]) -> list[str]:
    """``argv`` with the values of ``--data`` as today's dataset names (:func:`scifig_tasks.vlmeval.names.expand`:
    deprecated names mapped with a warning, lmms-eval groups expanded)."""
    out: list[str] = []
    values: list[str] | None = None
    for arg in [*argv, "--"]:
        if values is not None and not arg.startswith("-"):
            values.append(arg)
            continue
        if values is not None:
            out += names.expand(values)
            values = None
        if arg == "--data":
            out.append(arg)
            values = []
        elif arg.startswith("--data="):
            out += ["--data", *names.expand([arg.split("=", 1)[1]])]
        else:
            out.append(arg)
    return out[:-1]


def renamed_config(config: dict[str, Any]) -> dict[str, Any] | None:
    """A ``--config`` document with its deprecated dataset names mapped (keys and ``"dataset"`` values, with a
    warning each); None when it names none."""
    data = config.get("data")
    if not isinstance(data, dict):
        return None
    datasets = [entry.get("dataset") for entry in data.values() if isinstance(entry, dict)]
    if not any(name in names.DEPRECATED for name in [*data, *datasets]):
        return None
    renamed: dict[str, Any] = {}
    for name, entry in data.items():
        if isinstance(entry, dict) and entry.get("dataset") in names.DEPRECATED:
            entry = {**entry, "dataset": names.current(entry["dataset"])}
        renamed[names.current(name)] = entry
    return {**config, "data": renamed}


def _with_current_names(argv: list[str], folder: Path) -> list[str]:
    """``argv`` naming today's datasets: ``--data`` values renamed, a ``--config`` file naming deprecated datasets
    rewritten into ``folder`` (the user's file is left as it is)."""
    argv = renamed_data(argv)
    for name in _values(argv, "--config"):
        path = Path(name)
        config = json.loads(path.read_text()) if path.is_file() else None
        renamed = renamed_config(config) if isinstance(config, dict) else None
        if renamed is not None:
            copy = folder / path.name
            copy.write_text(json.dumps(renamed))
            argv = [str(copy) if arg == name else arg.replace(f"={name}", f"={copy}") for arg in argv]
    return argv


def refuse_empty_data_folder(environ: Mapping[str, str]) -> None:
    """A :class:`CommandError` when ``LMUData`` is set but empty (or blank): most likely a mistake, which VLMEvalKit
    would answer by writing to ``~/LMUData`` without a word (its rule: ``$LMUData`` only when that path exists)."""
    given = environ.get("LMUData")
    if given is not None and not given.strip():
        raise CommandError(
            "LMUData is set but empty (VLMEvalKit would then write its data to ~/LMUData)",
            "set LMUData to VLMEvalKit's data folder, or unset it to use ~/LMUData",
        )


def data_folder(command: str, environ: MutableMapping[str, str] | None = None) -> Path | None:
    """VLMEvalKit's data folder as ``$LMUData`` gives it (``~`` expanded), created when it does not exist yet, with
    one line on stderr saying so: VLMEvalKit reads ``$LMUData`` only when it exists and otherwise writes its TSV
    files to ``~/LMUData``. None when ``LMUData`` is not set; set but empty (or blank), a path that is a file, or one
    that cannot be created is a :class:`CommandError` naming it: an empty setting is most likely a mistake, which
    VLMEvalKit would answer by writing to ``~/LMUData`` without a word."""
    environ = os.environ if environ is None else environ
    refuse_empty_data_folder(environ)
    given = environ.get("LMUData")
    if given is None:
        return None
    folder = Path(given).expanduser()
    if folder.exists() and not folder.is_dir():
        raise CommandError(f"LMUData={given} is not a folder", "point LMUData at VLMEvalKit's data folder, or unset it")
    if not folder.exists():
        try:
            folder.mkdir(parents=True)
        except OSError as exc:
            raise CommandError(
                f"cannot create VLMEvalKit's data folder LMUData={given} ({exc.strerror or exc})",
                "point LMUData at a folder you may write, or unset it (VLMEvalKit then uses ~/LMUData)",
                status=1,
            ) from None
        print(
            f"scifig {command}: created VLMEvalKit's data folder {folder} (LMUData): its TSV files go there",
            file=sys.stderr,
            flush=True,
        )
    environ["LMUData"] = str(folder)  # as VLMEvalKit reads it: no "~"
    return folder


def _judge_options(args: argparse.Namespace) -> tuple[str | None, bool]:
    """``--judge`` and whether any judge option (``--judge``, ``--judge-base-url``, ``--judge-key``) was given."""
    model = getattr(args, "judge", None)
    return model, any(getattr(args, name, None) for name in ("judge", "judge_base_url", "judge_key"))


def _requested(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    if args.config:
        config = json.loads(Path(args.config).read_text())
        return list(config["model"]), list(config["data"])
    models = args.model if isinstance(args.model, list) else [args.model]
    return [model.replace("/", "--") if args.api_mode else model for model in models], list(args.data or [])


def _check(work_dir: Path, models: list[str], datasets: list[str], mode: str) -> list[str]:
    """Problems found in the run's ``status.json`` files: datasets without metrics, with errors or skipped."""
    problems = []
    for model in models:
        files = sorted((work_dir / model).rglob("status.json"), key=lambda path: path.stat().st_mtime)
        if not files:
            problems.append(f"{model}: no status.json under {work_dir / model}")
            continue
        status = json.loads(files[-1].read_text()).get("datasets", {})
        for name in datasets:
            entry = status.get(name)
            if entry is None:
                problems.append(f"{model} x {name}: not run")
            elif entry.get("error_message"):
                problems.append(f"{model} x {name}: {entry['error_message']}")
            elif mode == "infer":
                continue
            elif entry.get("skip_reason") or not entry.get("metrics"):
                problems.append(f"{model} x {name}: no metrics ({entry.get('skip_reason') or 'evaluation skipped'})")
    return problems


def scores_as_results(data: Any) -> dict[str, Any] | None:
    """A scifig ``*_scifig_scores.json`` (``{"dataset", "metrics", "breakdown"}``) as an lmms-eval results dict of
    one task, for the counts of :mod:`scifig_tasks.core.judge.usage` (a captioning dataset's details are its
    ``caption_report``); None for any other file."""
    if not isinstance(data, dict) or not {"dataset", "metrics", "breakdown"} <= set(data):
        return None
    entries = {f"{name},none": value for name, value in data["metrics"].items()}
    entries |= {"breakdown,none": data["breakdown"], "caption_report,none": data["breakdown"]}
    return {"results": {str(data["dataset"]): entries}}


def judge_counts_since(work_dir: Path, started: float) -> tuple[dict[str, int], dict[str, int]]:
    """Samples the LLM judge could not score, and outputs that needed it when none was configured, per dataset, in
    the scores files written under ``work_dir`` since ``started`` (counted as ``scifig eval`` counts them:
    :func:`scifig_tasks.core.judge.judge_failures`, :func:`scifig_tasks.core.judge.judge_absent`)."""
    from scifig_tasks.core.judge import judge_absent, judge_failures

    failed: dict[str, int] = {}
    absent: dict[str, int] = {}
    for path in sorted(work_dir.rglob(f"*{SCORES_SUFFIX}")):
        if path.stat().st_mtime < started:
            continue
        results = scores_as_results(json.loads(path.read_text(encoding="utf-8")))
        if results is None:
            continue
        for counts, found in ((failed, judge_failures(results)), (absent, judge_absent(results))):
            for name, count in found.items():
                counts[name] = counts.get(name, 0) + count
    return failed, absent


def judge_failures_since(work_dir: Path, started: float) -> dict[str, int]:
    """Samples the LLM judge could not score, per dataset, since ``started`` (:func:`judge_counts_since`)."""
    return judge_counts_since(work_dir, started)[0]


@dataclass
class VlmevalRun:
    """What a finished ``scifig vlmeval`` run reports: the samples the judge could not score and the outputs that
    needed it when none was configured, per task (:func:`judge_counts_since`), the line of the model requests that
    failed (:func:`failed_requests_since`; None when none did) and the scifig scores files it wrote
    (:func:`scores_written_since`)."""

    failed: dict[str, int]
    absent: dict[str, int]
    requests: str | None
    scores: list[Path]


def run_vlmeval(argv: Sequence[str]) -> VlmevalRun:
    """Register the scifig datasets and run VLMEvalKit's ``run.py`` main; raise :class:`VlmevalFailed` when a
    requested dataset has no metrics (with the failed requests' line, when any failed), and
    :class:`~scifig_tasks.core.errors.CommandError` before VLMEvalKit runs when a requested dataset cannot be scored
    without the LLM judge and none is chosen."""
    from scifig_tasks.vlmeval import import_vlmeval, register

    _refuse_without_judge(list(argv))
    refuse_code_pickles(argv)  # VLMEvalKit loads the pickles of its work dir
    try:
        env_file = import_vlmeval()  # imports torch and much more: only here
    except ImportError as exc:
        raise VlmevalFailed(f"VLMEvalKit is not installed ({exc}): pip install 'scifig[vlmeval]'") from None
    _say_unread_env_file(env_file)
    os.environ.setdefault("PRED_FORMAT", "tsv")
    masked = secrets(argv)
    mask_log_records(masked)
    register()
    import vlmeval.run as vlmeval_run

    from scifig_tasks.vlmeval import judging

    saved, started, args = sys.argv, time.time() - 1.0, None  # file times may be rounded down
    with tempfile.TemporaryDirectory(prefix="scifig-vlmeval-") as folder:  # a renamed --config (keys: deleted)
        sys.argv = ["run.py", *_with_current_names(list(argv), Path(folder))]
        try:
            with declared(masked):  # the judge cache and the records mask the command line's keys too
                args = vlmeval_run.parse_args()
                vlmeval_run.load_env()
                with judging.command_line(*_judge_options(args)):
                    vlmeval_run.main()
        finally:
            sys.argv = saved
            if args is not None:  # every file the run wrote in its work dir: predictions, records, scores, logs
                mask_files(work_dir(argv), masked, since=started)
        models, datasets = _requested(args)
    out = work_dir(argv)
    problems = _check(out, models, datasets, args.mode)
    endpoints = _model_endpoints(argv, models, getattr(args, "base_url", None), masked)
    requests = failed_requests_since(out, models, datasets, endpoints, started)
    if problems:
        raise VlmevalFailed("; ".join([*problems, *([requests] if requests else [])]))
    return VlmevalRun(*judge_counts_since(out, started), requests, scores_written_since(out, models, datasets, started))


def _say_unread_env_file(env_file: Path) -> None:
    """One line when the working folder holds a ``.env`` file that VLMEvalKit does not read (it reads ``env_file``
    only, :func:`scifig_tasks.vlmeval.import_vlmeval`, and there is none there): keys a user put in it would be
    missing from the run."""
    here = Path(".env")
    if here.is_file() and not env_file.is_file() and here.resolve() != env_file.resolve():
        print(
            f"scifig vlmeval: the .env file in this folder is not read (VLMEvalKit reads API keys from {env_file} "
            "only) — set its variables in the environment, or copy it there",
            file=sys.stderr,
            flush=True,
        )


def scores_written_since(work_dir: Path, models: list[str], datasets: list[str], started: float) -> list[Path]:
    """The scifig scores file of each requested dataset's prediction file this run wrote (:func:`_prediction_files`),
    model by model: what ``scifig report`` reads."""
    found = []
    for model in models:
        for path in _prediction_files(work_dir, model, datasets, started).values():
            scores = _scores_file(path)
            if scores.is_file() and scores not in found:
                found.append(scores)
    return found


def _scores_file(prediction: Path) -> Path:
    """The scifig scores file ``evaluate`` writes beside a prediction file."""
    return Path(f"{str(prediction).rsplit('.', 1)[0]}{SCORES_SUFFIX}")


ENDPOINT_ENTRIES = ("api_base", "base_url")
"""The entries of a ``--config`` model that name the server its requests go to."""


def _model_endpoints(
    argv: Sequence[str], models: list[str], base_url: str | None, secrets: Mapping[str, str]
) -> dict[str, str | None]:
    """Where each model's requests go, credentials masked (:func:`scifig_tasks.core.secrets.mask_credentials`): a
    ``--config`` model's ``api_base`` / ``base_url``; for ``--model`` names, ``--base-url`` (VLMEvalKit posts to its
    ``/chat/completions``), else ``OPENAI_API_BASE`` when set; None when none of these says."""
    from scifig_tasks.core.secrets import mask_credentials

    found: dict[str, str | None] = {}
    for name in _values(list(argv), "--config"):
        if Path(name).is_file():
            entries = json.loads(Path(name).read_text()).get("model")
            for model, entry in (entries if isinstance(entries, dict) else {}).items():
                urls = [entry.get(key) for key in ENDPOINT_ENTRIES] if isinstance(entry, dict) else []
                found[str(model)] = next((str(url) for url in urls if url), None)
    default = f"{base_url.rstrip('/')}/chat/completions" if base_url else os.environ.get("OPENAI_API_BASE") or None
    for model in models:
        found.setdefault(model, default)
    return {model: None if url is None else mask_credentials(url, secrets) for model, url in found.items()}


def failed_requests_since(
    work_dir: Path, models: list[str], datasets: list[str], endpoints: Mapping[str, str | None], started: float
) -> str | None:
    """The line of the model requests that failed in the prediction files this run wrote (each ``status.json``
    entry's ``prediction_file``; a reply that is VLMEvalKit's failure message is a failed request,
    :class:`~scifig_tasks.lmms_eval.output_folder.RequestCount`): how many of how many, the endpoint of the first
    model with a failure and the first error; None when none failed. The scifig scores file of each dataset with a
    failed request gets the dataset's count as its ``scifig_model_requests`` entry, as ``scifig eval``'s results file
    does."""
    from scifig_tasks.lmms_eval.output_folder import RequestCount, failed_requests_line

    total, endpoint = RequestCount(), None
    for model in models:
        for name, path in _prediction_files(work_dir, model, datasets, started).items():
            count = _count_predictions(name, path)
            if count is None:
                continue
            _note_requests(path, count, endpoints.get(model))
            total.failed, total.total = total.failed + count.failed, total.total + count.total
            total.tasks[f"{model} x {name}"] = {"failed": count.failed, "total": count.total}
            if count.failed and total.first_error is None:
                total.first_error, endpoint = count.first_error, endpoints.get(model)
    return failed_requests_line(total, endpoint) if total.failed else None


def _prediction_files(work_dir: Path, model: str, datasets: list[str], started: float) -> dict[str, Path]:
    """Each requested dataset's prediction file, as the model's latest ``status.json`` names it (relative to that
    file's folder when under it, else as written: VLMEvalKit's rule), when this run wrote it (modified since
    ``started``)."""
    files = sorted((work_dir / model).rglob("status.json"), key=lambda path: path.stat().st_mtime)
    status = json.loads(files[-1].read_text()).get("datasets", {}) if files else {}
    found = {}
    for name in datasets:
        given = (status.get(name) or {}).get("prediction_file")
        if not given:
            continue
        path = files[-1].parent / given  # an absolute path stays as it is
        path = path if path.is_file() else Path(given)
        if path.is_file() and path.stat().st_mtime >= started:
            found[name] = path
    return found


def _count_predictions(dataset: str, path: Path) -> Any:
    """The :class:`~scifig_tasks.lmms_eval.output_folder.RequestCount` of one prediction file (None when it cannot
    be read as one: a format VLMEvalKit's datasets write otherwise)."""
    from scifig_tasks.lmms_eval.output_folder import RequestCount
    from scifig_tasks.vlmeval.datasets import read_predictions

    try:
        replies = read_predictions(str(path))
    except (OSError, ValueError):
        return None
    count = RequestCount()
    for reply in replies.values():
        count.add(dataset, reply)
    return count


def _note_requests(prediction: Path, count: Any, endpoint: str | None) -> None:
    """Add the dataset's ``scifig_model_requests`` entry (:func:`~scifig_tasks.lmms_eval.output_folder.
    requests_entry`) to the scifig scores file beside its prediction file, when any of its requests failed and there
    is one (a dataset whose requests were all answered keeps the file ``evaluate`` wrote, which ``scifig rescore``
    writes again identically); written whole (:func:`scifig_tasks.core.run_files.replace_file`)."""
    from scifig_tasks.lmms_eval.output_folder import REQUESTS_KEY, requests_entry

    scores = _scores_file(prediction)
    if not count.failed or not scores.is_file():
        return
    data = json.loads(scores.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return
    data[REQUESTS_KEY] = requests_entry(count, endpoint)
    text = json.dumps(data, indent=1).encode("utf-8")
    replace_file(scores, lambda handle: handle.write(text))


def _requested_data(argv: list[str]) -> list[str]:
    """The dataset names ``argv`` asks for, read before VLMEvalKit is imported: ``--data`` values and the ``data``
    entries (and their ``"dataset"``) of a ``--config`` file."""
    found = renamed_data(argv)
    data = [value for index, value in enumerate(found) if index and _in_data(found, index)]
    for name in _values(argv, "--config"):
        if Path(name).is_file():
            entries = json.loads(Path(name).read_text()).get("data")
            if isinstance(entries, dict):
                data += [str(key) for key in entries]
                data += [str(e["dataset"]) for e in entries.values() if isinstance(e, dict) and e.get("dataset")]
    return names.expand(data)


def _in_data(argv: list[str], index: int) -> bool:
    """Whether ``argv[index]`` is one of the values that follow ``--data``."""
    for previous in reversed(argv[:index]):
        if previous.startswith("-"):
            return previous == "--data"
    return False


def _refuse_without_judge(argv: list[str]) -> None:
    """The refusal of :func:`scifig_tasks.core.judge.required.judge_refusal` for the requested datasets (the
    lmms-eval task names), said as ``scifig eval`` says it, before VLMEvalKit is imported; VLMEvalKit's judge options
    (:mod:`scifig_tasks.vlmeval.judging`) or the ``SCIFIG_JUDGE_*`` settings give a judge."""
    from scifig_tasks.core import registry
    from scifig_tasks.core.judge.required import judge_refusal
    from scifig_tasks.vlmeval.judging import NO_LLM

    refused_plugin = registry.left_out(_requested_data(argv))
    if refused_plugin is not None:
        raise CommandError(refused_plugin, status=1)
    models = _values(argv, "--judge")
    options = any(_values(argv, option) for option in ("--judge", "--judge-base-url", "--judge-key"))
    chosen = options and not (models and models[-1] in NO_LLM)
    refused = judge_refusal(_requested_data(argv), available=chosen or None)
    if refused is not None:
        raise CommandError(refused.what, refused.todo, status=1)


def _vlmeval(args: argparse.Namespace) -> int:
    """``scifig vlmeval``: the data folder checked, the work dir held (``run_lock``, as ``scifig eval`` holds its
    output folder: a work dir another scifig run holds is refused in one line before VLMEvalKit is imported), then
    the run; 1 when it failed, any model request failed or any sample could not be judged."""
    from scifig_tasks.lmms_eval.output_folder import run_lock

    refuse_empty_data_folder(os.environ)  # before anything is written
    with run_lock(work_dir(args.rest), "work dir", "--work-dir"):
        data_folder("vlmeval")
        try:
            run = run_vlmeval(args.rest)
        except VlmevalFailed as exc:
            print(f"scifig vlmeval: FAILED: {exc}", file=sys.stderr)
            return 1
    from scifig_tasks.commands.outputs import next_step_lines
    from scifig_tasks.core.judge import absent_summary, failure_summary

    if run.absent:
        print(absent_summary("scifig vlmeval", run.absent), file=sys.stderr)
    if run.failed:
        print(failure_summary("scifig vlmeval", run.failed), file=sys.stderr)
    if run.requests is not None:  # last: the cause of everything above
        print(f"scifig vlmeval: FAILED: {run.requests}", file=sys.stderr)
    if run.failed or run.absent or run.requests is not None:
        return 1
    for line in next_step_lines("scifig vlmeval", run.scores, work_dir(args.rest)):  # as scifig eval ends
        print(line, file=sys.stderr)
    return 0


def _export(args: argparse.Namespace) -> int:
    """:func:`_write_tsvs`; VLMEvalKit's data folder is removed again when the command created it and failed
    (:mod:`scifig_tasks.commands.outputs`; an ``--out`` folder is handled as every command's)."""
    from scifig_tasks.commands.outputs import run_handler

    given = os.environ.get("LMUData")  # noqa: SIM112 - VLMEvalKit spells it so
    default = None if args.out else Path(given).expanduser() if given else tsv.lmu_data_root()
    return run_handler(_write_tsvs, args, default)


def _write_tsvs(args: argparse.Namespace) -> int:
    """Write the TSVs; an unknown name or data that cannot be read ends it with one line saying what to do."""
    out = args.out or data_folder("export-tsv") or tsv.lmu_data_root()
    wanted = names.expand(args.data) if args.data else list(names.DATASETS)
    unknown = [name for name in wanted if name not in names.DATASETS]
    if unknown:
        known = ", ".join(names.DATASETS)
        print(f"scifig export-tsv: unknown dataset {', '.join(unknown)} (known: {known})", file=sys.stderr)
        return 2
    for name in wanted:
        try:
            path, count = tsv.write_tsv(name, out)
        except DataError as exc:
            print(f"scifig export-tsv: FAILED: {name}: {data_remedy(name, exc)}", file=sys.stderr)
            return 1
        print(f"{name}: {count} rows -> {path}")
    return 0


def data_remedy(name: str, exc: DataError) -> str:
    """The data error of dataset ``name`` with a way out that helps ``export-tsv``: the variable to set (and the
    command that builds the data), then this command again; not ``scifig demo``, which writes no VLMEvalKit data."""
    source = tsv.spec(name).source
    built = f" (`{source.build_command}` builds it)" if source.build_command else ""
    remedy = f"set {source.env_var}=DIR to local data{built}, then run `scifig export-tsv --data {name}` again"
    message = str(exc)
    general = source.remedy()
    return message.replace(general, remedy) if general in message else f"{message}; {remedy}"


def _vlmeval_description() -> str:
    """``scifig vlmeval``'s description, its examples read from the registered benchmarks: the first dataset and the
    first group VLMEvalKit runs as several datasets of each."""
    blocks = [described.vlmeval for described in registry.benchmarks().values() if described.vlmeval is not None]
    datasets = [block.datasets[0].name for block in blocks if block.datasets]
    groups = [next(iter(block.groups)) for block in blocks if block.groups]
    return _VLMEVAL_DESCRIPTION.format(datasets=", ".join([*datasets, "..."]), groups=", ".join([*groups, "..."]))


def _vlmeval_epilog() -> str:
    """``scifig vlmeval``'s examples: ``--data`` with each registered benchmark named as a dataset or group."""
    offered = [name for name in registry.benchmarks() if name in names.DATASETS or name in names.GROUPS]
    return _VLMEVAL_EPILOG.format(data=" ".join(offered))


_VLMEVAL_DESCRIPTION = """\
Run VLMEvalKit's own runner (its run.py) with the scifig datasets registered, named as the lmms-eval tasks:
{datasets} (scifig tasks lists them; a _paper twin scores with the paper's protocol). --data also takes an lmms-eval
group that VLMEvalKit runs as several datasets ({groups}). The options are VLMEvalKit's, passed to it unchanged
(listed below); --judge, --judge-base-url and --judge-key choose the judge of the scifig datasets (else
SCIFIG_JUDGE_*).

Differences from running VLMEvalKit's run.py: predictions are written as TSV (exact text, no spreadsheet
conversions) unless PRED_FORMAT is set; API keys and the credentials of URLs (user:password@) are masked in its logs
and in every file it writes under the work dir (predictions, records, scores, status); the exit status is 1 when a
requested dataset ends without metrics (VLMEvalKit exits 0), any request to the model failed (the last line says how
many, the endpoint and the first error) or any sample could not be judged. One run at a time per work dir: a second
one is refused."""

_VLMEVAL_EPILOG = """\
examples:
  scifig vlmeval --data {data} --model Qwen2-VL-2B-Instruct --work-dir outputs
  scifig vlmeval --config my_models.json --work-dir outputs
  scifig vlmeval --data grab --model scifig_chance --work-dir outputs   # offline: no API, no weights"""

EXPORT_TSV_DESCRIPTION = """\
Write the VLMEvalKit TSV file of each scifig dataset (questions, answers and images) into VLMEvalKit's data folder,
from the Hugging Face Hub or from the local data named by SCIFIG_<BENCH>_DATA. scifig vlmeval writes a missing file
itself; exporting first lets you inspect the files or copy them to a machine without network."""

EXPORT_TSV_EPILOG = """\
example:
  SCIFIG_GRAB_DATA=grab-data scifig export-tsv --data grab --out ~/LMUData"""


def vlmeval_help() -> str:
    """VLMEvalKit's own runner options, under a heading (or how to install it); VLMEvalKit imported without its
    missing-``.env`` line (:func:`scifig_tasks.vlmeval.import_vlmeval`)."""
    import contextlib

    from scifig_tasks.commands.format import framework_help
    from scifig_tasks.vlmeval import import_vlmeval

    with contextlib.suppress(ImportError):  # framework_help says how to install it
        import_vlmeval()

    return framework_help("VLMEvalKit", "vlmeval.run", "parse_args", "run.py", "vlmeval", given_to="its run.py")


def register(commands: Any) -> None:
    """Add ``scifig vlmeval`` and ``scifig export-tsv`` to the ``scifig`` command line."""
    from scifig_tasks.commands.format import ForwardedHelp

    run = commands.add_parser(
        "vlmeval",
        help=HELP["vlmeval"],
        description=_vlmeval_description(),
        epilog=_vlmeval_epilog(),
        usage="%(prog)s VLMEVALKIT_OPTION ...",
        add_help=False,
        allow_abbrev=False,
    )
    run.add_argument(
        "-h",
        "--help",
        action=ForwardedHelp,
        framework_help=vlmeval_help,
        help="show this help and VLMEvalKit's options",
    )
    run.set_defaults(handler=_vlmeval, passthrough=True)
    export = commands.add_parser(
        "export-tsv",
        help=HELP["export-tsv"],
        description=EXPORT_TSV_DESCRIPTION,
        epilog=EXPORT_TSV_EPILOG,
    )
    export.add_argument(
        "--data",
        nargs="+",
        default=None,
        metavar="NAME",
        help=f"datasets or lmms-eval groups (default: all): {', '.join(names.DATASETS)}",
    )
    export.add_argument(
        "--out", type=Path, default=None, help="output folder (default: $LMUData, created when missing, or ~/LMUData)"
    )
    export.set_defaults(handler=_export)
