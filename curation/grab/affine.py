"""Transform operations of the GRAB transform task and their exact composition (GRAB paper §3: transforms listed in
order; the operation mix measured on the published set), composed as exact monomial affine maps.
Manual: docs/curation.md, "Transform task" (operations, exact composition).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

from curation.grab.curves import Piece, Polynomial

OperationKind = Literal[
    "rotation", "scale", "translation", "reflect_x_axis", "reflect_y_axis", "reflect_y_eq_x", "reflect_y_eq_minus_x",
    "reflect_x_eq", "reflect_y_eq",
]  # fmt: skip
KINDS: tuple[OperationKind, ...] = (
    "rotation",
    "scale",
    "translation",
    "reflect_x_axis",
    "reflect_y_axis",
    "reflect_y_eq_x",
    "reflect_y_eq_minus_x",
    "reflect_x_eq",
    "reflect_y_eq",
)
Family = Literal["rotation", "scale", "translation", "reflection"]
FAMILIES: tuple[Family, ...] = ("rotation", "scale", "translation", "reflection")
"""The four transform families of the paper ("rotations, translations, scales and reflections"), equally likely."""
REFLECTIONS: tuple[OperationKind, ...] = KINDS[3:]
"""The six reflection lines, equally likely within the reflection family."""
FAMILY_KINDS: dict[Family, OperationKind] = {"rotation": "rotation", "scale": "scale", "translation": "translation"}
ANGLES: tuple[str, ...] = ("0.0", "90.0", "180.0", "270.0")
SCALES: tuple[str, ...] = ("0.1", "0.5", "1.0", "2.0", "3.0", "5.0", "10.0")
SHIFTS: tuple[int, ...] = tuple(range(-10, 11))
AXES: tuple[str, ...] = ("x", "y")


@dataclass(frozen=True)
class Affine:
    """``x' = a x + b y + e``, ``y' = c x + d y + f`` with exact entries."""

    a: Fraction = Fraction(1)
    b: Fraction = Fraction(0)
    c: Fraction = Fraction(0)
    d: Fraction = Fraction(1)
    e: Fraction = Fraction(0)
    f: Fraction = Fraction(0)

    def then(self, other: Affine) -> Affine:
        """The map applying ``self`` first, then ``other``."""
        return Affine(
            a=other.a * self.a + other.b * self.c,
            b=other.a * self.b + other.b * self.d,
            c=other.c * self.a + other.d * self.c,
            d=other.c * self.b + other.d * self.d,
            e=other.a * self.e + other.b * self.f + other.e,
            f=other.c * self.e + other.d * self.f + other.f,
        )

    @property
    def swaps_axes(self) -> bool:
        if self.b == 0 and self.c == 0:
            return False
        if self.a == 0 and self.d == 0:
            return True
        raise ValueError(f"not a monomial affine map: {self}")

    def apply(self, points: np.ndarray) -> np.ndarray:
        x, y = points[:, 0], points[:, 1]
        return np.column_stack(
            (
                float(self.a) * x + float(self.b) * y + float(self.e),
                float(self.c) * x + float(self.d) * y + float(self.f),
            )
        )

    def box(self, x0: object, x1: object, y0: object, y1: object) -> tuple[object, object, object, object]:
        """Image of the box ``[x0, x1] x [y0, y1]``: ``(x_min, x_max, y_min, y_max)``."""
        corners = [(x, y) for x in (x0, x1) for y in (y0, y1)]
        xs = [self.a * x + self.b * y + self.e for x, y in corners]  # type: ignore[operator]
        ys = [self.c * x + self.d * y + self.f for x, y in corners]  # type: ignore[operator]
        return min(xs, key=float), max(xs, key=float), min(ys, key=float), max(ys, key=float)

    def piece(self, piece: Piece) -> Piece | None:
        """The transformed curve as a function of ``x'`` (``None`` when the image is not a function graph)."""
        if not self.swaps_axes:
            curve = piece.curve.affine(self.a, self.e, self.d, self.f)
            ends = sorted((self.a * piece.x0 + self.e, self.a * piece.x1 + self.e))
            return Piece.of(curve, ends[0], ends[1])
        curve = piece.curve
        if not isinstance(curve, Polynomial) or curve.degree != 1:
            return None
        slope, intercept = curve.trimmed
        if slope == 0:
            return None
        # x' = b (m x + q) + e and y' = c x + f, so x = (x' - e - b q) / (b m) and y' is linear in x'.
        inverse = Polynomial(
            (self.c / (self.b * slope), self.c * (-self.e - self.b * intercept) / (self.b * slope) + self.f)
        )
        ends = sorted(self.b * (slope * x + intercept) + self.e for x in (piece.x0, piece.x1))
        return Piece.of(inverse, ends[0], ends[1])


