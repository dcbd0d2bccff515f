"""``scifig report``: read evaluation results of one or more models and write ``report.md``, ``report.html``,
``figures/*.png`` and, when the runs logged their samples, ``samples.html``; one section per registered benchmark.

Manual: docs/reports.md, "Reports" and "How the report page is put together".
"""

from __future__ import annotations

import functools
import gc
import importlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, get_args

from scifig_tasks.core import provenance, registry
from scifig_tasks.core.raw_outputs import OutputStatus
from scifig_tasks.report import figures, forked, generic
from scifig_tasks.report.compare import comparison_section
from scifig_tasks.report.document import Details, Note, Section, Table, to_html, to_markdown
from scifig_tasks.report.headline import headline_table, left_out
from scifig_tasks.report.judge_notes import judge_off_note
from scifig_tasks.report.paths import shown, shown_path
from scifig_tasks.report.progress import Progress, quiet
from scifig_tasks.report.protocols import protocol_views
from scifig_tasks.report.runs import Run, load_runs, results_files
from scifig_tasks.report.samples import write_samples_page
from scifig_tasks.report.summary import summary_section

SectionBuilder = Callable[[list[Run], Path], Section | None]
TITLE = "Scientific-figure benchmarks: evaluation report"
FLAGGED_EXAMPLES = 5


def section_builders() -> list[SectionBuilder]:
    """Each registered benchmark's section builder, in registry order: its ``report.section`` module's ``section``,
    or the generic section given its description."""
    builders: list[SectionBuilder] = []
    for described in registry.benchmarks().values():
        if described.report.section:
            builders.append(importlib.import_module(described.report.section).section)
        else:
            builders.append(functools.partial(generic.section, described))
    return builders


@dataclass
class Report:
    markdown: Path
    html: Path
    figures: list[Path]
    sections: list[str]
    samples: Path | None = None


def build_report(results: Iterable[Path], out: Path, progress: Progress = quiet) -> Report:
    """The report of the runs found under ``results``, written into ``out``; each step said to ``progress``: the
    results files read, each section (``section 2 of 5: GRAB``), the comparison and the sample viewer. The comparison
    and the sample viewer are made in processes of their own while the sections are built
    (:mod:`scifig_tasks.report.forked`), the figures drawn by others
    (:func:`scifig_tasks.report.figures.drawn_alongside`)."""
    found = results_files(list(results))
    progress(f"reading {len(found):,} results file{'s' if len(found) != 1 else ''}")
    runs = load_runs(found)
    progress(f"read {len(runs)} model{'s' if len(runs) != 1 else ''}, {sum(len(run.entries) for run in runs):,} tasks")
    if not any(registry.benchmark_of(task) is not None for run in runs for task in run.entries):
        _no_benchmark(runs)
    out.mkdir(parents=True, exist_ok=True)
    with kept_by_the_collector():
        return _parts(runs, out, progress)


@contextmanager
def kept_by_the_collector() -> Iterator[None]:
    """Inside the block Python's garbage collector no longer walks the objects that exist now (``gc.freeze``): the
    runs read, a few hundred thousand objects the report keeps to its end, which each collection walked while the
    figures and pages were made (a tenth of the figures' drawing time for 16 runs), in this process and in those
    forked from it. Afterwards they are collected again, unless the caller had frozen objects itself."""
    frozen = gc.get_freeze_count() > 0
    gc.freeze()
    try:
        yield
    finally:
        if not frozen:
            gc.unfreeze()


def _parts(runs: list[Run], out: Path, progress: Progress) -> Report:
    """The report of ``runs``, its parts made at the same time (see :func:`build_report`)."""
    parts: list[forked.Part[Any]] = []
    compared = sampled = None
    if len(runs) > 1:  # every later model against the first, question by question
        compared = forked.started(functools.partial(_comparison, runs, progress), "the comparison")
        parts.append(compared)
    if any(run.samples for run in runs):
        sampled = forked.started(functools.partial(_samples_page, runs, out, progress), "samples.html")
        parts.append(sampled)
    # one run's figures are few and small: drawn here while the sample viewer is made, no drawing process started
    drawing = 0 if len(runs) == 1 and sampled is not None else None
    try:
        with figures.drawn_alongside(drawing):
            report = _build(runs, out, progress, compared, sampled)
            if waiting := figures.still_drawing():
                progress(f"drawing the last {waiting} figure{'s' if waiting != 1 else ''}")
    finally:
        for part in parts:
            part.stop()
    return replace(report, figures=sorted((out / "figures").glob("*.png")))


