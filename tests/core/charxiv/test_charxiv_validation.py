"""The whole CharXiv validation split through the real loader, from the authors' own files (stand-in images): every
chart is asked its four descriptive questions (4,000, none repeated, none left out: not one per chart as lmms-eval
0.7.3 asks) and its reasoning question (1,000), each worded as the authors' code words it."""

from __future__ import annotations

from collections import defaultdict

import datasets
import pytest

from scifig_tasks.benchmarks.charxiv.source import CHARXIV_DESCRIPTIVE, CHARXIV_REASONING
from scifig_tasks.core.data import load_benchmark
from tests.harness.charxiv_full_data import authors_file, authors_prompts, differing, point_data_at, write_layout

pytestmark = pytest.mark.slow  # about 3 s: 1,000 charts checked and expanded twice

TEXT = ["query_id", "figure_id", "question", "answer"]
CHART = ["num_subplots", "category", "year"]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[datasets.Dataset, datasets.Dataset]:
    root = tmp_path_factory.mktemp("charxiv")
    folder = write_layout(root / "authors")
    with pytest.MonkeyPatch.context() as monkeypatch:
        point_data_at(monkeypatch, folder, root / "cache")
        return load_benchmark(CHARXIV_DESCRIPTIVE), load_benchmark(CHARXIV_REASONING)


def test_every_chart_is_asked_its_four_descriptive_questions(loaded: tuple[datasets.Dataset, datasets.Dataset]) -> None:
    documents = loaded[0].select_columns([*TEXT, "subq_idx", "template"]).to_list()
    charts = authors_file("descriptive")
    assert len(documents) == 4000
    assert len({document["query_id"] for document in documents}) == 4000
    asked: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for document in documents:
        asked[document["figure_id"]].append((document["template"], document["answer"]))
        assert document["query_id"] == f"{document['figure_id']}_{document['subq_idx']}"
    assert list(asked) == [chart["figure_id"] for chart in charts.values()]
    for figure, questions in asked.items():
        chart = charts[str(figure)]
        assert questions == list(zip(chart["qids"], chart["answers"], strict=True)), figure


def test_every_chart_is_asked_its_reasoning_question(loaded: tuple[datasets.Dataset, datasets.Dataset]) -> None:
    documents = loaded[1].select_columns([*TEXT, *CHART, "answer_type", "question_source", "raw_question"]).to_list()
    charts, metadata, descriptive = (
        authors_file("reasoning"),
        authors_file("image_metadata"),
        authors_file("descriptive"),
    )
    assert [document["query_id"] for document in documents] == list(charts)
    for document in documents:
        chart = charts[document["query_id"]]
        assert document["figure_id"] == chart["figure_id"]
        assert (document["answer_type"], document["question_source"]) == (chart["inst_category"], chart["qa_source"])
        assert (document["raw_question"], document["answer"]) == (chart["query"], chart["answer"])
        figure = metadata[document["query_id"]]
        assert (document["category"], document["year"]) == (figure["category"], figure["year"])
        assert document["num_subplots"] == descriptive[document["query_id"]]["num_subplots"]


def test_every_loaded_question_is_the_authors(loaded: tuple[datasets.Dataset, datasets.Dataset]) -> None:
    authors = authors_prompts()
    for mode, documents in zip(("descriptive", "reasoning"), loaded, strict=True):
        ours = dict(zip(documents["query_id"], documents["question"], strict=True))
        assert differing(ours, authors[mode]) == [], mode


def test_the_documents_carry_the_charts_image(loaded: tuple[datasets.Dataset, datasets.Dataset]) -> None:
    descriptive, reasoning = loaded
    assert isinstance(descriptive.features["image"], datasets.Image)
    assert descriptive[3999]["image"].size == reasoning[999]["image"].size == (8, 8)
