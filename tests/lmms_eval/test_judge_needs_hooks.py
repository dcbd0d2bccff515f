"""Which tasks require the judge is read from their hooks' declarations, and a scifig task's scoring error reaches the
user as itself: lmms-eval's tenacity retry around ``process_results`` (5 tries, 2 s apart, then ``RetryError``) is not
applied to scifig tasks, whose judge client retries on its own."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from tenacity import RetryError, retry, stop_after_attempt

from scifig_tasks.core import task_files
from scifig_tasks.core.judge.required import tasks_requiring_judge
from scifig_tasks.lmms_eval.environment import wrap_process_results


def test_the_tasks_requiring_the_judge_are_those_whose_hooks_declare_it() -> None:
    leaves = [info.name for info in task_files.scifig_tasks().values() if not info.is_group]

    required = set(tasks_requiring_judge(leaves))

    multiple_choice_paper = {
        "mmsci_fig2cap_paper",
        "mmsci_subfig2cap_paper",
        "mmsci_subcap2fig_paper",
        *(
            f"scifibench_{domain}_{kind}_paper"
            for domain in ("cs", "general")
            for kind in ("figure2caption", "caption2figure")
        ),
    }
    grab_extraction = {f"grab_{task}_llm_extract" for task in ("properties", "functions", "series", "transforms")}
    charxiv_paper = {"charxiv_full_descriptive_paper", "charxiv_full_reasoning_paper"}
    plot_twist_open = {  # every output reformatted by the judge (App. B.3's protocols)
        *(f"plot_twist_open{pali}_{chart}" for pali in ("", "_pali") for chart in ("scatter", "bar", "pie")),
        *(f"plot_twist_{part}_open{pali}" for part in ("chartqa", "robustness") for pali in ("", "_pali")),
    }
    assert required == multiple_choice_paper | grab_extraction | charxiv_paper | plot_twist_open
    assert tasks_requiring_judge(["scifibench_cs_figure2caption", "mmsci_fig2cap_paper"], "paper") == [
        "scifibench_cs_figure2caption",
        "mmsci_fig2cap_paper",
    ]
    assert tasks_requiring_judge(["mmsci_paper", "grab_llm_extract"], "default") == ["grab_llm_extract"]


def test_a_scifig_tasks_scoring_error_is_raised_once_as_itself() -> None:
    calls: list[str] = []

    @retry(stop=stop_after_attempt(3))
    def process_results(self: object, doc: dict, results: list) -> dict:
        calls.append(self.config.task)
        raise RuntimeError("judge endpoint answered 401 Unauthorized")

    wrapped = wrap_process_results(process_results)
    ours = SimpleNamespace(config=SimpleNamespace(task="grab_properties", metadata={"scifig_source": "grab"}))
    other = SimpleNamespace(config=SimpleNamespace(task="other", metadata={}))

    with pytest.raises(RuntimeError, match="401 Unauthorized"):
        wrapped(ours, {}, ["reply"])
    with pytest.raises(RetryError):  # other tasks keep lmms-eval's retry
        wrapped(other, {}, ["reply"])
    assert calls == ["grab_properties", "other", "other", "other"]
