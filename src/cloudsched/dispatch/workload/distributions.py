"""Service-time and inter-arrival distributions as validated specs that know their moments.

Every spec is a frozen dataclass with ``mean``, ``variance``, ``cv`` and
``sample(rng, size)``.  :func:`parse_spec` reads the command-line form ``NAME[:k=v,...]``;
the mean is 1 unless ``mean=`` is given (for arrivals the CLI rescales it from ``--load``):

==========================  ===============================================================
``exp``                     exponential
``det``                     deterministic
``uniform[:cv=c]``          uniform on [mean (1 - sqrt(3) c), mean (1 + sqrt(3) c)];
                            default c = 1/sqrt(3), i.e. [0, 2 mean]; c <= 1/sqrt(3)
``lognormal:cv=c``          lognormal with that mean and coefficient of variation (c <= 1000)
``h2:cv=c``                 two-phase hyperexponential, balanced means (1 <= c <= 1000)
``pareto:alpha=a,max=h``    bounded Pareto on [low, h] with shape a in [0.05, 20] and
                            h <= 1e9 mean; ``low`` solves the mean
``empirical:FILE``          resampled uniformly from the numbers in FILE, rescaled to the mean
==========================  ===============================================================

Means are limited to [1e-6, 1e6] time units, where the simulator's clock and histogram keep
their resolution.
"""

from __future__ import annotations

import abc
import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cloudsched.errors import ParameterError, check_real

__all__ = [
    "BoundedPareto",
    "Deterministic",
    "Distribution",
    "Empirical",
    "Exponential",
    "HyperExponential",
    "LogNormal",
    "Uniform",
    "parse_spec",
]


