"""``scifig doctor``: one screen that says whether this installation can run the benchmarks, and what to do where it
cannot. Exit status 1 when any check fails; what the checks read of the machine is a :class:`Probe`.

Manual: docs/reproducibility.md, "What `scifig doctor` checks".
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.metadata
import io
import os
import platform
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from scifig_tasks.commands import HELP
from scifig_tasks.core import provenance
from scifig_tasks.core.errors import CommandError
from scifig_tasks.core.settings import BENCHMARKS_GROUP

Status = Literal["ok", "note", "FAIL"]
DISTRIBUTION = "scifig"
FRAMEWORKS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    # (label, distribution, extra, modules a run imports: lmms-eval's evaluator imports filelock._api)
    ("lmms-eval", "lmms-eval", "lmms", ("lmms_eval.evaluator", "filelock._api")),
    ("VLMEvalKit", "ms-vlmeval", "vlmeval", ("vlmeval",)),
)
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
LOCK = provenance.SOURCE_ROOT / ".ci" / "requirements.lock"
"""The tested environment, when scifig runs from a checkout (an installed wheel has no lock)."""


@dataclass(frozen=True)
class Check:
    status: Status
    name: str
    detail: str


def _requires() -> list[str]:
    return importlib.metadata.requires(DISTRIBUTION) or []


def normalise(name: str) -> str:
    """A distribution name as the lock and the registry compare it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_versions(text: str) -> dict[str, str]:
    """``name -> version`` of every ``name==version`` line of a lock written by ``uv pip compile``."""
    return {normalise(m.group(1)): m.group(2) for m in re.finditer(r"^([A-Za-z0-9][\w.-]*)==(\S+)", text, re.M)}


def _distributions() -> dict[str, importlib.metadata.Distribution]:
    """Every distribution on the path by normalised name: the first of a name, the one imported."""
    found: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():  # in path order
        found.setdefault(normalise(dist.metadata["Name"]), dist)
    return found


def _is_plugin(name: str, dist: importlib.metadata.Distribution) -> bool:
    """Whether ``dist`` is a benchmark plugin (docs/reproducibility.md, "What `scifig doctor` checks")."""
    return name != DISTRIBUTION and any(point.group == BENCHMARKS_GROUP for point in dist.entry_points)


def installed_distributions() -> dict[str, str]:
    """``name -> version`` of every distribution installed here but pip, scifig itself and the benchmark plugins: the
    environment the lock describes."""
    return {
        name: dist.version
        for name, dist in _distributions().items()
        if name not in ("pip", DISTRIBUTION) and not _is_plugin(name, dist)
    }


def unlocked() -> list[str]:
    """Installed distributions the lock does not name (``.ci/setup`` removes them); benchmark plugins are never
    among them (:func:`installed_distributions`)."""
    return sorted(set(installed_distributions()) - set(locked_versions(LOCK.read_text(encoding="utf-8"))))


@dataclass(frozen=True)
class Plugin:
    """A benchmark registered by another distribution than scifig."""

    benchmark: str
    package: str
    """``name version`` of the distribution registering it (:func:`scifig_tasks.core.registry.package_of`)."""
    task_folder: Path
    settings: tuple[str, ...] = ()
    """Its settings: each source's data (and Hub revision) variable, then those its description declares."""


def registered_plugins() -> list[Plugin]:
    """The registered benchmarks that plugins add, in registry order."""
    from scifig_tasks.core import registry

    def settings_of(described: Any) -> tuple[str, ...]:
        variables = [name for source in described.sources.values() for name in (source.env_var, source.revision_var)]
        return tuple(dict.fromkeys(filter(None, [*variables, *(setting.name for setting in described.settings)])))

    return [
        Plugin(name, registry.package_of(name), Path(described.task_folder), settings_of(described))
        for name, described in registry.benchmarks().items()
        if registry.is_plugin(name)
    ]


def refused_benchmarks() -> dict[str, str]:
    """Entry-point name -> the one line saying why the registry left that benchmark out."""
    from scifig_tasks.core import registry

    return registry.refused()


def _requires_python() -> str:
    return importlib.metadata.metadata(DISTRIBUTION).get("Requires-Python") or ""


