"""Every setting scifig reads from the environment: one name, one type, one documented default, one place it is read.

Declared once, read once into a frozen value; a bad value is an error of that setting alone. Manual:
docs/protocols.md, 'Settings from the environment'.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar

from scifig_tasks.core.deprecation import renamed

T = TypeVar("T")
Source = Literal["default", "environment", "command line"]
PREFIX = "SCIFIG_"

OFF_WORDS = frozenset({"off", "0", "false", "no", "none", "disabled"})
"""Values of ``SCIFIG_JUDGE`` that switch the judge off."""
NO_PRESET_WORDS = frozenset({"", "on", "1", "true", "yes"})
"""Values of ``SCIFIG_JUDGE`` that name no preset (the endpoint comes from the ``SCIFIG_JUDGE_*`` variables)."""


class SettingError(ValueError):
    """A setting's value that does not parse: one line naming the variable, the value and what it accepts."""


# --- parsers: each returns the typed value or raises ValueError with what the setting accepts ----------------------


def text(raw: str) -> str:
    return raw


def path(raw: str) -> Path:
    return Path(raw).expanduser()


def integer(low: int | None = None) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = int(raw)
        if low is not None and value < low:
            raise ValueError
        return value

    return parse


def number(low: float, high: float | None = None, low_open: bool = False) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        value = float(raw)
        if not (value > low if low_open else value >= low) or (high is not None and value > high):
            raise ValueError
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError
        return value

    return parse


def choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.lower()
        if value not in choices:
            raise ValueError
        return value

    return parse


def subset(raw: str) -> int | None:
    """A subset size (an integer >= 1), or ``all`` (``None``: every sample)."""
    return None if raw.lower() == "all" else integer(1)(raw)


# --- declarations ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One setting: its variable, how its text is read, its default and what it is for."""

    name: str
    parse: Callable[[str], T] = field(repr=False)
    default: T
    doc: str
    accepts: str
    """What a valid value is, for the one-line error (``an integer >= 1``, ``one of default, paper``)."""
    group: str
    secret: bool = False
    deprecated: str = ""
    """Non-empty for a deprecated setting: what replaces it."""
    shown_default: str = ""
    """The default as documented when it is not a plain value (``the preset's, else 8``)."""

    def read(self, raw: str) -> T:
        """``raw`` as this setting's type; :class:`SettingError` naming the variable and what it accepts."""
        try:
            return self.parse(raw)
        except (ValueError, TypeError):
            raise SettingError(f"{self.name}={raw!r}: set {self.accepts}") from None

    def describe_default(self) -> str:
        if self.shown_default:
            return self.shown_default
        return "unset" if self.default is None else str(self.default)


DECLARED: dict[str, Setting[Any]] = {}
"""Every setting, by variable name, in the order ``scifig config`` lists them."""


def declare(
    name: str,
    parse: Callable[[str], T],
    default: T,
    doc: str,
    accepts: str,
    group: str,
    *,
    secret: bool = False,
    deprecated: str = "",
    shown_default: str = "",
) -> Setting[T]:
    """Declare a setting (once: a second declaration of a name is a programming error)."""
    if name in DECLARED:
        raise RuntimeError(f"setting {name} declared twice")
    setting = Setting(name, parse, default, doc, accepts, group, secret, deprecated, shown_default)
    DECLARED[name] = setting
    return setting


DATA_VARIABLE = re.compile(rf"^{PREFIX}[A-Z][A-Z0-9_]*_DATA$")
"""The local-data family: the ``env_var`` of every benchmark data source (:class:`scifig_tasks.core.schema
.BenchmarkSource`) is ``SCIFIG_<BENCHMARK>[_<PART>]_DATA`` (``SCIFIG_GRAB_DATA``, ``SCIFIG_PLOT_TWIST_CHARTQA_DATA``)
and names a path. It is a setting without a declaration of its own, so a benchmark an installed package registers has
its data setting too (``scifig config`` lists the registered ones); a name of the family whose benchmark is not
registered (a typo of a benchmark name) is an unknown variable, like any other."""
BENCHMARKS_GROUP = "scifig.benchmarks"
"""The entry-point group benchmarks register under (:mod:`scifig_tasks.core.registry`)."""


