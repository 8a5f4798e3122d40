"""One name per concept across rooms (issue 42, item 4), checked over public signatures.

The rules, for every implemented paper's ``__all__`` (the functions, the classes and their
public methods):

* the iteration budget is ``max_iter`` (STYLE.md: ``tol, max_iter, seed``): no parameter
  spelled like one of :data:`BUDGET_ALIASES`. A parameter a class inherits from its host
  library (``max_steps`` of ``transformers.TrainingArguments`` in a TRL config) keeps the host's
  name, as STYLE.md asks; a renamed keyword kept for one release through
  ``optzoo._core.deprecation.renamed_kwargs`` is not in the signature, so it passes;
* a ``seed`` parameter defaults to an int or ``None`` (or is required);
* a public name means one thing: a name exported by two rooms is the same object, and a
  function or class named like a public name of ``optzoo._core`` or of a room is defined only
  where that public object is (a private look-alike with another signature, as talda's
  ``warn_not_converged(owner, nit, gnorm, tol)`` or dpc4's reproduction
  ``per_sample_grads(prob, w, idx)`` were, is a failure).

Each checker takes modules, so that ``test_checker_*`` can run it on a fake room.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from optzoo.papers import implemented_papers

SRC = Path(__file__).resolve().parents[1] / "src" / "optzoo"

#: spellings of the iteration budget that are not ``max_iter``. Not here: ``steps`` (a fixed
#: horizon of a simulation or training loop, no stopping test: momentum_tracking.simulate,
#: ContextTuningConfig, dpc4.calibrate's composition count) and TRL's ``num_iterations`` (the
#: reuse count K of a generated batch, in copro.CoProConfig), which are other concepts.
BUDGET_ALIASES = frozenset({
    "iterations", "niter", "n_iter", "iters", "num_iters", "n_iters", "max_steps", "maxiter",
    "max_iterations", "n_iterations",
})

#: public names that are plain verbs, which a reproduction may also use for a private helper
GENERIC_VERBS = {
    # rpo.evaluate(policy, env) is public; the context_tuning, dynamic_gs and zo_sgd
    # reproductions each have an evaluate() of their own model on their own task
    "evaluate",
}

#: Rooms whose rework is in flight: not checked until it lands (none now; mo_bandit's and
#: coarsening's landed: DLConfig takes max_iter, the official max_iterations still works for
#: one release; bandit_regret(T=) is a bandit horizon, another concept than max_iter).
EXEMPT_ROOMS: dict[str, str] = {}

ROOMS = [p for p in implemented_papers() if p.slug not in EXEMPT_ROOMS]


def _room(slug: str) -> types.ModuleType:
    return importlib.import_module(f"optzoo.{slug}")


def _signature(obj) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):  # builtins, some C types
        return None


def _host_params(cls: type, attr: str) -> set[str]:
    """Parameter names of ``attr`` on the classes outside optzoo that ``cls`` derives from."""
    names: set[str] = set()
    for base in cls.__mro__[1:]:
        if base is object or base.__module__.split(".")[0] == "optzoo" or attr not in vars(base):
            continue
        sig = _signature(base if attr == "__init__" else getattr(base, attr))
        if sig is not None:
            names |= set(sig.parameters)
    return names


def public_signatures(module: types.ModuleType) -> Iterator[tuple[str, inspect.Parameter, set[str]]]:
    """(where, parameter, host-library names) for every parameter of every public callable of
    ``module.__all__``: functions, class constructors and the public methods optzoo defines."""
    mod = module.__name__
    for name in module.__all__:
        obj = getattr(module, name)
        targets: list[tuple[str, object, set[str]]] = []
        if inspect.isclass(obj):
            targets.append((f"{mod}.{name}", obj, _host_params(obj, "__init__")))
            for klass in obj.__mro__:
                if klass.__module__.split(".")[0] != "optzoo":
                    continue
                for attr, fn in vars(klass).items():
                    if attr.startswith("_") or not callable(fn):
                        continue
                    targets.append((f"{mod}.{name}.{attr}", getattr(obj, attr), _host_params(obj, attr)))
        elif callable(obj):
            targets.append((f"{mod}.{name}", obj, set()))
        for where, fn, host in targets:
            sig = _signature(fn)
            if sig is not None:
                for p in sig.parameters.values():
                    yield where, p, host


def budget_violations(module: types.ModuleType) -> list[str]:
    return sorted({f"{where}({p.name}=)" for where, p, host in public_signatures(module)
                   if p.name in BUDGET_ALIASES and p.name not in host})


def seed_violations(module: types.ModuleType) -> list[str]:
    bad = set()
    for where, p, _ in public_signatures(module):
        d = p.default
        if p.name == "seed" and not (d is p.empty or d is None or (isinstance(d, int) and not isinstance(d, bool))):
            bad.add(f"{where}(seed={d!r})")
    return sorted(bad)


def cross_room_collisions(rooms: dict[str, types.ModuleType]) -> list[str]:
    """Names exported by two rooms that are not the same object."""
    owner: dict[str, tuple[str, object]] = {}
    bad = []
    for slug, module in rooms.items():
        for name in module.__all__:
            obj = getattr(module, name)
            if name in owner and owner[name][1] is not obj:
                bad.append(f"{name}: optzoo.{owner[name][0]} and optzoo.{slug} export different objects")
            owner.setdefault(name, (slug, obj))
    return bad


def _defining_file(obj) -> Path | None:
    try:
        f = inspect.getsourcefile(inspect.unwrap(obj))
    except TypeError:
        return None
    return Path(f).resolve() if f else None


def public_definitions(modules: list[types.ModuleType]) -> dict[str, set[Path]]:
    """Public name -> the file(s) where the exported function or class is defined."""
    out: dict[str, set[Path]] = {}
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(inspect.unwrap(obj)) or inspect.isclass(obj):
                f = _defining_file(obj)
                if f is not None:
                    out.setdefault(name, set()).add(f)
    return out


def _rel(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if root in path.parents else str(path)


def shadowed_names(files: list[Path], public: dict[str, set[Path]], root: Path = SRC.parent) -> list[str]:
    """Top-level functions and classes named like a public object but defined elsewhere
    (files shown relative to ``root``, the public ones relative to ``src/``)."""
    bad = []
    for path in files:
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in tree.body:
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and node.name in public and node.name not in GENERIC_VERBS
                    and path.resolve() not in public[node.name]):
                where = sorted(_rel(p, SRC.parent) for p in public[node.name])
                bad.append(f"{_rel(path.resolve(), root)}:{node.lineno} defines {node.name!r}, "
                           f"a public name defined in {where}")
    return bad


def _core_modules() -> list[types.ModuleType]:
    return [importlib.import_module(f"optzoo._core.{p.stem}") for p in sorted((SRC / "_core").glob("*.py"))
            if p.stem != "__init__"]


def _library_files() -> list[Path]:
    skip = {SRC / slug for slug in EXEMPT_ROOMS}
    return [p for p in sorted(SRC.rglob("*.py")) if not any(s in p.parents for s in skip)]


# ---------------------------------------------------------------- the checks on optzoo


@pytest.mark.parametrize("paper", ROOMS, ids=lambda p: p.slug)
def test_iteration_budget_is_max_iter(paper):
    assert budget_violations(_room(paper.slug)) == []


@pytest.mark.parametrize("paper", ROOMS, ids=lambda p: p.slug)
def test_seed_defaults_to_an_int_or_none(paper):
    assert seed_violations(_room(paper.slug)) == []


def test_a_public_name_is_one_object_across_rooms():
    assert cross_room_collisions({p.slug: _room(p.slug) for p in ROOMS}) == []


def test_no_private_look_alike_of_a_public_name():
    public = public_definitions(_core_modules() + [_room(p.slug) for p in ROOMS])
    assert "warn_not_converged" in public and "per_sample_grads" in public  # the checker sees them
    assert shadowed_names(_library_files(), public) == []


def test_one_warn_not_converged():
    from optzoo._core.result import warn_not_converged

    assert list(inspect.signature(warn_not_converged).parameters) == ["owner", "message", "stacklevel"]
    defs = [p for p in _library_files()
            if any(isinstance(n, ast.FunctionDef) and n.name == "warn_not_converged"
                   for n in ast.parse(p.read_text()).body)]
    assert defs == [SRC / "_core" / "result.py"]


def test_exemptions_name_implemented_rooms():
    slugs = {p.slug for p in implemented_papers()}
    assert set(EXEMPT_ROOMS) <= slugs, "an exemption names a room that no longer exists: remove it"


# ---------------------------------------------------------------- the checkers, on fake rooms


def _fake_room(**objs) -> types.ModuleType:
    m = types.ModuleType("fake_room")
    for k, v in objs.items():
        setattr(m, k, v)
    m.__all__ = list(objs)
    return m


def test_checker_catches_a_budget_alias_on_a_function_a_class_and_a_method():
    def solve(x, *, niter: int = 10, tol: float = 0.0):
        return x

    class Solver:
        def __init__(self, iters: int = 5):
            self.iters = iters

        def run(self, max_steps=None):
            return max_steps

    Solver.__module__ = "optzoo.fake_room"  # methods are checked on optzoo's own classes
    fake = _fake_room(solve=solve, Solver=Solver)
    assert budget_violations(fake) == ["fake_room.Solver(iters=)", "fake_room.Solver.run(max_steps=)",
                                       "fake_room.solve(niter=)"]


def test_checker_passes_max_iter_a_renamed_keyword_and_a_host_library_name():
    from optzoo._core.deprecation import renamed_kwargs

    @renamed_kwargs(niter="max_iter")
    def solve(x, *, max_iter: int = 10):
        return x

    class HostArguments:  # stands for transformers.TrainingArguments
        def __init__(self, max_steps: int = -1):
            self.max_steps = max_steps

    HostArguments.__module__ = "transformers.training_args"

    class Config(HostArguments):
        def __init__(self, max_steps: int = 100, beta: float = 0.1):
            super().__init__(max_steps)

    Config.__module__ = "optzoo.fake_room"
    assert budget_violations(_fake_room(solve=solve, Config=Config)) == []


def test_checker_catches_a_bad_seed_default():
    def ok(*, seed: int = 0):
        pass

    def also_ok(*, seed=None):
        pass

    def bad(*, seed="0"):
        pass

    def worse(*, seed=True):
        pass

    assert seed_violations(_fake_room(ok=ok, also_ok=also_ok, bad=bad, worse=worse)) == [
        "fake_room.bad(seed='0')", "fake_room.worse(seed=True)"]


def test_checker_catches_two_rooms_exporting_different_objects_under_one_name():
    def oracle_a():
        pass

    def oracle_b():
        pass

    shared = object()
    a, b = _fake_room(Oracle=oracle_a, SHARED=shared), _fake_room(Oracle=oracle_b, SHARED=shared)
    assert cross_room_collisions({"a": a, "b": b}) == [
        "Oracle: optzoo.a and optzoo.b export different objects"]


def test_checker_catches_a_private_look_alike(tmp_path):
    from optzoo._core.result import warn_not_converged

    public = public_definitions([_fake_room(warn_not_converged=warn_not_converged)])
    path = tmp_path / "fake_room" / "_oracle.py"
    path.parent.mkdir()
    path.write_text("def warn_not_converged(owner, nit, gnorm, tol):\n    pass\n\n\ndef helper():\n    pass\n")
    assert shadowed_names([path], public, root=tmp_path.resolve()) == [
        "fake_room/_oracle.py:1 defines 'warn_not_converged', a public name defined in "
        "['optzoo/_core/result.py']"]