def _cuda() -> str:
    import torch

    if not torch.cuda.is_available():
        return "CPU only (no CUDA device visible: local models run on the CPU)"
    names = sorted({torch.cuda.get_device_name(index) for index in range(torch.cuda.device_count())})
    return f"CUDA {torch.version.cuda}, {torch.cuda.device_count()} device(s): {', '.join(names)}"


def _hub_cache() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def benchmark_model_settings() -> list[Any]:
    """The settings naming a model the registered benchmarks fetch from the Hub at run time
    (:class:`~scifig_tasks.core.hub_cache.ModelSetting`), in the registry's order."""
    from scifig_tasks.core import registry
    from scifig_tasks.core.hub_cache import ModelSetting

    return [setting for setting in registry.declared_settings().values() if isinstance(setting, ModelSetting)]


FINETUNE_PACKAGE = "scifig_finetune"
"""The fine-tuning recipe's installed package, whose packaged configs name the base models ``scifig finetune``
fetches; read as data (``scifig_tasks`` imports nothing of it)."""


def finetune_base_models() -> dict[str, str]:
    """Packaged fine-tuning config name -> its base model (the config's ``model:``), read from the config files of
    the installed recipe package, found without importing it; empty when it is not installed."""
    import importlib.util

    import yaml

    spec = importlib.util.find_spec(FINETUNE_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    found: dict[str, str] = {}
    for path in sorted(path for folder in folders for path in (Path(folder) / "configs").glob("*.yaml")):
        try:
            model = yaml.safe_load(path.read_text(encoding="utf-8")).get("model")
        except (OSError, yaml.YAMLError, AttributeError):
            continue
        if isinstance(model, str):
            found[path.stem] = model
    return found


def _get(url: str, headers: Mapping[str, str]) -> tuple[int, Any]:
    import httpx

    response = httpx.get(url, headers=dict(headers), timeout=10.0)
    try:
        body = response.json()
    except ValueError:
        body = None
    return response.status_code, body


@dataclass
class Probe:
    """What the checks read of this machine; each field can be replaced (tests build broken environments)."""

    version: Callable[[str], str | None] = provenance.installed_version
    requires: Callable[[], list[str]] = _requires
    requires_python: Callable[[], str] = _requires_python
    python_version: str = field(default_factory=platform.python_version)
    import_module: Callable[[str], Any] = importlib.import_module
    cuda: Callable[[], str] = _cuda
    hub_cache: Callable[[], Path] = _hub_cache
    get: Callable[[str, Mapping[str, str]], tuple[int, Any]] = _get
    which: Callable[[str], str | None] = shutil.which
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)
    installed: Callable[[], dict[str, str]] = installed_distributions
    lock: Path = LOCK
    plugins: Callable[[], list[Plugin]] = registered_plugins
    refused: Callable[[], dict[str, str]] = refused_benchmarks
    model_settings: Callable[[], list[Any]] = benchmark_model_settings
    finetune_models: Callable[[], dict[str, str]] = finetune_base_models


# ---- the checks ------------------------------------------------------------------------------------------------------


def check_python(probe: Probe) -> Iterator[Check]:
    needed = probe.requires_python()
    ok = SpecifierSet(needed).contains(probe.python_version, prereleases=True)
    yield Check("ok" if ok else "FAIL", "python", f"{probe.python_version} (scifig needs {needed or 'any'})")


def extras_of(requirement: Requirement) -> set[str]:
    """The extras a requirement belongs to (``{""}``: the core)."""
    marker = str(requirement.marker or "")
    found = set(re.findall(r"""extra\s*==\s*["']([\w-]+)["']""", marker))
    return found or {""}


def _applies(requirement: Requirement, python_version: str) -> bool:
    """Whether the requirement's marker holds here for some extra (platform and Python markers)."""
    if requirement.marker is None:
        return True
    return any(
        requirement.marker.evaluate({"extra": extra, "python_version": ".".join(python_version.split(".")[:2])})
        for extra in extras_of(requirement)
    )


