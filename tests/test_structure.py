"""The shape of the source tree, checked: small modules and functions, honest exports, no
import cycles.  Read by a newcomer, every module fits on a few screens, every name one
module takes from another is part of that module's public list (``__all__``), and the
package imports in one direction.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "cloudsched"
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80

#: Modules allowed above MAX_FILE_LINES, and why.
LONG_FILES = {
    "dispatch/engines/servers/kernel.py": (
        "the compiled event loop and its per-event helpers are one closure (numba compiles "
        "a policy's hooks into it as constants)"
    ),
    "placement/_kernel.py": (
        "the compiled placement kernel: its helpers are inlined into one event loop, so they "
        "live beside it"
    ),
}
#: Functions allowed above MAX_FUNCTION_LINES (code lines, docstring excluded), and why.
LONG_FUNCTIONS = {
    ("dispatch/engines/servers/kernel.py", "build"): (
        "the closure that defines the compiled kernel's helpers"
    ),
    ("dispatch/engines/servers/kernel.py", "run"): (
        "the event loop: the per-event work is in helpers; what is left is the choice of the "
        "next event and the batch bookkeeping, read top to bottom"
    ),
    ("dispatch/engines/counts/kernel.py", "run_counts"): (
        "the counts engine's event loop: its hot scalars (time, arrivals, phase, longest "
        "queue) stay in locals through it; the per-event work is in inlined helpers"
    ),
    ("dispatch/engines/counts/mirror.py", "mirror_counts"): (
        "the plain-Python reference of the counts engines' event loop, read beside them"
    ),
    ("placement/milp.py", "exact_max_weight"): (
        "one MILP, built row block by row block in the order of its formula"
    ),
    ("dispatch/engines/servers/mirror.py", "mirror_run"): (
        "the plain-Python reference of the event loop, written to be read beside it"
    ),
    ("dispatch/engines/delay/kernel.py", "run_delay"): (
        "the delay engine's event loop: its hot scalars stay in locals through it, as in "
        "run_counts; the views, the heap and the I-queues are inlined helpers"
    ),
    ("dispatch/engines/delay/mirror.py", "mirror_delay"): (
        "the plain-Python reference of the delay engine's event loop, read beside it"
    ),
}


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py"))


def _name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> int:
    body = node.body
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        body = body[1:]
    seen = {n for b in body for n in range(b.lineno, (b.end_lineno or b.lineno) + 1)}
    return sum(1 for n in seen if lines[n - 1].strip() and not lines[n - 1].strip().startswith("#"))


def test_modules_are_short():
    long = {}
    for path in _modules():
        rel = str(path.relative_to(SRC))
        n = len(path.read_text().splitlines())
        if n > MAX_FILE_LINES and rel not in LONG_FILES:
            long[rel] = n
    assert not long, f"modules over {MAX_FILE_LINES} lines: {long}"


def test_functions_are_short():
    long = {}
    for path in _modules():
        rel = str(path.relative_to(SRC))
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = _code_lines(node, lines)
                if n > MAX_FUNCTION_LINES and (rel, node.name) not in LONG_FUNCTIONS:
                    long[f"{rel}:{node.name}"] = n
    assert not long, f"functions over {MAX_FUNCTION_LINES} code lines: {long}"


def test_documented_exceptions_are_still_needed():
    """An exception that no longer applies is removed, so the list stays true."""
    for rel in LONG_FILES:
        assert len((SRC / rel).read_text().splitlines()) > MAX_FILE_LINES, rel
    for rel, fn in LONG_FUNCTIONS:
        text = (SRC / rel).read_text()
        nodes = [
            n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef) and n.name == fn
        ]
        assert any(_code_lines(n, text.splitlines()) > MAX_FUNCTION_LINES for n in nodes), fn


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every ``from cloudsched... import names``, at any depth."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and (node.module == "cloudsched" or node.module.startswith("cloudsched."))
        ):
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names if a.name.startswith("cloudsched."))
    return out


def test_every_name_taken_from_another_module_is_in_its_public_list():
    missing = []
    for path in _modules():
        here = _name(path)
        for module, names in _imports(path):
            mod = importlib.import_module(module)
            public = set(getattr(mod, "__all__", ()))
            for name in names:
                sub = f"{module}.{name}"
                if (SRC.parent / sub.replace(".", "/")).with_suffix(".py").exists() or (
                    SRC.parent / sub.replace(".", "/")
                ).is_dir():
                    continue  # a submodule
                if module == here:
                    continue
                if name not in public:
                    missing.append(f"{here} takes {name} from {module}")
    assert not missing, "\n".join(missing)


def test_subpackages_export_what_their_functions_accept():
    from cloudsched import dispatch, placement

    for name in (
        "SimulationSpec",
        "SimulationResult",
        "Policy",
        "MeanFieldPrediction",
        "FluidTrajectory",
    ):
        assert name in dispatch.__all__, name
    for name in (
        "Cluster",
        "JobType",
        "Topology",
        "PlacementSpec",
        "PlacementResult",
        "PlacementPolicy",
        "StaticOptimum",
        "MaxWeightSolution",
    ):
        assert name in placement.__all__, name


def _graph() -> dict[str, set[str]]:
    known = {_name(p) for p in _modules()}
    graph: dict[str, set[str]] = {}
    for path in _modules():
        here = _name(path)
        deps = set()
        for module, names in _imports(path):
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in known] or [module]
            for t in targets:
                if t in known and t != here and not here.startswith(t + "."):
                    deps.add(t)
        graph[here] = deps
    return graph


def test_no_import_cycles():
    """Function-level imports count too: a cycle hidden in a function is still a cycle.

    A package's ``__init__`` re-exporting its own modules is not a cycle (it is their
    parent, imported first); any other loop is.
    """
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(u: str) -> None:
        state[u] = 1
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            if state.get(v) == 1:
                cycles.append([*stack[stack.index(v) :], v])
            elif v not in state:
                visit(v)
        stack.pop()
        state[u] = 2

    for u in sorted(graph):
        if u not in state:
            visit(u)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles[:10])


#: What the theory and the workload readers may import: they stand alone, so that the
#: simulator, the lab and the commands read them and never the other way round.
LAYERS = {
    "cloudsched.dispatch.theory": {
        "cloudsched.policy_table",  # the facts of each policy (it imports only errors)
        "cloudsched.errors",
        "cloudsched.progress",
        "cloudsched.resources",
        "cloudsched._jit",  # the one place kernels are compiled (the delayed mean field's)
    },
    "cloudsched.dispatch.workload": {
        "cloudsched.errors",
        "cloudsched.progress",
        "cloudsched.resources",
        "cloudsched.io",
        "cloudsched.data",
    },
}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_theory_and_workload_stand_alone(layer):
    graph = _graph()
    members = [m for m in graph if m == layer or m.startswith(layer + ".")]
    assert len(members) > 3, f"{layer}: the layout moved"
    outside = {
        m: sorted(
            d
            for d in graph[m]
            if not d.startswith(layer) and d not in LAYERS[layer] and d != "cloudsched"
        )
        for m in members
    }
    assert not any(outside.values()), {m: d for m, d in outside.items() if d}


@pytest.mark.parametrize(
    "package",
    ["cloudsched.dispatch", "cloudsched.placement", "cloudsched.experiments", "cloudsched.testing"],
)
def test_public_lists_name_real_objects(package):
    mod = importlib.import_module(package)
    for name in getattr(mod, "__all__", ()):
        assert hasattr(mod, name), f"{package}.__all__ lists {name}, which it does not define"


@pytest.mark.parametrize(
    ("function", "spec", "runtime"),
    [
        (
            "cloudsched.dispatch.simulation:simulate",
            "cloudsched.dispatch.spec:SimulationSpec",
            {"rng", "progress"},
        ),
        (
            "cloudsched.placement.simulation:simulate_placement",
            "cloudsched.placement.spec:PlacementSpec",
            {"rng", "progress", "optimum"},
        ),
    ],
)
def test_the_run_functions_and_their_specs_list_the_same_parameters(function, spec, runtime):
    """A parameter added to one and not the other would be lost in sweeps (which build the
    spec) or in the API (which calls the function): names and defaults must agree.  The
    function's run-time inputs (the random stream, progress, a precomputed optimum) are not
    part of a spec."""
    import dataclasses
    import inspect

    def load(ref):
        module, name = ref.split(":")
        return getattr(importlib.import_module(module), name)

    params = inspect.signature(load(function)).parameters
    fields = {f.name: f for f in dataclasses.fields(load(spec)) if f.init}
    assert set(params) - runtime == set(fields)
    for name, f in fields.items():
        default = params[name].default
        if default is inspect.Parameter.empty:
            assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        elif f.default is not dataclasses.MISSING:
            assert default == f.default, name


def test_every_progress_callback_has_the_one_shape():
    """Every public computation that reports progress takes a ``Progress``:
    ``progress(fraction, status)`` (cloudsched/progress.py), not a shape of its own."""
    import inspect

    from cloudsched.progress import Progress

    refs = [
        "cloudsched.dispatch.simulation:simulate",
        "cloudsched.dispatch.simulation:run_simulation",
        "cloudsched.dispatch.theory.fluid:fluid_trajectory",
        "cloudsched.dispatch.theory.finite:predict_finite",
        "cloudsched.dispatch.theory.exact:solve_exact",
        "cloudsched.dispatch.engines.servers.engine:run_once",
        "cloudsched.placement.simulation:simulate_placement",
        "cloudsched.placement.simulation:run_placement",
        "cloudsched.placement.optimize:static_optimum",
        "cloudsched.experiments.compare:compare",
        "cloudsched.experiments.sweep:run_sweep",
        "cloudsched.experiments.place_compare:compare_placement",
    ]
    for ref in refs:
        module, name = ref.split(":")
        fn = getattr(importlib.import_module(module), name)
        hints = inspect.get_annotations(fn, eval_str=True)
        assert hints["progress"] == Progress | None, (ref, hints["progress"])


def _module_map() -> set[str]:
    """The modules docs/development.md's module map names (package bullets, files in them)."""
    import re

    text = (SRC.parents[1] / "docs" / "development.md").read_text()
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    named: set[str] = set()
    for bullet in re.split(r"\n- ", section)[1:]:
        package = ""
        for token in re.findall(r"`([^`]+)`", bullet):
            if token.endswith("/"):
                package = "" if token == "cloudsched/" else token
            elif token.endswith(".py") and "/" not in token and token != "__init__.py":
                named.add(package + token)
    return named


