"""Outputs public models really produced (tests/fixtures/mcq_outputs) and the chatty SciFIBench-style families are
never resolved to a letter they do not state: through the core, the real lmms-eval CLI and VLMEvalKit's runner.

Labels were written by reading each output (see the fixture's README), not by the resolver. The judge is off, so
every resolution comes from the rules: a wrong one would be a rule's fault. Each output is scored with the question
its source's prompt gave (it decides whether lower-case labels can name options).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import datasets
from PIL import Image

from scifig_tasks.core.multiple_choice import resolve_by_rules
from tests.harness.mcq_corpus import CHATTY, CHATTY_OPTIONS
from tests.harness.mcq_real import COLLECTIONS, LOWER_CASE_LABEL_SOURCES, RealOutput, load_real_outputs
from tests.harness.openai_server import ChatRequest
from tests.harness.paths import FIXTURES
from tests.harness.scifibench_data import FEATURES, write_splits
from tests.harness.vlmeval import run_vlmeval

REAL = load_real_outputs()
ITEMS = [
    *REAL,
    *(
        RealOutput(f"chatty/{i}", "chatty", "-", CHATTY_OPTIONS, o, label, "letter", "Which caption fits?", "chatty")
        for i, (o, label) in enumerate(CHATTY)
    ),
]
FRAMEWORK_ITEMS = [item for item in ITEMS if item.collection != "third"]
"""What the frameworks are run on: every output but the third collection's. Through them each output reaches the
same rules the core tests hold on all collections; the third would only lengthen the slowest tests of the suite."""


def test_the_fixture_is_what_its_readme_says() -> None:
    assert len(REAL) >= 800 and len(ITEMS) < 10_000  # the image colours and widths below name up to 10,000 items
    for collection in COLLECTIONS:
        assert len([item for item in REAL if item.collection == collection]) >= 100, collection
    assert len({item.source for item in REAL}) >= 4
    assert len({(item.source, item.model) for item in REAL}) >= 8
    assert len({item.id for item in REAL}) == len(REAL)
    for item in REAL:
        assert item.label is None or item.label in "ABCDEFGHIJ"[: len(item.options)], item.id
        assert (item.label is None) == (item.basis == "none"), item.id
    multi_sentence = sum(item.output.count(". ") + item.output.count("\n") >= 1 for item in REAL)
    assert multi_sentence > len(REAL) / 2
    readme = (FIXTURES / "mcq_outputs" / "README.md").read_text(encoding="utf-8")
    for source in {item.source for item in REAL}:
        assert source in readme, source


def wrong_resolutions(predicted: dict[str, str | None]) -> list[tuple[str, str | None, str | None]]:
    by_id = {item.id: item for item in ITEMS}
    return [
        (key, letter, by_id[key].label) for key, letter in predicted.items() if letter and letter != by_id[key].label
    ]


def resolved(item: RealOutput) -> str | None:
    return resolve_by_rules(item.output, item.labelled_options, question=item.prompt).letter


def test_the_rules_never_read_a_letter_the_output_does_not_state() -> None:
    predicted = {item.id: resolved(item) for item in ITEMS}
    assert wrong_resolutions(predicted) == []


def test_the_rules_resolve_nine_in_ten_stated_answers_in_every_collection() -> None:
    """Upper-case label prompts (scifig's benchmarks): the first collection, the tuning half and the held-out half."""
    for collection in COLLECTIONS:
        stated = [
            item
            for item in REAL
            if item.collection == collection and item.label and item.source not in LOWER_CASE_LABEL_SOURCES
        ]
        share = sum(resolved(item) == item.label for item in stated) / len(stated)
        assert share >= 0.9, (collection, round(share, 3))


# ---- through the frameworks: one SciFIBench Figure->Caption question per output ------------------------------------


def colour(number: int) -> tuple[int, int, int]:
    """A flat colour naming a number below 1,000, in steps of 24 per channel: it survives the JPEG re-encoding and
    resizing an API client may apply."""
    return tuple(12 + 24 * ((number // 10**place) % 10) for place in range(3))  # type: ignore[return-value]


def number_of(rgb: tuple[int, int, int]) -> int:
    return sum(round((value - 12) / 24) * 10**place for place, value in enumerate(rgb))


def item_image(index: int) -> bytes:
    """The item's number in two flat halves: the left names its last three digits, the right its thousands."""
    image = Image.new("RGB", (64, 48), colour(index % 1000))
    image.paste(colour(index // 1000), (32, 0, 64, 48))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def item_of(image: Image.Image) -> RealOutput:
    left, right = (image.getpixel((image.width * quarter // 4, image.height // 2)) for quarter in (1, 3))
    return FRAMEWORK_ITEMS[number_of(left) + 1000 * number_of(right)]


def write_data(directory: Path) -> Path:
    rows = [
        {
            "ID": index,
            "Question": item.prompt,
            "Options": item.labelled_options,
            "Answer": item.label or "A",
            "Category": item.source,
            "Images": [{"bytes": item_image(index), "path": None}],
        }
        for index, item in enumerate(FRAMEWORK_ITEMS)
    ]
    return write_splits({"CS_Figure2Caption": datasets.Dataset.from_list(rows, features=FEATURES)}, directory)


def reply_with_the_recorded_output(request: ChatRequest) -> str:
    import base64

    for message in request.body["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part.get("type") == "image_url":
                data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                image = Image.open(io.BytesIO(data)).convert("RGB")
                return item_of(image).output
    raise AssertionError("a request without an image")


def core_counts() -> Counter:
    return Counter(
        resolve_by_rules(item.output, item.labelled_options, question=item.prompt).method for item in FRAMEWORK_ITEMS
    )


def test_real_outputs_through_the_lmms_eval_cli(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    model = openai_server(reply_with_the_recorded_output)
    env = {
        **lmms_env,
        "SCIFIG_SCIFIBENCH_DATA": str(write_data(tmp_path / "scifibench")),
        "SCIFIG_JUDGE": "off",
        "OPENAI_API_BASE": model.base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    args = ["--model", "openai", "--model_args", "model_version=fake-vlm,max_retries=1,retry_backoff_s=0"]
    args += ["--tasks", "scifibench_cs_figure2caption", "--log_samples"]
    run = run_cli("lmms-eval", args, env, tmp_path / "out")
    assert run.returncode == 0, run.output[-4000:]
    samples = run.samples("scifibench_cs_figure2caption")
    assert len(samples) == len(FRAMEWORK_ITEMS)
    predicted = {FRAMEWORK_ITEMS[sample["doc_id"]].id: sample["breakdown"]["predicted"] for sample in samples}
    assert wrong_resolutions(predicted) == []
    flags = run.results()["results"]["scifibench_cs_figure2caption"]["breakdown,none"]["flags"]
    assert flags["resolution"] == dict(core_counts())
    assert flags["protocol"] == {"default": len(FRAMEWORK_ITEMS)}


def test_real_outputs_through_the_vlmeval_runner(tmp_path: Path, openai_server, lmms_env) -> None:
    model = openai_server(reply_with_the_recorded_output)
    env = {**lmms_env, "SCIFIG_SCIFIBENCH_DATA": str(write_data(tmp_path / "scifibench")), "SCIFIG_JUDGE": "off"}
    name = "scifibench_cs_figure2caption"
    # VLMEvalKit's API model sleeps 0-0.5 s before every request: 32 threads instead of 4 wait those out together
    completed, out = run_vlmeval(tmp_path, model.base_url, env, {name: "SciFigSciFIBench"}, extra=["--api-nproc", "32"])
    # VLMEvalKit's API model turns an empty reply into its failure message: those are failed requests, a failed run
    empty = sum(not item.output.strip() for item in FRAMEWORK_ITEMS)
    assert completed.returncode == (1 if empty else 0), (completed.stdout + completed.stderr)[-6000:]
    if empty:
        failed = f"scifig vlmeval: FAILED: {empty} of {len(FRAMEWORK_ITEMS)} model requests failed "
        assert completed.stderr.rstrip().splitlines()[-1].startswith(failed), completed.stderr[-3000:]
    (records_file,) = out.glob(f"*{name}*_scifig_records.jsonl")
    records = [json.loads(line) for line in records_file.read_text().splitlines()]
    assert len(records) == len(FRAMEWORK_ITEMS)
    predicted = {FRAMEWORK_ITEMS[record["ID"]].id: record["predicted"] for record in records}
    assert wrong_resolutions(predicted) == []
    assert Counter(record["resolution"] for record in records) == core_counts()