@functools.cache
def benchmark_prefixes() -> tuple[str, ...]:
    """``SCIFIG_<NAME>_`` for every registered benchmark, read from the entry points' names alone."""
    import importlib.metadata

    names = {point.name for point in importlib.metadata.entry_points(group=BENCHMARKS_GROUP)}
    return tuple(f"{PREFIX}{name.upper()}_" for name in sorted(names))


def is_data_variable(name: str) -> bool:
    """Whether ``name`` is the local-data setting of a registered benchmark (:data:`DATA_VARIABLE`)."""
    return bool(DATA_VARIABLE.match(name)) and name.startswith(benchmark_prefixes())


@functools.cache
def data_setting(name: str) -> Setting[Path | None]:
    """The setting of local-data variable ``name`` (one of the :data:`DATA_VARIABLE` family)."""
    return Setting(name, path, None, "local data of a benchmark source", _PATH, "data", shown_default="unset")


def revision_setting(name: str, title: str) -> Setting[str | None]:
    """The setting naming the Hub revision of a benchmark source to load instead of its pinned one (a source's
    ``revision_var``, :class:`scifig_tasks.core.schema.BenchmarkSource`)."""
    return Setting(
        name,
        text,
        None,
        f"revision of {title}'s Hub dataset to load instead of its pinned one (main: the newest)",
        "a branch, tag or commit of the dataset",
        "data",
        shown_default="the pinned revision",
    )


def deprecated_protocol(benchmark: str) -> Setting[str | None]:
    """``SCIFIG_<BENCHMARK>_PROTOCOL``, the deprecated per-benchmark protocol switch of a benchmark that had one
    (:mod:`scifig_tasks.core.scoring_protocol`; the task name chooses the protocol)."""
    return Setting(
        f"{PREFIX}{benchmark.upper()}_PROTOCOL",
        choice(*_PROTOCOLS),
        None,
        f"scoring protocol of the {benchmark} tasks",
        "one of default, paper",
        "deprecated",
        deprecated=_INSTEAD,
    )


_declarers: list[Callable[[], Mapping[str, Setting[Any]]]] = []


def declared_by(declarer: Callable[[], Mapping[str, Setting[Any]]]) -> None:
    """Add ``declarer``, a function naming more settings: the benchmark registry
    (:func:`scifig_tasks.core.registry.declared_settings`) adds the settings the registered benchmarks declare when
    it is imported, which ``scifig_tasks.core`` does first (this module knows no benchmark)."""
    if declarer not in _declarers:
        _declarers.append(declarer)


def benchmark_settings() -> dict[str, Setting[Any]]:
    """The settings the registered benchmarks declare, by name (:func:`declared_by`): each description's own and
    the revision setting of each of its Hub sources."""
    found: dict[str, Setting[Any]] = {}
    for declarer in _declarers:
        found |= declarer()
    return found


def lookup(name: str) -> Setting[Any]:
    """The setting called ``name``: a declared one, one a registered benchmark declares, or one of the local-data
    family; ``KeyError`` otherwise."""
    found = DECLARED.get(name)
    if found is not None:
        return found
    if name.startswith(benchmark_prefixes()):
        found = benchmark_settings().get(name)
        if found is not None:
            return found
    if is_data_variable(name):
        return data_setting(name)
    raise KeyError(f"{name} is not a scifig setting")


def is_setting(name: str) -> bool:
    """Whether ``name`` is a scifig setting (:func:`lookup` finds it)."""
    try:
        lookup(name)
    except KeyError:
        return False
    return True


_TEXT = "a non-empty string"
_PATH = "a path"

