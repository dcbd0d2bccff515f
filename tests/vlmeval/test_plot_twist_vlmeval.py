"""Plot Twist's VLMEvalKit datasets build the published prompts (paper Fig. 2 for the default datasets, App. B.3 for
the open-model ones, "only based on the figure" on the title variants) and record their protocol: the ``protocol``
option of the lmms-eval task of the same name."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from tests.harness.plot_twist_prompts import API

QUESTION = "How many bars are in the figure?"


def line(variant: str) -> dict[str, str]:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), (10, 20, 30)).save(buffer, format="PNG")
    return {
        "index": "0",
        "image": base64.b64encode(buffer.getvalue()).decode(),
        "image_path": "pt0.png",
        "q_id": "bar_000_count_bars",
        "figure_id": "bar_000",
        "chart_type": "bar",
        "question_type": "count_bars",
        "question": QUESTION,
        "answer": "4",
        "x_range": "5.0",
        "y_range": "400.0",
        "variant": variant,
    }


def dataset(name: str, tmp_path: Path):
    # imported here, not when the suite is collected: VLMEvalKit takes seconds to import
    datasets_module = pytest.importorskip("scifig_tasks.benchmarks.plot_twist.vlmeval")
    cls = datasets_module.SciFigPlotTwistRobustness if "robustness" in name else datasets_module.SciFigPlotTwist
    assert name in cls.NAMES
    instance = cls.__new__(cls)  # no TSV needed to build a prompt
    instance.dataset_name = name
    instance.img_root = str(tmp_path / "images")
    return instance


@pytest.mark.parametrize(
    ("name", "variant", "text"),
    [
        ("plot_twist", "base", f"{API} How many bars are in the figure?"),
        ("plot_twist_robustness", "title_misleading", f"{API} How many bars are in the figure?"),
        ("plot_twist_open", "base", "Answer the question based on the Figure How many bars are in the figure?"),
        ("plot_twist_open_pali", "grid", "Answer the question based on the Figure How many bars are in the figure?"),
        (
            "plot_twist_robustness_open",
            "title_none",
            "Answer the question only based on the figure How many bars are in the figure?",
        ),
        (
            "plot_twist_robustness_open_pali",
            "title_correct",
            "Answer the question only based on the figure How many bars are in the figure?",
        ),
    ],
)
def test_vlmeval_datasets_build_the_published_prompts(name: str, variant: str, text: str, tmp_path: Path) -> None:
    message = dataset(name, tmp_path).build_prompt(line(variant))
    assert [part["type"] for part in message] == ["image", "text"]
    assert message[1]["value"] == text
    assert Path(message[0]["value"]).read_bytes() == base64.b64decode(line(variant)["image"])


@pytest.mark.parametrize(
    ("name", "protocol"),
    [
        ("plot_twist", "api"),
        ("plot_twist_open", "open"),
        ("plot_twist_open_pali", "open_pali"),
        ("plot_twist_robustness_open", "open"),
        ("plot_twist_robustness_open_pali", "open_pali"),
    ],
)
def test_vlmeval_records_carry_the_protocol(name: str, protocol: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SCIFIG_JUDGE", "off")
    record = dataset(name, tmp_path).score(line("base"), "The answer is 4. I hope the answer is correct.")
    assert record["protocol"] == protocol
    assert (record["standard"], record["extracted"]) == ([1], ["4"])
    # with the judge off, the open protocols read the raw output and flag that the judge was not asked
    assert record["judge"] == (["not_used"] if protocol == "api" else ["judge_off"])