def check_requirements(probe: Probe) -> Iterator[Check]:
    """Every installed requirement inside its range; core requirements installed; extras summarised."""
    in_range = 0
    absent: dict[str, list[str]] = {}
    for line in probe.requires():
        requirement = Requirement(line)
        if requirement.name == DISTRIBUTION or not _applies(requirement, probe.python_version):
            continue
        installed = probe.version(requirement.name)
        extras = extras_of(requirement)
        wanted = f'"{requirement.name}{requirement.specifier}"'
        if installed is None:
            if "" in extras:
                yield Check("FAIL", requirement.name, f"not installed (scifig needs it) — pip install {wanted}")
            else:
                for extra in extras:
                    absent.setdefault(extra, []).append(requirement.name)
        elif not requirement.specifier.contains(installed, prereleases=True):
            yield Check(
                "FAIL",
                requirement.name,
                f"{installed} is outside scifig's range {requirement.specifier} — pip install {wanted}",
            )
        else:
            in_range += 1
    yield Check("ok", "requirements", f"{in_range} installed requirement(s) of scifig inside their ranges")
    for extra, names in sorted(absent.items()):
        if extra != "all":
            yield Check(
                "note",
                f"extra {extra}",
                f'not installed ({", ".join(sorted(set(names)))}) — pip install "scifig[{extra}]" to use it',
            )


def check_frameworks(probe: Probe) -> Iterator[Check]:
    present = 0
    for label, distribution, extra, modules in FRAMEWORKS:
        installed = probe.version(distribution)
        if installed is None:
            yield Check("note", label, f'not installed — pip install "scifig[{extra}]"')
            continue
        present += 1
        failed = None
        for module in modules:
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    probe.import_module(module)  # quietly: VLMEvalKit logs an ERROR line when there is no .env
            except Exception as exc:  # any import failure is the finding
                failed = f"{distribution} {installed} is installed but `import {module}` fails: {exc!r:.200}"
                break
        if failed:
            yield Check("FAIL", label, f'{failed} — bash .ci/setup (the lock), or pip install "scifig[{extra}]"')
        else:
            yield Check("ok", label, f"{distribution} {installed}, imports")
    if present == 0:
        yield Check("FAIL", "framework", 'neither lmms-eval nor VLMEvalKit is installed — pip install "scifig[lmms]"')


def check_lmms_eval_patches(probe: Probe) -> Iterator[Check]:
    """The lmms-eval internals scifig patches (:mod:`scifig_tasks.lmms_eval.patches`) are there with the parameters
    it was verified against: a newer lmms-eval that changed one is named here, before a run fails on it."""
    if probe.version("lmms-eval") is None:
        return
    try:
        from scifig_tasks.lmms_eval import patches

        patches.check(patches.PATCHES)
    except CommandError as exc:
        yield Check("FAIL", "lmms-eval patches", str(exc))
        return
    except Exception:  # lmms-eval does not import: check_frameworks has said so
        return
    yield Check(
        "ok",
        "lmms-eval patches",
        f"the {len(patches.PATCHES)} patched targets are as verified on lmms-eval {patches.PINNED} "
        "(docs/lmms-eval-integration.md)",
    )


def check_torch(probe: Probe) -> Iterator[Check]:
    installed = probe.version("torch")
    if installed is None:
        yield Check("note", "torch", "not installed (API models and the judge need no torch)")
        return
    try:
        yield Check("ok", "torch", f"{installed}, {probe.cuda()}")
    except Exception as exc:
        yield Check("FAIL", "torch", f"{installed} is installed but does not load: {exc!r:.200}")


def check_data(probe: Probe) -> Iterator[Check]:
    from scifig_tasks.core import registry

    seen: set[str] = set()
    for name, source in registry.sources().items():
        if source.env_var in seen:
            continue
        seen.add(source.env_var)
        label = f"data {name.removesuffix('_mcq')}"
        local = source.local_path(probe.environ)
        built = f" (`{source.build_command}` builds it)" if source.build_command else ""
        if local is not None:
            where = f"{source.env_var}={probe.environ[source.env_var]}"
            if local.exists():
                yield Check("ok", label, _without_secrets(f"{where} (local)", probe.environ))
            else:
                missing = f"{where}: {local} does not exist — point it at the data{built}, or unset it"
                yield Check("FAIL", label, _without_secrets(missing, probe.environ))
        elif source.hub_path:
            yield hub_data_check(probe, label, source)
        elif source.default_data is not None:
            yield Check("ok", label, f"seeded set generated on first use ({source.env_var} overrides it)")
        else:
            yield Check("note", label, f"{source.env_var} is not set: its tasks need local data{built}")