# the LLM judge (scifig_tasks.core.judge)
JUDGE = declare(
    "SCIFIG_JUDGE",
    text,
    "",
    "judge preset (a name in model_configs/judges or a YAML path); off disables the judge",
    "a preset name, a YAML path or off",
    "judge",
    shown_default="unset: the SCIFIG_JUDGE_* endpoint",
)
JUDGE_BASE_URL: Setting[str | None] = declare(
    "SCIFIG_JUDGE_BASE_URL",
    text,
    None,
    "judge endpoint, an OpenAI-compatible base URL",
    "an http(s) URL",
    "judge",
    shown_default="the preset's, else OPENAI_API_BASE",
)
JUDGE_MODEL: Setting[str | None] = declare(
    "SCIFIG_JUDGE_MODEL", text, None, "judge model name", _TEXT, "judge", shown_default="the preset's"
)
JUDGE_API_KEY: Setting[str | None] = declare(
    "SCIFIG_JUDGE_API_KEY",
    text,
    None,
    "judge API key (never printed)",
    _TEXT,
    "judge",
    secret=True,
    shown_default="the preset's api_key_env, else OPENAI_API_KEY",
)
JUDGE_MAX_CONCURRENCY = declare(
    "SCIFIG_JUDGE_MAX_CONCURRENCY",
    integer(1),
    8,
    "judge requests in flight at once",
    "an integer >= 1",
    "judge",
    shown_default="the preset's, else 8",
)
JUDGE_TIMEOUT_S = declare(
    "SCIFIG_JUDGE_TIMEOUT_S",
    number(0.0, low_open=True),
    60.0,
    "seconds a judge request may take",
    "a number of seconds > 0",
    "judge",
    shown_default="the preset's, else 60",
)
JUDGE_MAX_RETRIES = declare(
    "SCIFIG_JUDGE_MAX_RETRIES",
    integer(0),
    5,
    "retries of a failed judge request",
    "an integer >= 0",
    "judge",
    shown_default="the preset's, else 5",
)
JUDGE_MAX_TOKENS: Setting[int | None] = declare(
    "SCIFIG_JUDGE_MAX_TOKENS",
    integer(1),
    None,
    "judge reply length limit",
    "an integer >= 1",
    "judge",
    shown_default="the preset's, else each prompt's own",
)
JUDGE_CACHE: Setting[Path | None] = declare(
    "SCIFIG_JUDGE_CACHE",
    path,
    None,
    "judge reply cache folder",
    _PATH,
    "judge",
    shown_default="$XDG_CACHE_HOME/scifig/judge",
)
JUDGE_AUDIT = declare(
    "SCIFIG_JUDGE_AUDIT",
    number(0.0, 1.0),
    0.05,
    "share of rule-resolved answers also sent to the judge",
    "a share between 0 and 1 (0 switches the audit off)",
    "judge",
)
JUDGE_AUDIT_SEED = declare("SCIFIG_JUDGE_AUDIT_SEED", integer(), 0, "seed of the audit's sample", "an integer", "judge")
JUDGE_PRICE_PER_MILLION_INPUT: Setting[float | None] = declare(
    "SCIFIG_JUDGE_PRICE_PER_MILLION_INPUT",
    number(0.0),
    None,
    "judge price of a million prompt tokens (with _OUTPUT: the run's judge cost)",
    "a number >= 0",
    "judge",
    shown_default="the preset's, else none (no cost shown)",
)
JUDGE_PRICE_PER_MILLION_OUTPUT: Setting[float | None] = declare(
    "SCIFIG_JUDGE_PRICE_PER_MILLION_OUTPUT",
    number(0.0),
    None,
    "judge price of a million completion tokens",
    "a number >= 0",
    "judge",
    shown_default="the preset's, else none (no cost shown)",
)

# local data: every benchmark source's SCIFIG_<SOURCE>_DATA is a setting of the data family (data_setting)
# a benchmark's own settings (its sources' revisions, its options) are declared by its description:
# benchmark_settings()

# model presets (model_configs/models: endpoint.base_url_env)
ANTHROPIC_BASE_URL: Setting[str | None] = declare(
    "SCIFIG_ANTHROPIC_BASE_URL", text, None, "endpoint of the claude-3.5-sonnet preset", "an http(s) URL", "models"
)