def _no_benchmark(runs: list[Run]) -> None:
    tasks = sorted({task for run in runs for task in run.entries})
    raise ValueError(f"no benchmark of this package in the results (tasks found: {', '.join(tasks) or 'none'})")


def _comparison(runs: list[Run], progress: Progress) -> Section:
    progress(f"comparison: {len(runs) - 1} model{'s' if len(runs) > 2 else ''} against {runs[0].model}")
    return comparison_section(runs)


def _samples_page(runs: list[Run], out: Path, progress: Progress) -> Path:
    logged = sum(len(samples) for run in runs for samples in run.samples.values())
    progress(f"samples.html: {logged:,} logged samples of {sum(bool(run.samples) for run in runs)} models")
    return write_samples_page(runs, out, progress=progress)


def _build(
    runs: list[Run],
    out: Path,
    progress: Progress,
    compared: forked.Part[Section] | None,
    sampled: forked.Part[Path] | None,
) -> Report:
    views = protocol_views(runs)  # one row per model and protocol: _paper tasks under their plain names
    figdir = out / "figures"
    figdir.mkdir(parents=True, exist_ok=True)
    sections: list[Section] = []
    benchmarks = list(registry.benchmarks().values())
    for index, (described, build) in enumerate(zip(benchmarks, section_builders(), strict=True), start=1):
        progress(f"section {index} of {len(benchmarks)}: {described.title or described.name}")
        built = build(views, figdir)
        if built is not None:
            note = judge_off_note(described, views)
            if note is not None:
                built.blocks.insert(0, note)
            sections.append(built)
    if not sections:
        _no_benchmark(runs)
    files = sum(len(run.sources) for run in runs)
    titles = [section.title for section in sections]
    missing = left_out(views)
    top = summary_section(
        views, titles, files, [run.model for run in runs], headline_table(views), [missing] if missing else []
    )
    if waiting := figures.still_drawing():  # the queued figures drawn here too, rather than waiting for the parts
        progress(f"drawing {waiting} figure{'s' if waiting != 1 else ''}")
        figures.draw_waiting()
    if compared is not None:
        sections.append(compared.result())
    flagged = _flagged(runs)
    if flagged is not None:
        sections.append(flagged)
    sections.append(environment_section(runs))
    details = next(block for block in top.blocks if isinstance(block, Details))
    for run in runs:
        if run.sources:  # none when every file of the run is one the report does not show (its notes say so)
            named = ", ".join(shown_path(path, out) for path in run.sources)
            details.blocks.append(Note(f"{run.model}: {named}."))
        details.blocks += [Note(f"{run.model}: {note}.") for note in run.notes]
    top.blocks.append(
        Note(
            "Accuracies are percentages; brackets give 95% Wilson score intervals. Rows marked (published) are the "
            "papers' reported numbers, cited below each table. A model's results under the paper's own protocol (its "
            "_paper tasks) are shown as the model with (paper protocol)."
        )
    )
    page_sections = without_machine_paths([top, *sections], out)
    out.mkdir(parents=True, exist_ok=True)
    samples = sampled.result() if sampled is not None else None
    progress("writing report.html and report.md")
    markdown_text, html_text = to_markdown(TITLE, [], page_sections), to_html(TITLE, [], page_sections)
    if samples is not None:
        markdown_text = markdown_text.replace("\n\n", f"\n\n{SAMPLES_TEXT} [samples.html](samples.html).\n\n", 1)
        link = f'<p>{SAMPLES_TEXT} <a href="samples.html">samples.html</a>.</p>'
        html_text = html_text.replace("</h1>", f"</h1>\n{link}", 1)
    markdown = out / "report.md"
    markdown.write_text(markdown_text, encoding="utf-8")
    page = out / "report.html"
    page.write_text(html_text, encoding="utf-8")
    return Report(markdown, page, sorted(figdir.glob("*.png")), [s.title for s in sections], samples)


