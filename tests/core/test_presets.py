"""Model presets: schema, expansion to lmms-eval arguments, the frameworks accepting them, and ``scifig eval --preset``
end to end through the real CLI against the local OpenAI-compatible server (credentials from the environment only).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from scifig_tasks.commands.presets import check_lmms_eval, check_vlmeval, model_parameters
from scifig_tasks.core.model_presets import PresetError, list_presets, load_preset, preset_names
from scifig_tasks.lmms_eval.preset_arguments import apply_preset, environment, lmms_eval_args
from tests.harness.grab_data import Row, question_text, write_parquet
from tests.harness.openai_server import Reply, by_question

# The presets the product promises, with the values written by hand from the model cards / paper settings.
EXPECTED = {
    "qwen2-vl-2b-instruct": ("hf", "qwen2_vl", {"pretrained": "Qwen/Qwen2-VL-2B-Instruct"}, "Qwen2-VL-2B-Instruct"),
    "qwen2-vl-7b-instruct": ("hf", "qwen2_vl", {"pretrained": "Qwen/Qwen2-VL-7B-Instruct"}, "Qwen2-VL-7B-Instruct"),
    "qwen2.5-vl-3b-instruct": (
        "hf",
        "qwen2_5_vl",
        {"pretrained": "Qwen/Qwen2.5-VL-3B-Instruct"},
        "Qwen2.5-VL-3B-Instruct",
    ),
    "qwen2.5-vl-7b-instruct": (
        "hf",
        "qwen2_5_vl",
        {"pretrained": "Qwen/Qwen2.5-VL-7B-Instruct"},
        "Qwen2.5-VL-7B-Instruct",
    ),
    "llava-1.5-7b": ("hf", "llava_hf", {"pretrained": "llava-hf/llava-1.5-7b-hf"}, "llava_v1.5_7b"),
    "llava-1.5-13b": ("hf", "llava_hf", {"pretrained": "llava-hf/llava-1.5-13b-hf"}, "llava_v1.5_13b"),
    "internvl2-2b": ("hf", "internvl2", {"pretrained": "OpenGVLab/InternVL2-2B"}, "InternVL2-2B"),
    "internvl2-8b": ("hf", "internvl2", {"pretrained": "OpenGVLab/InternVL2-8B"}, "InternVL2-8B"),
    "idefics2-8b": ("hf", "idefics2", {"pretrained": "HuggingFaceM4/idefics2-8b"}, "idefics2_8b"),
    "minicpm-v-2.6": ("hf", "minicpm_v", {"pretrained": "openbmb/MiniCPM-V-2_6"}, "MiniCPM-V-2_6"),
    "qwen2-vl-2b-instruct-vllm": (
        "vllm",
        "vllm",
        {"model": "Qwen/Qwen2-VL-2B-Instruct", "tensor_parallel_size": 1, "gpu_memory_utilization": 0.8},
        "Qwen2-VL-2B-Instruct",
    ),
    "qwen2-vl-7b-instruct-vllm": (
        "vllm",
        "vllm",
        {"model": "Qwen/Qwen2-VL-7B-Instruct", "tensor_parallel_size": 1, "gpu_memory_utilization": 0.8},
        "Qwen2-VL-7B-Instruct",
    ),
    "qwen2.5-vl-7b-instruct-vllm": (
        "vllm",
        "vllm",
        {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "tensor_parallel_size": 1, "gpu_memory_utilization": 0.8},
        "Qwen2.5-VL-7B-Instruct",
    ),
    "gpt-4o": ("openai", "openai", {"model_version": "gpt-4o-2024-05-13", "max_retries": 5}, "GPT4o"),
    "claude-3.5-sonnet": (
        "openai",
        "openai",
        {"model_version": "claude-3-5-sonnet-20240620", "max_retries": 5},
        "Claude3-5V_Sonnet",
    ),
    "gemini-1.5-pro": ("openai", "openai", {"model_version": "gemini-1.5-pro", "max_retries": 5}, "GeminiPro1-5"),
    "clip-vit-h-14-378": (
        "clip",
        "scifig_clip",
        {"model": "ViT-H-14-378-quickgelu", "pretrained": "dfn5b"},
        None,
    ),
    "metaclip-vit-h-14": (
        "clip",
        "scifig_clip",
        {"model": "ViT-H-14-quickgelu", "pretrained": "metaclip_fullcc"},
        None,
    ),
}
GREEDY_HF = {"temperature": 0, "do_sample": False}
GREEDY_API = {"temperature": 0}


def _parse_like_lmms_eval(argv: list[str], monkeypatch: pytest.MonkeyPatch):
    """Parse ``argv`` with lmms-eval's own argument parser and its own model_args/gen_kwargs parser."""
    import lmms_eval.__main__ as lmms_main
    from lmms_eval.utils import simple_parse_args_string

    monkeypatch.setattr(sys, "argv", ["lmms-eval", *argv])
    _, args = lmms_main.parse_eval_args()
    return args, simple_parse_args_string(args.model_args), simple_parse_args_string(args.gen_kwargs)


