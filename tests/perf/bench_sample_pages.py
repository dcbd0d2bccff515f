"""``samples.html`` from Jinja2 templates against the Python-string page it replaced, in one run.

The rule it decides: HTML, CSS and JavaScript kept in Python strings stay only if that renderer is >= 1.5x faster
than the templates at producing the same page; otherwise the templates (package data in
``scifig_tasks/report/templates``, autoescaping on) hold the page. The string renderer is the baseline: :data:`_PAGE`,
the page as one string (assembled once from the template files, so the page is not written twice), with
``__TITLE__`` and ``__DATA__`` replaced by ``str.replace``, as the former renderer did (its data escaped by the same
``scifig_tasks.report.samples.script_json`` rule, so both write the same page).

What it measures, on a realistic report built here: ``--samples`` documents (default 600) of GRAB's four tasks, each
answered by ``--models`` models (default 3), in lmms-eval's sample-log format (outputs of 10 to 3,000 characters,
some holding HTML such as ``<script>`` and ``</script>``, as model outputs can), loaded with
``scifig_tasks.report.runs.load_runs``; documents are not loaded (no thumbnails: the images are the same work for
both renderers and would only dilute the difference).

* ``render``: the page's HTML from the same page data (:func:`scifig_tasks.report.samples.page_data`): the strings'
  two ``str.replace`` against ``render_page`` (template compiled once per process, then cached);
* ``first render``: the same with the template environment created and the templates loaded and compiled in the
  timed call (what one ``scifig report`` process pays once);
* ``write page``: the whole ``write_samples_page`` (page data from the runs, render, write) against the same steps
  with the string renderer.

Each figure is the median of ``--repeat`` rounds (default 15; the two renderers alternate within a round); the
ratio is strings / templates. ``identical`` compares the two pages byte for byte.

Run from the repository root: ``python -m tests.perf.bench_sample_pages`` (options ``--samples``, ``--models``,
``--repeat``). The default run takes a few seconds.
"""

from __future__ import annotations

import argparse
import html
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from scifig_tasks.report import samples
from scifig_tasks.report.runs import Run, load_runs

RULE = 1.5
GRAB_TASKS = {
    "grab_properties": "properties",
    "grab_functions": "function",
    "grab_series": "series",
    "grab_transforms": "transform",
}
"""lmms-eval task -> the ``task`` field of its records."""
OUTPUTS = (
    "The answer is {answer}.",
    "<script>alert('model output {index}')</script> {answer}",
    "Reading the graph: " + "the curve rises, then falls; " * 100 + "so {answer}",
    "{answer} </script><b>bold</b> & <!-- not a comment --> \\u2028 \u00e9",
)


def write_runs(folder: Path, documents: int, models: int) -> list[Run]:
    """Sample logs of ``models`` models over ``documents`` GRAB documents (split over GRAB's four tasks)."""
    for model in range(models):
        run = folder / f"model-{model}"
        run.mkdir(parents=True)
        results = {task: {"accuracy,none": 0.5} for task in GRAB_TASKS}
        (run / "1_results.json").write_text(json.dumps({"results": results, "model_name": f"model-{model}"}))
        for number, task in enumerate(GRAB_TASKS):
            with (run / f"1_samples_{task}.jsonl").open("w", encoding="utf-8") as handle:
                for index in range(number, documents, len(GRAB_TASKS)):
                    output = OUTPUTS[(index + model) % len(OUTPUTS)].format(answer=index, index=index)
                    record = {"pid": index, "task": GRAB_TASKS[task], "correct": index % 2}
                    record |= {"category": ("Extrema", "Range")[index % 2], "output_status": "ok"}
                    record |= {"judge": "not_used", "extracted": None}
                    prompt = f"[q{index}] What is the y-intercept of the function? Give your answer as an integer."
                    sample = {"doc_id": index, "target": str(index), "filtered_resps": [output], "input": prompt}
                    sample |= {"accuracy": float(index % 2), "breakdown": record}
                    handle.write(json.dumps(sample) + "\n")
    return load_runs([folder])


def no_documents(tasks: list[str]) -> dict[str, Any]:
    return dict.fromkeys(tasks, "not loaded by this benchmark")