def hub_data_check(probe: Probe, label: str, source: Any) -> Check:
    """A Hub source's line: the revision its data is loaded at (pinned, the setting's, or unpinned) and whether the
    Hub cache holds it."""
    from scifig_tasks.core.schema import UNPINNED

    revision = source.hub_revision(probe.environ)
    if revision != (None if source.revision == UNPINNED else source.revision):
        which = f"at revision {revision or 'main'} ({source.revision_var}; scores may differ from the pinned data)"
    elif revision is None:
        which = "unpinned (the newest revision, main)"
    else:
        which = f"at pinned revision {revision[:12]}"
    from scifig_tasks.core.data import cached_snapshot

    snapshot = cached_snapshot(source.hub_path, revision, probe.hub_cache())
    commit = snapshot.name if snapshot is not None else None
    if commit is None:
        state = f"not cached: downloaded on first use, or set {source.env_var}=DIR"
        return Check("note", label, f"Hub {source.hub_path} {which}, {state}")
    held = "cached" if commit == revision else f"cached as {commit[:12]}"
    return Check("ok", label, f"Hub {source.hub_path} {which}, {held}")


def _offline(environ: Mapping[str, str]) -> str | None:
    """The variable that keeps the Hugging Face libraries offline in ``environ`` (as huggingface_hub reads them)."""
    from huggingface_hub.constants import ENV_VARS_TRUE_VALUES

    return next(
        (
            name
            for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
            if environ.get(name, "").upper() in ENV_VARS_TRUE_VALUES
        ),
        None,
    )


def check_hub(probe: Probe) -> Iterator[Check]:
    """Whether runs may download from the Hugging Face Hub, and the cache they read (no request is made)."""
    variable = _offline(probe.environ)
    if variable is not None:
        how = f"{variable} is set: nothing is downloaded, models and data are read from this cache only"
    else:
        how = "models and data not in it are downloaded on first use; without network, set HF_HUB_OFFLINE=1"
    yield Check("ok", "hub cache", f"{probe.hub_cache()} ({how})")


def _model_line(name: str, model: str, probe: Probe, used: str, local_copy: str) -> Check:
    """One model fetched at run time, from cache lookups only (:func:`scifig_tasks.core.hub_cache.model_state`): in
    the cache or a folder, ok; not cached, a note with the ways out (it is downloaded on first use); a folder that does
    not exist, a failure."""
    from scifig_tasks.core.hub_cache import TRANSFORMERS_FILES, HubModel, download_command, model_state

    cache = probe.hub_cache()
    state = model_state(model, cache)
    if state == "folder":
        return Check("ok", name, f"local folder {model}, {used}")
    if state == "no folder":
        return Check("FAIL", name, f"folder {model} does not exist, {used} — {local_copy}")
    if state == "cached":
        return Check("ok", name, f"{model} in the Hugging Face cache ({cache}), {used}")
    download = download_command(HubModel(model, TRANSFORMERS_FILES, model))
    missing = f"{model} not in the Hugging Face cache ({cache}), {used}"
    offline = _offline(probe.environ)
    if offline is not None:
        way_out = f"download once with network ({offline} unset: {download}), or {local_copy}"
        return Check("note", name, f"{missing}: {offline} is set, so it stops at once — {way_out}")
    way_out = f"to run offline, download once with network ({download}) or {local_copy}, then set HF_HUB_OFFLINE=1"
    return Check("note", name, f"{missing}: downloaded on first use — {way_out}")