# deprecated: the task name chooses the protocol (scifig_tasks.core.scoring_protocol reads these)
_PROTOCOLS = ("default", "paper")
_INSTEAD = "the task name (the _paper task)"
PROTOCOL: Setting[str | None] = declare(
    "SCIFIG_PROTOCOL",
    choice(*_PROTOCOLS),
    None,
    "scoring protocol of every plain-name task",
    "one of default, paper",
    "deprecated",
    deprecated=_INSTEAD,
)
# the installer (.ci/setup), declared so that an exported value is not taken for a misspelt setting
INSTALL_PYTHON: Setting[str | None] = declare(
    "SCIFIG_PYTHON",
    text,
    None,
    "Python interpreter .ci/setup installs into",
    "a command or path",
    "install",
    shown_default="python3.11, else python3",
)

# conventional variables read as the judge's documented fallbacks
OPENAI_API_BASE: Setting[str | None] = declare(
    "OPENAI_API_BASE", text, None, "fallback of SCIFIG_JUDGE_BASE_URL (no preset)", "an http(s) URL", "fallback"
)
OPENAI_API_KEY: Setting[str | None] = declare(
    "OPENAI_API_KEY", text, None, "fallback of SCIFIG_JUDGE_API_KEY (no preset)", _TEXT, "fallback", secret=True
)
XDG_CACHE_HOME: Setting[Path | None] = declare(
    "XDG_CACHE_HOME", path, None, "base of the judge cache folder", _PATH, "fallback", shown_default="~/.cache"
)