def test_shipped_presets_are_exactly_the_promised_ones() -> None:
    assert preset_names() == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_expands_to_arguments_lmms_eval_accepts(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    backend, model, model_args, vlmeval_model = EXPECTED[name]
    preset = load_preset(name)
    assert (preset.backend, preset.lmms_model, preset.vlmeval_model) == (backend, model, vlmeval_model)

    argv = lmms_eval_args(preset, ["--tasks", "grab", "--limit", "2"])
    args, parsed_model_args, parsed_gen_kwargs = _parse_like_lmms_eval(argv, monkeypatch)

    assert args.model == model and args.tasks == "grab" and args.limit == 2
    assert parsed_model_args == model_args
    expected_gen = {} if backend == "clip" else GREEDY_API if backend in ("openai", "vllm") else GREEDY_HF
    assert parsed_gen_kwargs == expected_gen
    assert args.seed == [0, 0, 0, 0]  # one seed for python, numpy, torch and few-shot sampling
    assert check_lmms_eval(preset) == []  # registry resolves the name; every model arg is a class parameter


def test_vlmeval_equivalents_exist_in_vlmeval_config() -> None:
    pytest.importorskip("vlmeval.config", reason="VLMEvalKit (ms-vlmeval) not installed")
    from vlmeval.config import supported_VLM

    named = [preset for preset in list_presets() if preset.vlmeval_model]
    assert len(named) == 16
    for preset in named:
        assert preset.vlmeval_model in supported_VLM, preset.name
        assert check_vlmeval(preset) == []


def test_model_parameters_follow_forwarded_kwargs() -> None:
    from lmms_eval.models import get_model

    chat_openai = model_parameters(get_model("openai"))  # chat class forwards **kwargs to the simple class
    assert {"model_version", "max_retries", "pass_video_url"} <= chat_openai and "kwargs" not in chat_openai
    qwen = model_parameters(get_model("qwen2_vl"))  # takes **kwargs but asserts it is empty: not forwarded
    assert "pretrained" in qwen and "max_pixels" in qwen and "model_version" not in qwen


def test_explicit_user_arguments_win() -> None:
    preset = load_preset("qwen2-vl-7b-instruct")
    argv = lmms_eval_args(
        preset,
        ["--tasks", "grab", "--model_args", "pretrained=/runs/merged,device=cpu", "--gen_kwargs=max_new_tokens=16"]
        + ["--seed", "7", "-b", "2"],
    )
    assert argv == [
        "--model",
        "qwen2_vl",
        "--model_args",
        "pretrained=/runs/merged,device=cpu",
        "--gen_kwargs",
        "temperature=0,do_sample=False,max_new_tokens=16",
        "--tasks",
        "grab",
        "--seed",
        "7",
        "-b",
        "2",
    ]
    assert lmms_eval_args(preset, ["--model", "qwen2_vl"])[:2] == ["--model", "qwen2_vl"]
    with pytest.raises(PresetError, match=r"key 'lmms_eval.model': --model llava_hf conflicts with the preset's"):
        lmms_eval_args(preset, ["--model", "llava_hf"])


def test_endpoint_credentials_come_from_the_environment_only() -> None:
    preset = load_preset("claude-3.5-sonnet")
    source = str(Path(preset.source))
    with pytest.raises(PresetError) as missing:
        environment(preset, {"ANTHROPIC_API_KEY": "sk-x"})
    assert str(missing.value) == (
        f"model preset {source}, key 'endpoint.base_url_env': set SCIFIG_ANTHROPIC_BASE_URL "
        "(e.g. https://api.anthropic.com/v1)"
    )
    with pytest.raises(PresetError, match=r"key 'endpoint.api_key_env': set ANTHROPIC_API_KEY \(the API key\)"):
        environment(preset, {"SCIFIG_ANTHROPIC_BASE_URL": "http://127.0.0.1:1/v1"})
    environ = {"SCIFIG_ANTHROPIC_BASE_URL": "http://127.0.0.1:1/v1", "ANTHROPIC_API_KEY": "sk-secret-1"}
    argv = apply_preset(["--preset", "claude-3.5-sonnet", "--tasks", "grab"], environ)
    assert environ["OPENAI_API_BASE"] == "http://127.0.0.1:1/v1" and environ["OPENAI_API_KEY"] == "sk-secret-1"
    assert not any("sk-secret-1" in arg or "127.0.0.1" in arg for arg in argv)
    assert apply_preset(["--tasks", "grab"], {}) == ["--tasks", "grab"]  # no preset: untouched


GOOD = {
    "description": "a model",
    "backend": "hf",
    "lmms_eval": {"model": "qwen2_vl", "model_args": {"pretrained": "x/y"}},
    "vlmeval_model": None,
}
API = {
    **GOOD,
    "backend": "openai",
    "lmms_eval": {"model": "openai", "model_args": {"model_version": "m"}},
    "endpoint": {"base_url_env": "MY_BASE", "api_key_env": "MY_KEY"},
}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({**GOOD, "extra": 1}, "key 'extra': unknown key (allowed: description, backend, lmms_eval, vlmeval_model, "),
        ({k: v for k, v in GOOD.items() if k != "vlmeval_model"}, "key 'vlmeval_model': missing required key"),
        ({**GOOD, "backend": "onnx"}, "key 'backend': must be one of hf, vllm, openai, clip, got 'onnx'"),
        ({**GOOD, "lmms_eval": {"model_args": {}}}, "key 'lmms_eval.model': missing required key"),
        ({**GOOD, "lmms_eval": {"model": "m", "temperature": 0}}, "key 'lmms_eval.temperature': unknown key"),
        (
            {**GOOD, "lmms_eval": {"model": "m", "model_args": {"api_key": "sk-1"}}},
            "key 'lmms_eval.model_args.api_key': credentials and endpoints are never stored",
        ),
        (
            {**GOOD, "lmms_eval": {"model": "m", "model_args": {"pretrained": ["a"]}}},
            "key 'lmms_eval.model_args.pretrained': must be a scalar",
        ),
        (
            {**GOOD, "lmms_eval": {"model": "m", "model_args": {"pretrained": "a,b"}}},
            "key 'lmms_eval.model_args.pretrained': must not contain ',' or '='",
        ),
        ({**GOOD, "lmms_eval": {"model": "m", "seed": "0"}}, "key 'lmms_eval.seed': must be an integer, got str '0'"),
        ({**GOOD, "endpoint": API["endpoint"]}, "key 'endpoint': only the openai backend takes an endpoint"),
        ({k: v for k, v in API.items() if k != "endpoint"}, "key 'endpoint': missing: the openai backend needs"),
        (
            {**API, "endpoint": {"base_url_env": "MY_BASE", "api_key_env": "sk-live-123"}},
            "key 'endpoint.api_key_env': must name an environment variable",
        ),
        ({**GOOD, "vlmeval_model": 3}, "key 'vlmeval_model': must be a VLMEvalKit model name or null, got int 3"),
    ],
)
def test_schema_errors_name_the_file_and_the_key(tmp_path: Path, data: dict, message: str) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(PresetError) as error:
        load_preset(str(path))
    assert str(error.value).startswith(f"model preset {path}, {message}")
    assert "sk-live-123" not in str(error.value)