def strings_render(data: Mapping[str, Any]) -> str:
    """The page as the Python-string renderer wrote it."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("</", "<\\/").replace("<!--", "<\\u0021--")  # the second replace: see samples.script_json
    return _PAGE.replace("__TITLE__", html.escape(samples.TITLE)).replace("__DATA__", text)


def strings_write(runs: Sequence[Run], out: Path) -> Path:
    data = samples.page_data(runs, no_documents, out)
    page = out / "samples.html"
    out.mkdir(parents=True, exist_ok=True)
    page.write_text(strings_render(data), encoding="utf-8")
    return page


def templates_first_render(data: Mapping[str, Any]) -> str:
    samples.environment.cache_clear()
    return samples.render_page(data)


def timed(rounds: int, pairs: Sequence[tuple[Callable[[], Any], Callable[[], Any]]]) -> list[tuple[float, float]]:
    """Median seconds of each (strings, templates) pair over ``rounds`` alternating rounds (after one warm-up)."""
    out = []
    for strings, templates in pairs:
        strings(), templates()
        times: tuple[list[float], list[float]] = ([], [])
        for _ in range(rounds):
            for kind, call in enumerate((strings, templates)):
                start = time.perf_counter()
                call()
                times[kind].append(time.perf_counter() - start)
        out.append((statistics.median(times[0]), statistics.median(times[1])))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--models", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)

    import jinja2

    with tempfile.TemporaryDirectory(prefix="bench-samples-") as tmp:
        root = Path(tmp)
        runs = write_runs(root / "results", args.samples, args.models)
        data = samples.page_data(runs, no_documents, root / "data")
        old_page, new_page = strings_render(data), samples.render_page(data)
        old_file = strings_write(runs, root / "strings").read_bytes()
        new_file = samples.write_samples_page(runs, root / "templates", no_documents).read_bytes()
        figures = timed(
            args.repeat,
            [
                (lambda: strings_render(data), lambda: samples.render_page(data)),
                (lambda: strings_render(data), lambda: templates_first_render(data)),
                (
                    lambda: strings_write(runs, root / "strings"),
                    lambda: samples.write_samples_page(runs, root / "templates", no_documents),
                ),
            ],
        )
    print(
        f"samples.html for {len(data['rows'])} documents x {args.models} models ({len(new_page) / 1e6:.2f} MB of"
        f" HTML), Jinja2 {jinja2.__version__}, median of {args.repeat} rounds"
    )
    print(f"  identical HTML (render)     : {old_page == new_page}")
    print(f"  identical file (write page) : {old_file == new_file}")
    print(f"  {'step':<14} {'strings ms':>11} {'templates ms':>13} {'strings faster by':>18}")
    for label, (old, new) in zip(("render", "first render", "write page"), figures, strict=True):
        print(f"  {label:<14} {old * 1e3:11.2f} {new * 1e3:13.2f} {new / old:17.2f}x")
    decisive = figures[2][1] / figures[2][0]
    print(
        f"  verdict: the string renderer is {decisive:.2f}x as fast as the templates for the whole page (write page);"
        f" rule >= {RULE}x: {'strings kept' if decisive >= RULE else 'templates adopted'}"
    )
    return 0 if old_page == new_page and old_file == new_file else 1


# ---- the Python-string page (the baseline) ---------------------------------------------------------------------------


def _string_page() -> str:
    """The page as the string renderer held it: one text with ``__TITLE__`` and ``__DATA__`` to replace. Assembled
    once, before any timing, from the template files themselves (includes inlined, the two expressions turned into
    the markers), so the baseline is the same page without a second copy of its HTML, CSS and JavaScript."""
    from importlib.resources import files

    folder = files("scifig_tasks.report") / samples.TEMPLATES
    text = (folder / samples.TEMPLATE).read_text(encoding="utf-8")
    for name in ("samples.css", "samples.js"):
        text = text.replace(f'{{% include "{name}" %}}', (folder / name).read_text(encoding="utf-8"))
    text = text.replace("{{ title }}", "__TITLE__").replace("{{ data | script_json }}", "__DATA__")
    if "{" + "{" in text or "{" + "%" in text:
        raise SystemExit("bench_sample_pages: the template holds an expression the baseline does not know")
    return text


_PAGE = _string_page()


if __name__ == "__main__":
    raise SystemExit(main())