@dataclass(frozen=True)
class Operation:
    """One listed operation; ``value`` is the angle, scale factor, shift or line position (``None`` otherwise)."""

    kind: OperationKind
    value: str | int | None = None
    axis: str | None = None

    def text(self) -> str:
        """The operation as worded in the question."""
        match self.kind:
            case "rotation":
                return f"rotation by {self.value} degrees about the origin"
            case "scale":
                return f"scale by {self.value} in {self.axis}"
            case "translation":
                return f"translation by {self.value} in {self.axis}"
            case "reflect_x_axis":
                return "reflection in the x-axis"
            case "reflect_y_axis":
                return "reflection in the y-axis"
            case "reflect_y_eq_x":
                return "reflection in the line y=x"
            case "reflect_y_eq_minus_x":
                return "reflection in the line y=-x"
            case "reflect_x_eq":
                return f"reflection in the line x={self.value}"
            case "reflect_y_eq":
                return f"reflection in the line y={self.value}"
        raise ValueError(f"unknown operation {self.kind!r}")

    @property
    def family(self) -> Family:
        """``rotation``, ``scale``, ``translation`` or ``reflection`` (any of the six lines)."""
        return "reflection" if self.kind in REFLECTIONS else self.kind  # type: ignore[return-value]

    def to_params(self) -> dict[str, object]:
        return {"kind": self.kind, "value": self.value, "axis": self.axis}

    @classmethod
    def from_params(cls, params: dict[str, object]) -> Operation:
        value = params.get("value")
        return cls(params["kind"], value if isinstance(value, str | int) else None, params.get("axis"))  # type: ignore[arg-type]

    def affine(self) -> Affine:
        one, zero = Fraction(1), Fraction(0)
        match self.kind:
            case "rotation":
                quarter = {"0.0": 0, "90.0": 1, "180.0": 2, "270.0": 3}[str(self.value)]
                cos, sin = ((1, 0), (0, 1), (-1, 0), (0, -1))[quarter]
                return Affine(Fraction(cos), Fraction(-sin), Fraction(sin), Fraction(cos))
            case "scale":
                factor = Fraction(str(self.value))
                return Affine(a=factor) if self.axis == "x" else Affine(d=factor)
            case "translation":
                shift = Fraction(int(self.value))  # type: ignore[arg-type]
                return Affine(e=shift) if self.axis == "x" else Affine(f=shift)
            case "reflect_x_axis":
                return Affine(d=-one)
            case "reflect_y_axis":
                return Affine(a=-one)
            case "reflect_y_eq_x":
                return Affine(a=zero, b=one, c=one, d=zero)
            case "reflect_y_eq_minus_x":
                return Affine(a=zero, b=-one, c=-one, d=zero)
            case "reflect_x_eq":
                return Affine(a=-one, e=2 * Fraction(int(self.value)))  # type: ignore[arg-type]
            case "reflect_y_eq":
                return Affine(d=-one, f=2 * Fraction(int(self.value)))  # type: ignore[arg-type]
        raise ValueError(f"unknown operation {self.kind!r}")

    def apply(self, points: np.ndarray) -> np.ndarray:
        """Transform ``(n, 2)`` points with this operation's geometric formula (independent of :meth:`affine`)."""
        x, y = points[:, 0].astype(float), points[:, 1].astype(float)
        match self.kind:
            case "rotation":
                theta = math.radians(float(str(self.value)))
                return np.column_stack(
                    (x * math.cos(theta) - y * math.sin(theta), x * math.sin(theta) + y * math.cos(theta))
                )
            case "scale":
                factor = float(str(self.value))
                return np.column_stack((x * factor, y) if self.axis == "x" else (x, y * factor))
            case "translation":
                shift = float(self.value)  # type: ignore[arg-type]
                return np.column_stack((x + shift, y) if self.axis == "x" else (x, y + shift))
            case "reflect_x_axis":
                return np.column_stack((x, -y))
            case "reflect_y_axis":
                return np.column_stack((-x, y))
            case "reflect_y_eq_x":
                return np.column_stack((y, x))
            case "reflect_y_eq_minus_x":
                return np.column_stack((-y, -x))
            case "reflect_x_eq":
                return np.column_stack((2 * float(self.value) - x, y))  # type: ignore[arg-type]
            case "reflect_y_eq":
                return np.column_stack((x, 2 * float(self.value) - y))  # type: ignore[arg-type]
        raise ValueError(f"unknown operation {self.kind!r}")


def compose(operations: list[Operation]) -> Affine:
    """The single affine map of the operations applied in order."""
    total = Affine()
    for operation in operations:
        total = total.then(operation.affine())
    return total


def operation_of(family: Family, rng: random.Random) -> Operation:
    """One operation of ``family``: a reflection's line uniformly over the six, then the values uniformly."""
    kind = rng.choice(REFLECTIONS) if family == "reflection" else FAMILY_KINDS[family]
    if kind == "rotation":
        return Operation(kind, rng.choice(ANGLES))
    if kind == "scale":
        return Operation(kind, rng.choice(SCALES), rng.choice(AXES))
    if kind == "translation":
        return Operation(kind, rng.choice(SHIFTS), rng.choice(AXES))
    if kind in ("reflect_x_eq", "reflect_y_eq"):
        return Operation(kind, rng.choice(SHIFTS))
    return Operation(kind)


def random_operation(rng: random.Random) -> Operation:
    """One operation: its family drawn uniformly over :data:`FAMILIES`, then its parameters (:func:`operation_of`).

    The real set lists 348 rotations, 357 scales, 344 translations and 346 reflections; a uniform draw over the
    nine kinds would make two thirds of the operations reflections.
    """
    return operation_of(rng.choice(FAMILIES), rng)


def deal_families(rng: random.Random, steps: int, questions: int) -> list[tuple[Family, ...]]:
    """The families of ``steps`` operations for each of ``questions`` questions (the plan's ``slots`` of a
    complexity level, :class:`curation.grab.sampling.Sampler`): the ``questions x steps`` families
    cycle through :data:`FAMILIES` from a random start (so each family's count is within one of a quarter) and are
    shuffled over the questions and steps."""
    start = rng.randrange(len(FAMILIES))
    dealt = [FAMILIES[(start + index) % len(FAMILIES)] for index in range(questions * steps)]
    rng.shuffle(dealt)
    return [tuple(dealt[question * steps : (question + 1) * steps]) for question in range(questions)]