# --- the value -------------------------------------------------------------------------------------------------------


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, eq=False)
class Settings:
    """The effective settings: a value per declared setting, where it came from, and the values that do not parse.

    Build it with :meth:`from_environment` (or :meth:`defaults`); read it with :meth:`get`.
    """

    raw: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The text of every setting that was given (environment or command line), secrets included: never print it."""
    sources: Mapping[str, Source] = field(default_factory=dict, repr=False)
    """Where each given setting came from; a setting absent here has its default."""
    values: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The parsed value of every given setting that parses."""
    errors: Mapping[str, str] = field(default_factory=dict, repr=False)
    """The one-line error of every given setting that does not parse."""
    credentials: Mapping[str, str | None] = field(default_factory=dict, repr=False)
    """The key variable a judge preset names (``api_key_env``) and its value, captured with the environment."""

    def __post_init__(self) -> None:
        for name in ("raw", "sources", "values", "errors", "credentials"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))

    @classmethod
    def defaults(cls) -> Settings:
        """Every setting at its default: what a test or a notebook starts from (no environment read)."""
        return cls()

    @classmethod
    def from_environment(
        cls,
        environ: Mapping[str, str] | None = None,
        overrides: Mapping[str, str | None] | None = None,
        *,
        warn: bool = True,
    ) -> Settings:
        """The settings of ``environ`` (the process environment when ``None``), then ``overrides`` (a command's
        options: variable name to text, ``None`` for an option not given); unknown ``SCIFIG_*`` variables warn."""
        env = os.environ if environ is None else environ
        given: dict[str, tuple[str, Source]] = {}
        family = [name for name in env if name.startswith(benchmark_prefixes()) and name not in DECLARED]
        family = [name for name in family if is_setting(name)]
        for name in [*DECLARED, *family]:
            text = env.get(name, "").strip()
            if text:
                given[name] = (text, "environment")
        for name, text in (overrides or {}).items():
            lookup(name)
            if text is not None and str(text).strip():
                given[name] = (str(text).strip(), "command line")
        values: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for name, (text, _) in given.items():
            try:
                values[name] = lookup(name).read(text)
            except SettingError as exc:
                errors[name] = str(exc)
        if warn:
            warn_unknown(env)
        return cls(
            raw={name: text for name, (text, _) in given.items()},
            sources={name: source for name, (_, source) in given.items()},
            values=values,
            errors=errors,
            credentials=_preset_credentials(values.get(JUDGE.name, ""), env),
        )

    def with_values(self, values: Mapping[str, Any], source: Source = "command line") -> Settings:
        """A copy with typed ``values`` (variable name to value; ``None`` puts a setting back to its default): how
        a caller holding values, not text (a command's parsed options, a notebook), sets them."""
        raw, sources, parsed, errors = dict(self.raw), dict(self.sources), dict(self.values), dict(self.errors)
        for name, value in values.items():
            lookup(name)
            errors.pop(name, None)
            if value is None:
                for mapping in (raw, sources, parsed):
                    mapping.pop(name, None)
                continue
            raw[name], sources[name], parsed[name] = str(value), source, value
        return Settings(raw, sources, parsed, errors, self.credentials)

    def get(self, setting: Setting[T] | str) -> T:
        """The setting's value (its default when not given); :class:`SettingError` when its text does not parse."""
        declared = lookup(setting) if isinstance(setting, str) else setting
        if declared.name in self.errors:
            raise SettingError(self.errors[declared.name])
        if declared.name in self.values:
            return self.values[declared.name]
        return declared.default

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def source(self, setting: Setting[Any] | str) -> Source:
        """Where the setting's value came from."""
        name = setting if isinstance(setting, str) else setting.name
        return self.sources.get(name, "default")

    def given(self, setting: Setting[Any] | str) -> bool:
        """Whether the setting was set (environment or command line) rather than left at its default."""
        return self.source(setting) != "default"

    def credential(self, variable: str) -> str | None:
        """The value of a key variable a judge preset names: a declared fallback, else the one captured with the
        environment (``None`` when unset or not captured)."""
        if variable in DECLARED:
            value = self.get(variable)
            return None if value is None else str(value)
        return self.credentials.get(variable)

    def check(self) -> None:
        """Raise the first setting error, if any (a command that wants every setting valid before it starts)."""
        for message in self.errors.values():
            raise SettingError(message)

    def shown(self, setting: Setting[Any] | str) -> str:
        """The value as it may be printed: secrets as ``<set>`` / ``<unset>``, an unset value as ``unset``, any other
        value with the credentials in it masked (:meth:`masked`: a URL's ``user:password@`` shown as a label)."""
        declared = lookup(setting) if isinstance(setting, str) else setting
        if declared.secret:
            return "<set>" if declared.name in self.raw else "<unset>"
        if declared.name in self.errors:
            return f"{self.masked(self.raw[declared.name])!r} (invalid)"
        if declared.name in self.raw:
            return self.masked(self.raw[declared.name])
        return declared.describe_default()

    def masked(self, text: str) -> str:
        """``text`` as it may be printed (a value, an error quoting one), by the rule every printed setting follows
        (:func:`scifig_tasks.core.secrets.mask_credentials`): the value of a secret setting given replaced by its
        name (``<SCIFIG_JUDGE_API_KEY>``), then every credential recognised by its shape replaced by
        ``<credential>`` (a URL's ``user:password@``: ``http://<credential>@host/v1``, one word, as the table keeps a
        URL)."""
        from scifig_tasks.core.secrets import MIN_SECRET_CHARS, mask_credentials

        keys = {
            value: f"<{name}>"
            for name, value in self.raw.items()
            if lookup(name).secret and len(value) >= MIN_SECRET_CHARS
        }
        return mask_credentials(text, dict(sorted(keys.items(), key=lambda item: -len(item[0]))))

    def __repr__(self) -> str:
        given = ", ".join(f"{name}={self.shown(name)}" for name in self.raw)
        return f"Settings({given})"


def _preset_credentials(choice: str, environ: Mapping[str, str]) -> dict[str, str | None]:
    """The key variable the chosen judge preset names, with its value (empty when there is no loadable preset; the
    judge reports a bad preset when it is built)."""
    if choice.strip().lower() in OFF_WORDS | NO_PRESET_WORDS:
        return {}
    from scifig_tasks.core.judge_presets import load_preset

    try:
        variable = load_preset(choice.strip())["api_key_env"]
    except (ValueError, OSError):
        return {}
    return {variable: environ.get(variable) or None}


# --- unknown variables -----------------------------------------------------------------------------------------------

_warned: set[str] = set()