def test_the_module_map_names_every_module_and_no_other():
    tree = {str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if p.name != "__init__.py"}
    named = _module_map()
    assert not tree - named, f"modules the map in docs/development.md omits: {tree - named}"
    assert not named - tree, f"modules the map names that do not exist: {named - tree}"


def test_no_compiled_kernel_takes_more_than_eight_arguments():
    """Kernels take named records (state, meter, controls, parameters), not loose arrays:
    run_delay took 54 arguments, run_counts 22, window_step 18."""
    long = {}
    for path in _modules():
        for fn in ast.walk(ast.parse(path.read_text())):
            decorated = isinstance(fn, ast.FunctionDef) and any(
                "kernel" in ast.unparse(d) for d in fn.decorator_list
            )
            if decorated and len(fn.args.args) > 8:
                long[f"{path.relative_to(SRC)}:{fn.name}"] = len(fn.args.args)
    assert not long, long


def test_simulate_takes_exactly_the_fields_of_its_spec():
    """simulate() and simulate_placement() pass their arguments on to the spec by name."""
    import dataclasses
    import inspect

    from cloudsched.dispatch.simulation import simulate
    from cloudsched.dispatch.spec import SimulationSpec
    from cloudsched.placement.simulation import simulate_placement
    from cloudsched.placement.spec import PlacementSpec

    for fn, spec, extra in (
        (simulate, SimulationSpec, {"rng", "progress"}),
        (simulate_placement, PlacementSpec, {"rng", "progress", "optimum"}),
    ):
        fields = {f.name for f in dataclasses.fields(spec) if f.init}
        assert set(inspect.signature(fn).parameters) == fields | extra, fn.__name__


def test_the_quick_tier_reaches_every_package():
    """``pytest -m quick`` (tests/conftest.py QUICK) is a contributor's loop: its files,
    through what they import (function-level imports too), reach a module of every package."""
    from conftest import QUICK

    graph = _graph()
    known = set(graph)
    tests = Path(__file__).resolve().parent
    reached: set[str] = set()
    todo = []
    for name in QUICK:
        for module, names in _imports(tests / name):
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
            todo += [t for t in [*targets, module] if t in known]
    while todo:
        u = todo.pop()
        if u not in reached:
            reached.add(u)
            todo += graph.get(u, ())
    packages = {_name(p.parent) if p.name != "__init__.py" else _name(p) for p in _modules()}
    packages = {p for p in packages if p in known}
    missed = sorted(
        p for p in packages if not any(m == p or m.startswith(p + ".") for m in reached)
    )
    assert not missed, f"no quick test reaches {missed}: add a file of theirs to QUICK"