class Distribution(abc.ABC):
    """Base class: a positive random variable with known mean and variance."""

    mean: float

    def __post_init__(self) -> None:
        """Check the fields when the law is built (subclasses check their shape too)."""
        check_real("mean", self.mean, low=0.0, low_open=True)

    @property
    @abc.abstractmethod
    def variance(self) -> float:
        """Variance of the distribution."""

    @property
    def cv(self) -> float:
        """Coefficient of variation, sqrt(variance) / mean."""
        return math.sqrt(self.variance) / self.mean

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draw ``size`` values (float64) with ``rng``."""

    @abc.abstractmethod
    def scaled(self, mean: float) -> Distribution:
        """Return the same shape with another mean."""


@dataclass(frozen=True)
class Exponential(Distribution):
    """Exponential distribution."""

    mean: float = 1.0

    @property
    def variance(self) -> float:  # noqa: D102
        return self.mean**2

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:  # noqa: D102
        return rng.standard_exponential(size) * self.mean

    def scaled(self, mean: float) -> Exponential:  # noqa: D102
        return Exponential(mean)


@dataclass(frozen=True)
class Deterministic(Distribution):
    """Every value equals the mean."""

    mean: float = 1.0

    @property
    def variance(self) -> float:  # noqa: D102
        return 0.0

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:  # noqa: D102
        return np.full(size, self.mean)

    def scaled(self, mean: float) -> Deterministic:  # noqa: D102
        return Deterministic(mean)


@dataclass(frozen=True)
class Uniform(Distribution):
    """Uniform on ``[mean (1 - sqrt(3) cv), mean (1 + sqrt(3) cv)]``."""

    mean: float = 1.0
    cv_: float = 1.0 / math.sqrt(3.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_real("cv", self.cv_, low=0.0, high=1.0 / math.sqrt(3.0))

    @property
    def variance(self) -> float:  # noqa: D102
        return (self.mean * self.cv_) ** 2

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:  # noqa: D102
        half = math.sqrt(3.0) * self.cv_ * self.mean
        return self.mean - half + 2.0 * half * rng.random(size)

    def scaled(self, mean: float) -> Uniform:  # noqa: D102
        return Uniform(mean, self.cv_)


@dataclass(frozen=True)
class LogNormal(Distribution):
    """Lognormal with the given mean and coefficient of variation."""

    mean: float = 1.0
    cv_: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_real("cv", self.cv_, low=0.0, high=CV_MAX, low_open=True)

    @property
    def variance(self) -> float:  # noqa: D102
        return (self.mean * self.cv_) ** 2

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:  # noqa: D102
        s2 = math.log1p(self.cv_**2)
        mu = math.log(self.mean) - s2 / 2.0
        return np.exp(mu + math.sqrt(s2) * rng.standard_normal(size))

    def scaled(self, mean: float) -> LogNormal:  # noqa: D102
        return LogNormal(mean, self.cv_)


@dataclass(frozen=True)
class HyperExponential(Distribution):
    """Two-phase hyperexponential with balanced means (each phase carries half the mean)."""

    mean: float = 1.0
    cv_: float = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_real("cv", self.cv_, low=1.0, high=CV_MAX)

    @property
    def p1(self) -> float:
        """Probability of the first (faster) phase."""
        c2 = self.cv_**2
        return 0.5 * (1.0 + math.sqrt((c2 - 1.0) / (c2 + 1.0)))

    @property
    def variance(self) -> float:  # noqa: D102
        return (self.mean * self.cv_) ** 2

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:  # noqa: D102
        p1 = self.p1
        phase_mean = np.where(
            rng.random(size) < p1, self.mean / (2 * p1), self.mean / (2 * (1 - p1))
        )
        return rng.standard_exponential(size) * phase_mean

    def scaled(self, mean: float) -> HyperExponential:  # noqa: D102
        return HyperExponential(mean, self.cv_)


#: Allowed mean of a law (in time units): beyond it the simulator's histogram and clock
#: resolution (about 2^-32 to 2^41) can no longer represent response times.
MEAN_RANGE = (1e-6, 1e6)
#: Allowed Pareto shape: outside it the truncated moments under- or overflow.
PARETO_ALPHA = (0.05, 20.0)
#: Largest coefficient of variation of lognormal and h2 laws (their moments overflow later).
CV_MAX = 1e3
#: Largest ``max / mean`` of a bounded Pareto.
PARETO_MAX_RATIO = 1e9
#: An empirical sample's values must lie within these multiples of its mean (the histogram
#: and the event pool are sized for such spreads; 1e-320 rescaled to mean 1 is infinite).
SAMPLE_SPREAD = (1e-12, 1e9)


def _pareto_moment(k: int, alpha: float, low: float, high: float) -> float:
    norm = alpha * low**alpha / (1.0 - (low / high) ** alpha)
    if math.isclose(k, alpha):
        return norm * math.log(high / low)
    return norm * (high ** (k - alpha) - low ** (k - alpha)) / (k - alpha)


@dataclass(frozen=True)
class BoundedPareto(Distribution):
    """Pareto with shape ``alpha`` truncated to ``[low, high]`` (``low`` solves the mean)."""

    mean: float = 1.0
    alpha: float = 1.5
    high: float = 1000.0
    low: float = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_real("alpha", self.alpha, low=PARETO_ALPHA[0], high=PARETO_ALPHA[1])
        check_real(
            "max", self.high, low=self.mean, high=PARETO_MAX_RATIO * self.mean, low_open=True
        )

        def excess(lo: float) -> float:
            with np.errstate(all="ignore"):
                return _pareto_moment(1, self.alpha, lo, self.high) - self.mean

        a, b = self.mean * 1e-12, self.mean * (1 - 1e-12)
        fa, fb = excess(a), excess(b)
        if not (math.isfinite(fa) and math.isfinite(fb) and fa < 0.0 < fb):
            raise ParameterError(
                "max",
                self.high,
                f"a bound for which a Pareto of shape {self.alpha:g} can "
                f"have mean {self.mean:g} (try a smaller max or a larger alpha)",
            )
        from scipy.optimize import brentq  # here: scipy.optimize takes 0.1 s to import

        low = brentq(excess, a, b, xtol=1e-15 * self.mean, rtol=1e-14)
        object.__setattr__(self, "low", float(low))

    @property
    def variance(self) -> float:  # noqa: D102
        return _pareto_moment(2, self.alpha, self.low, self.high) - self.mean**2

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:  # noqa: D102
        u = rng.random(size)
        ratio = (self.low / self.high) ** self.alpha
        return self.low * (1.0 - u * (1.0 - ratio)) ** (-1.0 / self.alpha)

    def scaled(self, mean: float) -> BoundedPareto:  # noqa: D102
        return BoundedPareto(mean, self.alpha, self.high * mean / self.mean)


@dataclass(frozen=True)
class Empirical(Distribution):
    """Values resampled uniformly from a sample, rescaled so that their mean is ``mean``."""

    values: np.ndarray = field(repr=False, compare=False)
    mean: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        v = np.asarray(self.values, dtype=np.float64)
        if v.ndim != 1 or v.size == 0:
            raise ParameterError("empirical sample", f"{v.size} values", "at least one value")
        bad = np.flatnonzero(~np.isfinite(v) | (v <= 0))
        if bad.size:
            raise ParameterError(
                "empirical sample",
                f"value {bad[0] + 1} = {v[bad[0]]!r}",
                "finite and positive numbers",
            )
        top = float(v.max())
        raw_mean = top * float(np.mean(v / top))  # no overflow for values near 1e308
        if float(v.min()) < raw_mean * SAMPLE_SPREAD[0] or top > raw_mean * SAMPLE_SPREAD[1]:
            raise ParameterError(
                "empirical sample",
                f"values from {float(v.min()):.3g} to {top:.3g} (mean {raw_mean:.3g})",
                "values within [1e-12, 1e9] x the sample mean",
            )
        object.__setattr__(self, "values", (v / raw_mean) * self.mean)

    @property
    def variance(self) -> float:  # noqa: D102
        return float(self.values.var())

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:  # noqa: D102
        return self.values[(rng.random(size) * self.values.size).astype(np.int64)]

    def scaled(self, mean: float) -> Empirical:  # noqa: D102
        return Empirical(self.values, mean)


_ALLOWED = (
    "exp, det, uniform[:cv=C], lognormal:cv=C, h2:cv=C, pareto:alpha=A,max=H or empirical:FILE"
)


def _read_sample(path: str, name: str) -> np.ndarray:
    from cloudsched.resources import check_memory

    file = Path(path)
    try:
        if file.exists() and not file.is_file():
            raise ParameterError(f"{name} file", path, "a regular file of numbers")
        # a number takes at least 2 characters ("1 "): at most size/2 values, 8 bytes each
        check_memory(f"{name} file", path, file.stat().st_size * 4.0, "the sample's values")
        with open(file, encoding="utf-8") as fh:
            values = array("d")
            for lineno, line in enumerate(fh, 1):
                for token in line.replace(",", " ").split():
                    try:
                        x = float(token)
                    except ValueError:
                        x = math.nan
                    if not (math.isfinite(x) and x > 0):
                        raise ParameterError(
                            f"{name} file",
                            f"{path}:{lineno}: {token!r}",
                            "positive finite numbers separated by spaces, commas or lines",
                        ) from None
                    values.append(x)
    except OSError as exc:
        raise ParameterError(f"{name} file", path, f"a readable file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ParameterError(
            f"{name} file", path, f"UTF-8 text (byte {exc.start} is not)"
        ) from None
    return np.frombuffer(values, dtype=np.float64).copy()


def parse_spec(spec: str, name: str = "--service") -> Distribution:
    """Parse ``NAME[:k=v,...]`` (see the module docstring) into a :class:`Distribution`."""
    kind, _, rest = spec.partition(":")
    kind = kind.strip().lower()
    if kind == "empirical":
        file, _, opts = rest.partition(",")
        params = _params(opts, name, spec)
        mean = params.pop("mean", 1.0)
        _no_extra(params, name, spec)
        if not file:
            raise ParameterError(name, spec, "empirical:FILE")
        sample = _read_sample(file, name)
        mean = check_real(f"{name} mean", mean, low=MEAN_RANGE[0], high=MEAN_RANGE[1])
        try:
            return Empirical(sample, mean)
        except ParameterError as exc:
            raise ParameterError(f"{name} file", f"{file}: {exc.value}", exc.allowed) from None
    params = _params(rest, name, spec)
    mean = check_real(
        f"{name} mean", params.pop("mean", 1.0), low=MEAN_RANGE[0], high=MEAN_RANGE[1]
    )
    try:
        if kind in ("exp", "exponential", "poisson"):
            dist: Distribution = Exponential(mean)
        elif kind in ("det", "deterministic"):
            dist = Deterministic(mean)
        elif kind == "uniform":
            dist = Uniform(mean, params.pop("cv", 1.0 / math.sqrt(3.0)))
        elif kind == "lognormal":
            dist = LogNormal(
                mean, check_real("cv", params.pop("cv", 1.0), low=0.0, high=CV_MAX, low_open=True)
            )
        elif kind in ("h2", "hyperexp"):
            dist = HyperExponential(mean, params.pop("cv", 2.0))
        elif kind in ("pareto", "bounded-pareto"):
            dist = BoundedPareto(mean, params.pop("alpha", 1.5), params.pop("max", 1000.0 * mean))
        else:
            raise ParameterError(name, spec, _ALLOWED)
    except ParameterError as exc:
        if exc.name == name:
            raise
        raise ParameterError(f"{name} {exc.name}", exc.value, exc.allowed) from None
    _no_extra(params, name, spec)
    return dist


def _params(text: str, name: str, spec: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, eq, value = item.partition("=")
        try:
            if not eq:
                raise ValueError
            out[key.strip().lower()] = float(value)
        except ValueError:
            raise ParameterError(name, spec, "NAME[:key=number,...], e.g. lognormal:cv=2") from None
    return out


def _no_extra(params: dict[str, float], name: str, spec: str) -> None:
    if params:
        raise ParameterError(
            name, spec, f"without the unknown option(s) {', '.join(sorted(params))}"
        )