def unknown(environ: Mapping[str, str]) -> list[tuple[str, str | None]]:
    """``SCIFIG_*`` variables of ``environ`` that are not settings, each with the closest declared name (or None)."""
    names = [name for name in DECLARED if name.startswith(PREFIX)]
    names += [f"{prefix}DATA" for prefix in benchmark_prefixes()]
    found = []
    for variable in sorted(environ):
        if variable.startswith(PREFIX) and not is_setting(variable):
            if variable.startswith(benchmark_prefixes()):
                names += [name for name in benchmark_settings() if name not in names]
            close = difflib.get_close_matches(variable, names, n=1, cutoff=0.75)
            found.append((variable, close[0] if close else None))
    return found


def unknown_message(variable: str, suggestion: str | None, prefix: str = "scifig: ", listing: bool = True) -> str:
    """The one warning line for an unknown variable (``listing``: point to ``scifig config`` when nothing is close)."""
    hint = f" (did you mean {suggestion}?)" if suggestion else "; `scifig config` lists the settings" if listing else ""
    return f"{prefix}{variable} is not a scifig setting and is ignored{hint}"


def warn_unknown(environ: Mapping[str, str]) -> None:
    """One line on stderr per unknown ``SCIFIG_*`` variable, once per process."""
    for variable, suggestion in unknown(environ):
        if variable not in _warned:
            _warned.add(variable)
            print(unknown_message(variable, suggestion), file=sys.stderr)


# --- the process's value ---------------------------------------------------------------------------------------------

_lock = threading.Lock()
_cached: tuple[tuple[tuple[str, str], ...], Settings] | None = None
_installed: list[Settings] = []


_OTHERS = tuple(name for name in DECLARED if not name.startswith(PREFIX))


def _fingerprint(environ: Mapping[str, str], credentials: Mapping[str, str | None]) -> tuple[tuple[str, str], ...]:
    """The environment's part that settings read: ``SCIFIG_*``, the declared fallbacks, captured key variables (in
    the environment's order: a reordering only costs a rebuild)."""
    read = [name for name in environ if name.startswith(PREFIX)]
    read += [name for name in (*_OTHERS, *credentials) if name in environ]
    return tuple((name, environ[name]) for name in read)


def current() -> Settings:
    """The process's settings: the value :func:`use` installed, else the environment's, built on first use and
    rebuilt only when the variables it reads change."""
    global _cached
    if _installed:
        return _installed[-1]
    environ = os.environ
    with _lock:
        if _cached is not None and _fingerprint(environ, _cached[1].credentials) == _cached[0]:
            return _cached[1]
        built = Settings.from_environment(environ)
        _cached = (_fingerprint(environ, built.credentials), built)
        return built


def process_secrets(extra: Iterable[str] = (), command_line: Iterable[str] = ()) -> dict[str, str]:
    """``secret -> label`` for every secret in the process environment, plus ``extra`` and the URL credentials and
    key assignments (``--model_args ...,api_key=VALUE``) of ``command_line``
    (:func:`scifig_tasks.core.secrets.secrets_of`): all variables, not only the ones scifig reads, so that a key
    scifig never uses is still masked in whatever it writes or prints (results, caches, logs, the terminal)."""
    from scifig_tasks.core.secrets import secrets_of

    return secrets_of(os.environ, extra, command_line)


def reset() -> None:
    """Forget the cached value (and values installed by :func:`use`): the next :func:`current` reads afresh."""
    global _cached
    with _lock:
        _cached = None
        _installed.clear()


@contextmanager
def use(settings: Settings) -> Iterator[Settings]:
    """Make ``settings`` the process's value inside the block (a command that parsed options, a test)."""
    _installed.append(settings)
    try:
        yield settings
    finally:
        _installed.remove(settings)


def chosen(given: Settings | Mapping[str, str] | None) -> Settings:
    """The settings a function was handed: a :class:`Settings` as is, a mapping read as an environment (no
    warnings), ``None`` the process's :func:`current` value."""
    if given is None:
        return current()
    if isinstance(given, Settings):
        return given
    return Settings.from_environment(given, warn=False)


__getattr__ = renamed(__name__, {"resolve": "chosen"})