def check_models(probe: Probe) -> Iterator[Check]:
    """The models scifig fetches from the Hub at run time, looked up in the local cache only (no model is loaded, no
    request made): each benchmark setting naming one (BERTScore's), then the base model of each packaged fine-tuning
    config. The commands that load them stop at once, in one line, when one cannot be had
    (:mod:`scifig_tasks.core.hub_cache`)."""
    for setting in probe.model_settings():
        value = probe.environ.get(setting.name) or setting.default
        yield _model_line(
            f"model {setting.label}",
            os.path.expanduser(value),
            probe,
            f"for {setting.needed_by} ({setting.name})",
            f"set {setting.name} to a local copy (a model folder)",
        )
    for config, model in probe.finetune_models().items():
        yield _model_line(
            "model finetune",
            model,
            probe,
            f"base model of scifig finetune --config {config}",
            "point a copy of the config's model: at a local copy (a model folder)",
        )


def check_java(probe: Probe) -> Iterator[Check]:
    """Java runs pycocoevalcap's jars (METEOR 1.5 and the PTB tokenizer, which CIDEr reads), shipped in the wheel:
    nothing is downloaded, but without ``java`` those caption metrics are unavailable."""
    found = probe.which("java")
    if found:
        yield Check("ok", "java", f"{found} (METEOR and CIDEr of caption metrics run pycocoevalcap's jars)")
    else:
        yield Check(
            "note",
            "java",
            "not found: METEOR and CIDEr of caption metrics are unavailable without it — install a Java runtime "
            "(e.g. apt install default-jre-headless)",
        )


def check_settings(probe: Probe) -> Iterator[Check]:
    """The settings of the probe's environment (:mod:`scifig_tasks.core.settings`): a value that does not parse
    fails, an unknown ``SCIFIG_*`` variable or a deprecated one in use is a note; the table is ``scifig config``'s."""
    from scifig_tasks.commands.config import listed, problems
    from scifig_tasks.core.settings import Settings, lookup

    given = Settings.from_environment(probe.environ, warn=False)
    for line in problems(given, probe.environ):
        bad = any(line == error for error in given.errors.values())
        yield Check("FAIL" if bad else "note", "settings", _without_secrets(line, probe.environ))
    for name in given.raw:
        if lookup(name).deprecated:
            yield Check("note", "settings", f"{name} is deprecated: use {lookup(name).deprecated} instead")
    if not given.errors:
        yield Check("ok", "settings", f"{len(given.raw)} of {len(listed())} set (`scifig config` shows them all)")


def check_plugins(probe: Probe) -> Iterator[Check]:
    """One line per benchmark a plugin adds (its distribution and task folder), and one failing line per benchmark
    the registry left out (its refusal: package, the part that is wrong, the fix). Nothing when there are none."""
    for name, reason in probe.refused().items():
        yield Check("FAIL", f"plugin {name}", reason)
    for plugin in probe.plugins():
        settings = f"; settings {', '.join(plugin.settings)}" if plugin.settings else ""
        yield Check("ok", f"plugin {plugin.benchmark}", f"{plugin.package}, task folder {plugin.task_folder}{settings}")


def check_judge(probe: Probe) -> Iterator[Check]:
    from scifig_tasks.core.judge import JudgeConfig, endpoint_host

    try:
        config = JudgeConfig.from_env(probe.environ)
    except ValueError as exc:
        yield Check("FAIL", "judge", f"configuration not usable: {_without_secrets(str(exc), probe.environ)}")
        return
    if config is None:
        yield Check(
            "note",
            "judge",
            "not configured: rules only (SCIFIG_JUDGE=<preset>, or SCIFIG_JUDGE_BASE_URL and SCIFIG_JUDGE_MODEL)",
        )
        return
    where = f"{config.model} at {endpoint_host(config.base_url)}"
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    try:
        status, body = probe.get(f"{config.base_url}/models", headers)
    except Exception as exc:
        reason = _without_secrets(f"{type(exc).__name__}: {exc}", probe.environ)
        yield Check(
            "FAIL", "judge", f"{where} is not reachable ({reason:.200}) — start it or fix SCIFIG_JUDGE_BASE_URL"
        )
        return
    if status in (401, 403):
        yield Check("FAIL", "judge", f"{where} refused the API key (HTTP {status}) — check SCIFIG_JUDGE_API_KEY")
    elif status >= 500:
        yield Check("FAIL", "judge", f"{where} answers HTTP {status} — the server is failing")
    else:
        models = [item.get("id") for item in body.get("data", [])] if isinstance(body, dict) else []
        if models and config.model not in models:
            yield Check("FAIL", "judge", f"{where} answers (HTTP {status}), but its model list lacks {config.model}")
        else:
            yield Check("ok", "judge", f"{where} answers (HTTP {status}{', model listed' if models else ''})")