def test_unknown_preset_lists_the_available_ones() -> None:
    with pytest.raises(PresetError, match=r"model preset gpt-5: unknown preset; available: claude-3.5-sonnet, "):
        load_preset("gpt-5")


def test_scifig_eval_preset_through_the_real_cli(tmp_path: Path, openai_server, lmms_env, run_cli) -> None:
    rows = [Row("properties", "15"), Row("properties", "-3"), Row("properties", "7")]
    data = write_parquet(rows, tmp_path / "grab" / "GRAB.parquet")
    replies = {question_text(0, rows[0]): "15", question_text(1, rows[1]): "-3", question_text(2, rows[2]): "8"}
    server = openai_server(by_question(replies, default=Reply(status=404)))
    secret = "sk-ant-secret-0123456789"
    env = {
        **lmms_env,
        "SCIFIG_GRAB_DATA": str(data),
        "SCIFIG_ANTHROPIC_BASE_URL": server.base_url,
        "ANTHROPIC_API_KEY": secret,
    }
    args = ["eval", "--preset", "claude-3.5-sonnet", "--tasks", "grab_properties", "--log_samples"]
    args += ["--model_args", "max_retries=1"]  # user value wins: one attempt (lmms-eval counts attempts)

    run = run_cli("scifig", args, env, tmp_path / "out")

    assert run.returncode == 0, run.output[-4000:]
    results = run.results()
    assert results["results"]["grab_properties"]["accuracy,none"] == 2 / 3
    assert results["config"]["model"] == "openai"
    assert results["config"]["model_args"] == "model_version=claude-3-5-sonnet-20240620,max_retries=1"
    bodies = [request.body for request in server.requests]
    assert len(bodies) == 3
    assert {body["model"] for body in bodies} == {"claude-3-5-sonnet-20240620"}
    assert {body["temperature"] for body in bodies} == {0}
    assert {request.headers.get("authorization") for request in server.requests} == {f"Bearer {secret}"}
    written = [path for path in (tmp_path / "out").rglob("*") if path.is_file()]
    assert written and not any(secret in path.read_text(errors="replace") for path in written)
    assert secret not in run.output


