"""lmms-eval's console table without nested scifig metrics: other tasks untouched, the results dictionary unchanged.

The table through the real CLI for all four benchmarks is checked in ``tests/report/test_report.py``.
"""

from __future__ import annotations

import copy

from scifig_tasks.lmms_eval.table import printable, scifig_names

BREAKDOWN = {"overall": {"all": {"n": 3, "correct": 1}}}
RESULTS = {
    "results": {
        "grab_series": {"alias": "grab_series", "accuracy,none": 0.25, "breakdown,none": BREAKDOWN},
        "mmmu_val": {"alias": "mmmu_val", "mmmu_acc,none": 0.5, "submission,none": {"kept": True}},
    },
    "groups": {"grab": {"alias": "grab", "accuracy,none": 0.5, "breakdown,none": BREAKDOWN}},
}


def test_nested_scifig_metrics_are_left_out_of_the_printed_copy_only() -> None:
    original = copy.deepcopy(RESULTS)

    shown, left_out = printable(RESULTS, "results")

    assert shown["results"]["grab_series"] == {"alias": "grab_series", "accuracy,none": 0.25}
    assert shown["results"]["mmmu_val"] == original["results"]["mmmu_val"]  # not ours: printed as lmms-eval prints it
    assert left_out == ["breakdown"]
    assert original == RESULTS


def test_groups_table_and_a_table_with_nothing_nested() -> None:
    shown, left_out = printable(RESULTS, "groups")
    assert shown["groups"]["grab"] == {"alias": "grab", "accuracy,none": 0.5}
    assert left_out == ["breakdown"]
    assert printable({"results": {"grab": {"accuracy,none": 1.0}}}, "results")[1] == []


def test_every_task_and_group_yaml_name_is_known() -> None:
    names = scifig_names()
    for name in ("grab", "grab_properties_mc", "scifibench_alignment", "plot_twist_robustness", "mmsci_captioning"):
        assert name in names
    assert "_default_template_yaml" not in names
