"""A small GRAB-format set built locally: real plots, exact ground truth, the published features.

It covers a few question types of each GRAB task with the spec's wording and precision sentences (see
``shared/spec/grab.md``): properties (gradient, y-intercept, point count), function (mean gradient of lines),
series (mean maximum value of noisy series) and transform (gradient of a line after listed operations). Every answer
is computed from the drawn parameters and rounded half away from zero. It is the offline default data of
``scifig demo`` and of the tests; the full generator lives beside it.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

INTEGER = " Give your answer as an integer."
ONE_DP = " Give your answer to 1 decimal place."
X_LIMITS = (-10.0, 10.0)


def round_half_away(value: float, places: int) -> str:
    """Round half away from zero to ``places`` decimals, printed with exactly that many (``-0`` becomes ``0``)."""
    quantum = Decimal(1).scaleb(-places)
    text = str(Decimal(repr(value)).quantize(quantum, rounding=ROUND_HALF_UP))
    return text[1:] if text.strip("-0.") == "" and text.startswith("-") else text


def _render(draw: Callable[[Any], None], dpi: int, size: tuple[float, float]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=size, dpi=dpi)
    try:
        draw(axes)
        axes.grid(True)
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png")
        return buffer.getvalue()
    finally:
        plt.close(figure)


def _lines(axes: Any, lines: list[tuple[int, int]]) -> None:
    xs = [X_LIMITS[0], X_LIMITS[1]]
    for gradient, intercept in lines:
        axes.plot(xs, [gradient * x + intercept for x in xs])
    axes.set_xlim(*X_LIMITS)
    axes.set_ylim(-60, 60)


def _properties(rng: random.Random, index: int) -> tuple[str, str, str, dict[str, Any], Callable[[Any], None]]:
    kind = index % 3
    if kind == 2:
        count = rng.randint(5, 30)
        points = [(rng.uniform(-9, 9), rng.uniform(-9, 9)) for _ in range(count)]
        question = "How many points are shown in the figure?" + INTEGER
        return question, str(count), "Counting", {"points": points}, lambda ax: ax.scatter(*zip(*points, strict=True))
    gradient, intercept = rng.randint(-5, 5), rng.randint(-9, 9)
    params = {"gradient": gradient, "intercept": intercept}
    if kind == 0:
        question, answer = "What is the value of the gradient of the function?" + INTEGER, str(gradient)
    else:
        question, answer = "What is the value of the y-intercept of the function?" + INTEGER, str(intercept)
    return question, answer, "Intercepts and Gradients", params, lambda ax: _lines(ax, [(gradient, intercept)])


def _function(rng: random.Random, complexity: int) -> tuple[str, str, str, dict[str, Any], Callable[[Any], None]]:
    lines = [(rng.randint(-5, 5), rng.randint(-9, 9)) for _ in range(complexity + 1)]
    mean = sum(gradient for gradient, _ in lines) / len(lines)
    sentence, places = (INTEGER, 0) if rng.random() < 0.6 else (ONE_DP, 1)
    question = "Estimate the mean gradient of the functions shown in the plot." + sentence
    params = {"lines": lines}
    return question, round_half_away(mean, places), "Intercepts and Gradients", params, lambda ax: _lines(ax, lines)


def _series(rng: random.Random, complexity: int) -> tuple[str, str, str, dict[str, Any], Callable[[Any], None]]:
    xs = list(range(-10, 11))
    series = [[round(rng.uniform(-8, 8) + rng.gauss(0, 1.5), 2) for _ in xs] for _ in range(complexity + 1)]
    mean_max = sum(max(values) for values in series) / len(series)
    question = "Estimate the mean maximum value of the data series shown in the plot." + ONE_DP

    def draw(ax: Any) -> None:
        for values in series:
            ax.plot(xs, values, marker="o")

    return question, round_half_away(mean_max, 1), "Extrema", {"x": xs, "series": series}, draw


_OPERATIONS: tuple[tuple[str, Callable[[float], float]], ...] = (
    ("reflection in the x-axis", lambda m: -m),
    ("reflection in the y-axis", lambda m: -m),
    ("scale by 2.0 in y", lambda m: 2 * m),
    ("scale by 0.5 in y", lambda m: m / 2),
    ("rotation by 180.0 degrees about the origin", lambda m: m),
)


def _transform(rng: random.Random, complexity: int) -> tuple[str, str, str, dict[str, Any], Callable[[Any], None]]:
    gradient, intercept = rng.randint(-5, 5), rng.randint(-9, 9)
    operations: list[str] = []
    value = float(gradient)
    for _ in range(complexity):
        if rng.random() < 0.4:
            name = f"translation by {rng.randint(-10, 10)} in {rng.choice('xy')}"
        else:
            name, apply = rng.choice(_OPERATIONS)
            value = apply(value)
        operations.append(name)
    sentence, places = (INTEGER, 0) if value == int(value) else (ONE_DP, 1)
    if operations:
        steps = "".join(f"{number}. {name};\n" for number, name in enumerate(operations, start=1))
        question = (
            "Estimate the gradient of the function shown in the plot after it has been transformed by the "
            f"following operations:\n{steps}{sentence.lstrip()}"
        )
    else:
        question = f"Estimate the gradient of the function shown in the plot.\n{sentence.lstrip()}"
    params = {"gradient": gradient, "intercept": intercept, "operations": operations}
    return (
        question,
        round_half_away(value, places),
        "Intercepts and Gradients",
        params,
        lambda ax: _lines(ax, [(gradient, intercept)]),
    )


_BUILDERS = {"properties": _properties, "function": _function, "series": _series, "transform": _transform}


def build_minimal_grab(
    out: Path, per_task: int = 10, seed: int = 0, dpi: int = 40, size: tuple[float, float] = (6.4, 4.8)
) -> Path:
    """Write ``out/GRAB.parquet`` (``4 * per_task`` questions) and return its path."""
    import datasets
    from tqdm import tqdm

    from scifig_tasks.core.sources import GRAB_FEATURES

    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    jobs = [(task, index) for task in _BUILDERS for index in range(per_task)]
    for task, index in tqdm(jobs, desc="GRAB (minimal) plots"):
        complexity = 0 if task == "properties" else index % 10
        question, answer, category, params, draw = _BUILDERS[task](rng, index if task == "properties" else complexity)
        pid = len(rows)
        rows.append(
            {
                "pid": pid,
                "question": question,
                "decoded_image": {"bytes": _render(draw, dpi, size), "path": None},
                "image": f"images/{pid}.png",
                "answer": answer,
                "task": task,
                "category": category,
                "complexity": complexity,
                "metadata": json.dumps(params),
            }
        )
    features = datasets.Features({**GRAB_FEATURES, "metadata": datasets.Value("string")})
    out.mkdir(parents=True, exist_ok=True)
    path = out / "GRAB.parquet"
    datasets.Dataset.from_list(rows, features=features).to_parquet(str(path))
    return path