def test_check_reports_unknown_models_and_arguments() -> None:
    from scifig_tasks.core.model_presets import parse_preset

    bogus_arg = parse_preset({**GOOD, "lmms_eval": {"model": "qwen2_vl", "model_args": {"pretraind": "x"}}}, "b", "b.y")
    assert check_lmms_eval(bogus_arg) == [
        "b.y: key 'lmms_eval.model_args.pretraind' is not a parameter of lmms_eval.models.simple.qwen2_vl.Qwen2_VL"
    ]
    unknown = parse_preset({**GOOD, "lmms_eval": {"model": "qwen9_vl"}}, "u", "u.y")
    assert check_lmms_eval(unknown) == ["u.y: lmms-eval has no model 'qwen9_vl' (key 'lmms_eval.model')"]


@pytest.mark.cli
def test_scifig_presets_lists_and_shows(capsys: pytest.CaptureFixture[str]) -> None:
    from scifig_tasks.commands.main import main

    assert main(["presets"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == sorted(EXPECTED)
    assert main(["presets", "gpt-4o"]) == 0
    shown = capsys.readouterr().out
    assert (
        "  command: lmms-eval --model openai --model_args model_version=gpt-4o-2024-05-13,max_retries=5 "
        "--gen_kwargs temperature=0 --seed 0\n"
    ) in shown
    assert "  needs: OPENAI_API_BASE (e.g. https://api.openai.com/v1) and OPENAI_API_KEY\n" in shown
