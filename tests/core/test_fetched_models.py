"""Models a scoring hook fetches at run time are declared on the hook and checked once, before the run
(:mod:`scifig_tasks.core.fetched_models`); the declaration is found from a task's YAML as VLMEvalKit finds it."""

from __future__ import annotations

from functools import partial

from scifig_tasks.core import fetched_models, task_files
from scifig_tasks.core.fetched_models import check_lines, declared, fetches
from scifig_tasks.core.hub_cache import Unavailable


def test_a_model_that_cannot_be_had_is_one_line_once_with_what_is_lost(monkeypatch) -> None:
    monkeypatch.setattr(fetched_models, "_checked", {})
    calls: list[str] = []

    def check() -> str | None:
        calls.append("checked")
        raise Unavailable("model m: not in the Hugging Face cache (/c)", "download once (hf download m)")

    @fetches(check, without="metric x will be n/a")
    def hook(doc: dict, results: list, *, protocol: str) -> dict:
        return {}

    bound = partial(hook, protocol="paper")
    assert declared(bound) is declared(hook) is not None
    assert check_lines([bound, hook, None]) == [
        "model m: not in the Hugging Face cache (/c) — metric x will be n/a; download once (hf download m)"
    ]
    assert check_lines([hook]) == [] and calls == ["checked"]  # said once a process


def test_a_cached_model_read_offline_is_said_and_a_present_one_is_silent(monkeypatch) -> None:
    monkeypatch.setattr(fetched_models, "_checked", {})
    offline = fetches(lambda: "the Hub is silent: model m read from the cache", without="-")(lambda: None)
    present = fetches(lambda: None, without="-")(lambda: None)
    assert check_lines([offline, present]) == ["the Hub is silent: model m read from the cache"]


def test_every_mmsci_captioning_task_declares_its_bertscore_model() -> None:
    tasks = task_files.scifig_tasks()
    captioning = [name for name, info in tasks.items() if name.startswith("mmsci_caption") and not info.is_group]
    assert captioning
    for name in captioning:
        model = declared(task_files.scoring_hook(tasks[name]))
        assert model is not None and "bertscore_f1" in model.without, name
    assert all(declared(task_files.scoring_hook(tasks[leaf])) is None for leaf in task_files.leaves("grab", tasks))