def without_machine_paths(sections: list[Section], out: Path) -> list[Section]:
    """Every caption, note and cell with its absolute paths shown as :func:`shown_path` does."""

    def clean(text: str) -> str:
        return shown(text, out)

    def cleaned_blocks(given: list[Any]) -> list[Any]:
        blocks: list[Any] = []
        for block in given:
            if isinstance(block, Note):
                blocks.append(Note(clean(block.text), block.kind))
            elif isinstance(block, Table):
                rows = [[clean(cell) for cell in row] for row in block.rows]
                blocks.append(replace(block, caption=clean(block.caption), rows=rows))
            elif isinstance(block, Details):
                blocks.append(Details(clean(block.summary), cleaned_blocks(block.blocks)))
            else:
                blocks.append(block)
        return blocks

    return [Section(section.title, cleaned_blocks(section.blocks), section.anchor) for section in sections]


def environment_section(runs: list[Run]) -> Section:
    """What made each results file (its environment block, task versions and the revision of the data each source
    read) and what made this report."""
    rows = []
    for run in runs:
        for path, block in run.environments.items():
            versions = ", ".join(
                f"{task} {version}" for task, version in sorted(run.task_versions.get(path, {}).items())
            )
            data = ", ".join(
                f"{source} {provenance.short_revision(revision)}"
                for source, revision in sorted(provenance.data_revisions(block).items())
            )
            rows.append([run.model, path.name, versions or "-", data or provenance.UNKNOWN, provenance.summary(block)])
    header = ["model", "file", "task versions", "data revision", "environment"]
    blocks: list[Any] = [Table("Results files", header, rows)]
    recorded = [provenance.flat(block) for run in runs for block in run.environments.values() if block]
    differing = sorted({name for flat in recorded for name in flat if len({f.get(name) for f in recorded}) > 1})
    shown_first: list[Any] = []
    if differing:
        shown_first.append(
            Note(f"The results files were made in different environments ({', '.join(differing)} differ).")
        )
    blocks.append(Note(f"This report: {provenance.summary(provenance.environment(None))}."))
    files = f"{len(rows)} results file{'s' if len(rows) != 1 else ''}"
    collapsed = Details(f"{ENVIRONMENT_DETAILS} ({files})", blocks)
    return Section("Environment: what made these numbers", [*shown_first, collapsed])


ENVIRONMENT_DETAILS = "Task versions, data revisions and environments"


SAMPLES_TEXT = "Every sample (figure, prompt, output, how it was scored), filterable:"


OUTPUT_FLAGS = tuple(status for status in get_args(OutputStatus) if status != "ok")
"""Output statuses that flag a sample (:mod:`scifig_tasks.core.raw_outputs`)."""


def _flag(sample: dict[str, Any]) -> str | None:
    record = sample.get("breakdown")
    if not isinstance(record, dict):
        return None
    # GRAB records carry output_status; multiple-choice records name an empty or failed output as their reason
    status = record.get("output_status") or (record.get("reason") if record.get("reason") in OUTPUT_FLAGS else None)
    statuses = status if isinstance(status, list) else [status]
    bad = sorted({s for s in statuses if s not in (None, "ok")})
    if bad:
        return ", ".join(bad)
    if record.get("resolution") == "unresolved":
        return "unresolved"
    return None


def _excerpt(value: Any, limit: int = 80) -> str:
    text = repr(value if not isinstance(value, list) or len(value) != 1 else value[0])
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _flagged(runs: list[Run]) -> Section | None:
    counts, examples = [], []
    for run in runs:
        for task, samples in sorted(run.samples.items()):
            flagged = [(sample, flag) for sample in samples if (flag := _flag(sample)) is not None]
            counts.append([run.model, task, str(len(samples)), str(len(flagged))])
            for sample, flag in flagged[:FLAGGED_EXAMPLES]:
                examples.append(
                    [run.model, task, str(sample.get("doc_id")), flag, _excerpt(sample.get("filtered_resps"))]
                )
    if not counts:
        return None
    return Section(
        "Outputs counted wrong without a readable answer (sample logs)",
        [
            Note("Empty outputs, failed requests and answers no rule or judge could resolve count as wrong."),
            Table("Logged samples per task", ["model", "task", "samples", "flagged"], counts),
            Table(
                f"Examples (first {FLAGGED_EXAMPLES} per task)",
                ["model", "task", "doc", "flag", "output"],
                examples,
                "none (no logged output was flagged)",
            ),
        ],
    )
