"""SciFIBench task configs as lmms-eval loads them: the reasoning variant and the simple-model image placeholder
are selected through ``lmms_eval_specific_kwargs``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.scifibench_data import Question, build, write_splits


@pytest.fixture
def task_dict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    data = write_splits(
        {"CS_Figure2Caption": build([Question("f2c", "B")]), "CS_Caption2Figure": build([Question("c2f", "C")], 9)},
        tmp_path / "data",
    )
    monkeypatch.setenv("SCIFIG_SCIFIBENCH_DATA", str(data))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    from lmms_eval.tasks import TaskManager, get_task_dict

    from scifig_tasks.lmms_eval.plugin import install

    install()

    def load(names: list[str], model_name: str | None = None):
        return get_task_dict(names, TaskManager("WARNING", model_name=model_name))

    return load


@pytest.mark.slow
def test_reasoning_tasks_drop_the_letter_only_sentence(task_dict) -> None:
    tasks = task_dict(["scifibench_cs_figure2caption", "scifibench_cs_figure2caption_reasoning"])
    standard, reasoning = (
        tasks[name] for name in ("scifibench_cs_figure2caption", "scifibench_cs_figure2caption_reasoning")
    )
    doc = standard.test_docs()[0]
    assert standard.doc_to_text(doc).endswith("Only provide the letter of the correct caption as your answer. Answer:")
    assert reasoning.doc_to_text(doc).endswith(
        "Which of the captions best describes the image? Let's think step by step. Answer:"
    )


@pytest.mark.parametrize(("model", "placeholder"), [("llava_onevision", "<image>"), ("qwen2_5_vl", "")])
@pytest.mark.slow
def test_simple_models_get_their_image_placeholder(task_dict, model: str, placeholder: str) -> None:
    task = task_dict(["scifibench_cs_caption2figure"], model_name=model)["scifibench_cs_caption2figure"]
    text = task.doc_to_text(task.test_docs()[0])
    assert text.startswith(
        f"A) {placeholder}\nB) {placeholder}\nC) {placeholder}\nD) {placeholder}\nE) {placeholder}\n"
    )
    assert text.endswith("Only provide the letter of the correct image as your answer. Answer:")


def test_decoding_is_greedy_and_the_task_version_is_recorded(task_dict) -> None:
    from scifig_tasks.core import registry

    task = task_dict(["scifibench_cs_figure2caption"])["scifibench_cs_figure2caption"]
    settings = {key: task.config.generation_kwargs[key] for key in ("max_new_tokens", "temperature", "do_sample")}
    assert settings == {"max_new_tokens": 1024, "temperature": 0, "do_sample": False}
    assert "\n\n" not in task.config.generation_kwargs["until"]  # lmms-eval's default stop would cut reasoning
    assert str(task.config.metadata["version"]) == registry.benchmark("scifibench").version == "2.4"
