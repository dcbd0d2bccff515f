"""``scifig tasks`` lists what to run from the task YAMLs' metadata in at most 100 columns, and ``scifig eval
--tasks`` refuses a name no task folder defines in one line, before lmms-eval starts, naming the closest task."""

from __future__ import annotations

from pathlib import Path

import pytest

from scifig_tasks.commands import tasks as tasks_cli
from scifig_tasks.commands.main import main
from scifig_tasks.core import registry, task_files
from tests.harness import benchmarks

PROTOCOLS = {"default", "paper"}


def test_every_task_a_user_runs_states_its_summary_and_protocol() -> None:
    tasks = task_files.scifig_tasks()
    listed = task_files.top_level(tasks)
    assert {*registry.benchmarks(), "grab_properties_mc"} <= {info.name for info in listed}
    assert "grab_properties" not in {info.name for info in listed}  # a member of grab
    own = [info for info in listed if benchmarks.own(registry.benchmark_of(info.name).name)]  # a plugin's may omit them
    assert {"grab", "mmsci", "plot_twist", "scifibench", "grab_properties_mc"} <= {info.name for info in own}
    missing = {
        info.name: [key for key in ("scifig_summary", "scifig_protocol") if key not in info.metadata] for info in own
    }
    assert {name: keys for name, keys in missing.items() if keys} == {}
    assert {info.metadata["scifig_protocol"] for info in own} <= PROTOCOLS
    assert tasks["grab"].fact("questions") == "2,170" and tasks["grab_llm_extract"].fact("protocol") == "paper"


@pytest.mark.parametrize("show_all", [False, True])
@pytest.mark.parametrize("mapping", ["installed", "none", "every name"])
def test_the_listing_fits_100_columns(show_all: bool, mapping: str) -> None:
    names = set(task_files.scifig_tasks())
    vlmeval = {"installed": None, "none": {}, "every name": {name: name for name in names}}[mapping]
    text = tasks_cli.listing(show_all=show_all, vlmeval=vlmeval)
    lines = text.splitlines()
    assert max(map(len, lines)) <= tasks_cli.WIDTH, max(lines, key=len)
    rows = {line.split()[0]: line.split() for line in lines[1:] if line and not line.startswith(" ")}
    assert rows["grab"][2:] == ["2,170", "Tab.", "3", "default"]
    assert rows["grab_llm_extract"][-1] == "paper"
    if mapping == "every name" and not show_all:
        assert rows["plot_twist_robustness_open_pali"][1] == "plot_twist_robustness_open_pali"  # side by side
    if mapping == "none":
        assert rows["grab"][1] == "—"
    assert ("  grab_properties " in text) == show_all


@pytest.mark.cli
def test_scifig_tasks_command_lists_and_details(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("task (lmms-eval)") and "\ngrab " in out and "\n  grab_properties " not in out
    assert main(["tasks", "grab_llm_extract"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("grab_llm_extract: GRAB with the paper's LLM answer extraction")
    assert "  tasks: grab_properties_llm_extract, " in out and "  in: " not in out
    assert "\n  LLM judge: required: the run is refused before the model runs when none is configured\n" in out
    assert main(["tasks", "grabb"]) == 2
    assert capsys.readouterr().err == "scifig tasks: no scifig task 'grabb' — did you mean grab?\n"


def test_yaml_names_reads_the_spellings_lmms_eval_accepts(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "plain.yaml").write_text("task: plain_task\ntag:\n  - tag_one\n  - 'tag_two'\ndataset_path: x\n")
    (tmp_path / "a" / "group.yaml").write_text("group : spaced_group\ntask:\n  - plain_task\n  - member_only\n")
    (tmp_path / "a" / "quoted.yaml").write_text('"task": "quoted_task"\n"tag": [flow_a, "flow_b"]\n')
    (tmp_path / "a" / "bom.yaml").write_bytes("\ufefftask: bom_task  # comment\n".encode())
    (tmp_path / "a" / "_template_yaml").write_text("task: from_template\ntag: template_tag\n")
    (tmp_path / "a" / "includer.yaml").write_text("include: _template_yaml\ntest_split: x\n")
    (tmp_path / "a" / "notes.txt").write_text("task: not_a_yaml\n")
    assert tasks_cli.yaml_names(tmp_path) == {
        "plain_task",
        "tag_one",
        "tag_two",
        "spaced_group",
        "quoted_task",
        "flow_a",
        "flow_b",
        "bom_task",
        "from_template",
        "template_tag",
    }


def test_known_names_are_scifigs_and_lmms_evals() -> None:
    known = tasks_cli.known_task_names()
    assert known is not None
    assert {"grab", "grab_properties_mc", "scifibench_cs_figure2caption", "mmmu_val", "coco2014_cap"} <= known


@pytest.mark.parametrize(
    ("tasks", "message"),
    [
        ("grabb", "unknown task 'grabb' — did you mean grab? (scifig tasks lists them)"),
        ("grab,scifibnch", "unknown task 'scifibnch' — did you mean scifibench? (scifig tasks lists them)"),
        ("mmmu_vall", "unknown task 'mmmu_vall' — did you mean mmmu_val? (scifig tasks lists them)"),
        (
            "grabb,plot_twistt",
            "unknown tasks 'grabb', 'plot_twistt' — did you mean grab, plot_twist? (scifig tasks lists them)",
        ),
        ("qqqqzzzz", "unknown task 'qqqqzzzz' — scifig tasks lists scifig's, lmms-eval --tasks list every task"),
        ("grab,mmmu_val", None),
        ("grab_*", None),
        ("list", None),
    ],
)
def test_unknown_task_message(tasks: str, message: str | None) -> None:
    assert tasks_cli.unknown_tasks_message(tasks) == message


def test_a_task_of_the_given_include_path_is_known(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text("task: my_own_task\n")
    assert tasks_cli.unknown_tasks_message("my_own_task") is not None
    assert tasks_cli.unknown_tasks_message("my_own_task", [str(tmp_path)]) is None
    assert tasks_cli.unknown_tasks_message(str(tmp_path / "mine.yaml")) is None  # a YAML file given as a task


@pytest.mark.parametrize("spelling", [["--tasks", "grab,grabb"], ["--tasks=grab,grabb"]])
@pytest.mark.cli
def test_scifig_eval_refuses_an_unknown_task_before_lmms_eval_starts(
    spelling: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import scifig_tasks.commands.eval as cli

    def never(argv: object) -> None:
        raise AssertionError("lmms-eval started")

    monkeypatch.setattr(cli, "run_lmms_eval", never)
    assert main(["eval", "--model", "scifig_chance", *spelling, "--output_path", "runs"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "scifig eval: unknown task 'grabb' — did you mean grab? (scifig tasks lists them)\n"


@pytest.mark.parametrize(
    ("name", "use"),
    [
        ("mmsci_paper", "required: the run is refused"),
        ("plot_twist_bar", "asked for an output the rules cannot read (without one: counted wrong and flagged)"),
        ("scifibench", "SCIFIG_JUDGE_AUDIT also samples"),
        ("mmsci_captioning", "asked when the scores are aggregated"),
        ("grab", "never"),
    ],
)
def test_each_task_says_how_it_uses_the_judge(name: str, use: str) -> None:
    """The words come from the declaration on the task's scoring hook, read through its YAML."""
    line = " ".join(tasks_cli.details(name).split("\n  LLM judge: ", 1)[1].split("\n  ")[0].split())
    assert use in line if use != "never" else line == "never", line
