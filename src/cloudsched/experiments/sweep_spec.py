"""Sweep specifications: reading, checking and expanding a sweep's YAML.

The format and the seeding rules are described in :mod:`cloudsched.experiments.sweep`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloudsched.errors import InputError, ParameterError
from cloudsched.experiments.kinds import KIND_TABLE, KINDS, PointContext
from cloudsched.io import read_yaml

__all__ = ["Run", "SweepSpec", "load_spec", "parse_spec"]


def _accepts(tp: Any, value: Any) -> bool:
    """Tell whether ``value`` fits the annotation ``tp`` (scalars, unions, sequences)."""
    if tp is Any:
        return True
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(tp))
    if tp is type(None):
        return value is None
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if tp is str:
        return isinstance(value, str)
    if origin is not None and isinstance(value, list):
        args = typing.get_args(tp)
        return all(_accepts(args[0], v) for v in value) if args else True
    return isinstance(value, dict | list | str | int | float)


@dataclass(frozen=True)
class Run:
    """One run of a sweep: its id, parameters, replication and seed words."""

    run_id: str
    params: dict[str, Any]
    replication: int
    spawn_key: tuple[int, ...]


@dataclass(frozen=True)
class SweepSpec:
    """A sweep specification (see :mod:`cloudsched.experiments.sweep`), checked when built.

    Building one checks the kind, seed, replication count, every parameter's name and type,
    the required parameters, and every point of the grid as its run would check it (nothing
    is run); a problem is one :class:`~cloudsched.errors.InputError` that names the key,
    prefixed by ``where`` (the spec file).
    """

    kind: str
    seed: int
    replications: int
    fixed: dict[str, Any]
    grid: dict[str, list[Any]]
    base_dir: str = "."
    where: str = field(default="spec", compare=False)

    def __post_init__(self) -> None:
        where, kind = self.where, self.kind
        if kind not in KINDS:
            raise InputError(where, f"'kind' must be one of {', '.join(KINDS)} (got {kind!r})")
        seed, reps = self.seed, self.replications
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= 2**62:
            # stored as int64 in every Parquet row (reproductions add small offsets)
            raise InputError(where, f"'seed' must be an integer in [0, 2^62] (got {seed!r})")
        if isinstance(reps, bool) or not isinstance(reps, int) or not 1 <= reps <= 100_000:
            raise InputError(
                where, f"'replications' must be an integer in [1, 100000] (got {reps!r})"
            )
        fixed, grid = self.fixed if self.fixed is not None else {}, self.grid
        if not isinstance(fixed, Mapping):
            raise InputError(where, "'fixed' must be a mapping of parameter: value")
        if not isinstance(grid, Mapping) or not grid:
            raise InputError(where, "'grid' must be a non-empty mapping of parameter: [values]")
        _check_grid(grid, where)
        runs = math.prod(len(v) for v in grid.values()) * reps
        if runs > MAX_RUNS:
            sizes = " x ".join(f"{len(v)} {k}" for k, v in grid.items())
            raise InputError(
                where,
                f"the grid makes {runs:,} runs ({sizes}"
                f"{f' x {reps} replications' if reps > 1 else ''}); a sweep holds "
                f"at most {MAX_RUNS:,}: split it",
            )
        _check_names(kind, fixed, grid, where)
        object.__setattr__(self, "fixed", dict(fixed))
        object.__setattr__(self, "grid", {k: list(v) for k, v in grid.items()})
        _dry_check(self, where)

    def points(self) -> Iterator[dict[str, Any]]:
        """Every grid point (fixed parameters included), keys of the grid in sorted order."""
        keys = sorted(self.grid)
        for values in itertools.product(*(self.grid[k] for k in keys)):
            yield {**self.fixed, **dict(zip(keys, values, strict=True))}

    def runs(self) -> list[Run]:
        """Every run: each point times each replication."""
        out = []
        for params in self.points():
            canon = json.dumps(params, sort_keys=True, default=str)
            digest = hashlib.sha256(canon.encode()).digest()
            words = (int.from_bytes(digest[:4], "little"), int.from_bytes(digest[4:8], "little"))
            # the id also covers the root seed: a resumed directory never mixes two seeds
            ident = hashlib.sha256(f"{self.seed}:{canon}".encode()).hexdigest()[:16]
            for rep in range(self.replications):
                run_id = f"{ident}-{rep}"
                out.append(Run(run_id, params, rep, (*words, rep)))
        return out


def load_spec(path: str | Path) -> SweepSpec:
    """Read and validate a sweep spec; every error names the key (nothing runs before)."""
    where = str(path)
    doc = read_yaml(path)
    if not isinstance(doc, Mapping):
        raise InputError(where, "a sweep spec is a mapping with 'kind', 'grid', ...")
    return parse_spec(dict(doc), where, str(Path(path).resolve().parent))


def parse_spec(doc: dict[str, Any], where: str = "spec", base_dir: str = ".") -> SweepSpec:
    """Validate a sweep spec given as a dict (see :func:`load_spec`)."""
    allowed = {"kind", "seed", "replications", "fixed", "grid"}
    for key in doc:
        if key not in allowed:
            raise InputError(where, f"unknown key {key!r} (allowed: {', '.join(sorted(allowed))})")
    kind: Any = doc.get("kind")  # SweepSpec checks the types of what a file gave
    grid: Any = doc.get("grid")
    return SweepSpec(
        kind,
        doc.get("seed", 0),
        doc.get("replications", 1),
        doc.get("fixed") or {},
        grid,
        base_dir,
        where,
    )


#: Most runs one sweep spec may make (each is a file; every point is checked before any run).
MAX_RUNS = 1_000_000


def _check_grid(grid: Mapping[str, Any], where: str) -> None:
    """Every grid entry is a non-empty list without repeated values."""
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise InputError(where, f"grid.{key} must be a non-empty list of values")
        seen: set[str] = set()
        for v in values:  # a repeated value would be the same run twice
            text = json.dumps(v, sort_keys=True, default=str)
            if text in seen:
                raise InputError(where, f"grid.{key} lists {v!r} more than once (the same run)")
            seen.add(text)


def _check_names(kind: str, fixed: Mapping[str, Any], grid: Mapping[str, Any], where: str) -> None:
    """Every key is a parameter of the kind, of the right type; the required ones are set."""
    params = KIND_TABLE[kind].parameters()
    for section, items in (("fixed", {k: [v] for k, v in fixed.items()}), ("grid", grid)):
        for key, values in items.items():
            if key not in params:
                raise InputError(
                    where,
                    f"{section}.{key} is not a parameter of {kind} "
                    f"(allowed: {', '.join(sorted(params))})",
                )
            for v in values:
                if not _accepts(params[key], v):
                    raise InputError(where, f"{section}.{key}: {v!r} has the wrong type")
    both = set(fixed) & set(grid)
    if both:
        raise InputError(where, f"{sorted(both)[0]} is in both 'fixed' and 'grid'")
    for key in sorted(KIND_TABLE[kind].required_parameters()):
        if key not in fixed and key not in grid:
            raise InputError(where, f"a {kind} sweep needs '{key}' (in fixed or grid)")


def _dry_check(spec: SweepSpec, where: str) -> None:
    """Check every point's values as its run would, before any run (nothing is computed)."""
    kind = KIND_TABLE[spec.kind]
    ctx = PointContext(spec.base_dir)  # each cluster/workload read once
    for params in spec.points():
        try:
            kind.check(params, ctx)
        except ParameterError as exc:
            point = ", ".join(f"{k}={params[k]!r}" for k in spec.grid)
            raise InputError(where, f"at {point}: {exc}" if point else str(exc)) from None