def check_browser(probe: Probe) -> Iterator[Check]:
    found = next((path for name in BROWSERS if (path := probe.which(name))), None)
    if found:
        yield Check("ok", "chromium", f"{found} (the report tests render HTML in it)")
    else:
        yield Check("note", "chromium", "not found: only the report tests need it (bash .ci/chromium installs it)")


def check_lock(probe: Probe) -> Iterator[Check]:
    """From a checkout: whether this environment is the tested one (``.ci/requirements.lock``)."""
    if not probe.lock.is_file():
        return
    locked = locked_versions(probe.lock.read_text(encoding="utf-8"))
    have = probe.installed()
    differ = [
        f"{name} {have.get(name, 'absent')} (lock {locked.get(name, 'absent')})"
        for name in sorted(set(locked) | set(have))
        if have.get(name) != locked.get(name)
    ]
    if not differ:
        yield Check("ok", "lock", f"this environment is .ci/requirements.lock ({len(locked)} distributions)")
    else:
        shown = ", ".join(differ[:4]) + (f" and {len(differ) - 4} more" if len(differ) > 4 else "")
        yield Check(
            "note",
            "lock",
            f"{len(differ)} distribution(s) differ from the tested lock: {shown} — bash .ci/setup restores it",
        )


CHECKS = (
    check_python,
    check_requirements,
    check_lock,
    check_frameworks,
    check_lmms_eval_patches,
    check_torch,
    check_settings,
    check_plugins,
    check_hub,
    check_data,
    check_models,
    check_java,
    check_judge,
    check_browser,
)


def _without_secrets(text: str, environ: Mapping[str, str]) -> str:
    """``text`` as doctor may print it: the environment's secrets replaced by labels, then any credential left by its
    shape (:func:`scifig_tasks.core.secrets.mask_credentials`, as ``scifig config`` shows a setting)."""
    from scifig_tasks.core.secrets import mask_credentials, secrets_of

    return mask_credentials(text, secrets_of(environ))


def run_checks(probe: Probe | None = None) -> list[Check]:
    probe = probe or Probe()
    return [found for check in CHECKS for found in check(probe)]


def render(checks: list[Check]) -> str:
    commit, modified = provenance.checkout()
    origin = f"checkout {commit[:12]}{', modified' if modified else ''}" if commit else "installed package"
    lines = [f"scifig doctor — scifig {provenance.scifig_version()} ({origin})"]
    width = max(len(check.name) for check in checks)
    lines += [f"{check.status:<4}  {check.name:<{width}}  {check.detail}" for check in checks]
    problems = sum(check.status == "FAIL" for check in checks)
    lines.append(f"{problems} problem(s)" if problems else "no problems")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    checks = run_checks()
    print(render(checks))
    return 1 if any(check.status == "FAIL" for check in checks) else 0


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "doctor",
        help=HELP["doctor"],
        description=(
            "One screen of checks: Python; scifig's requirements inside their ranges (known-bad releases such as "
            "filelock 4 included); lmms-eval and VLMEvalKit importable; torch and CUDA; the benchmark plugins "
            "(distribution, task folder, or why one is left out); the Hugging Face cache and whether runs are "
            "offline; each benchmark's data source; each model fetched at run time (BERTScore's, the fine-tuning base "
            "models: in the cache or not, and the way out, from cache lookups only); Java for METEOR and CIDEr; the "
            "LLM judge configured and reachable (one request; no key is printed); Chromium for the report tests. "
            "Exit status 1 when a check fails."
        ),
        epilog="example:\n  scifig doctor",
    )
    parser.set_defaults(handler=run)
