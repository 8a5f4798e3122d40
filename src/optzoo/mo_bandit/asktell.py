"""Ask/tell for expensive simulators: :class:`DivideAndLearn` runs :func:`divide_and_learn`
step by step, the caller evaluating each point itself.

The algorithm is sequential (every local-search probe depends on the previous value), so
``ask`` hands out one point at a time. The driver runs the very same ``divide_and_learn`` in a
worker thread whose objective blocks until ``tell`` supplies the value: ask/tell and the
function call give identical archives for the same seed (a test checks it), and cache hits
(points already evaluated) are answered without asking.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

import numpy as np

from optzoo._core.result import Result
from optzoo._core.validation import check_int, fail

from .dnl import divide_and_learn

__all__ = ["DivideAndLearn"]

_OWNER = "DivideAndLearn"
_DONE = object()


class DivideAndLearn:
    """Divide & Learn with an ask/tell interface.

    ``DivideAndLearn(space, n_objectives, budget, **kw)`` takes the keyword options of
    :func:`divide_and_learn` (``sense``, ``variant``, ``weights``, ``ref_point``,
    ``ideal_point``, ``seed``, DLConfig fields). ``ask()`` returns the next decision vector to
    evaluate, or ``None`` once the run has finished; ``tell(x, f)`` gives its objective vector
    (length ``n_objectives``, in the problem's own sense). ``result()`` is the
    :class:`optzoo.Result` that ``divide_and_learn`` would return.

    >>> from optzoo.mo_bandit import Permutation
    >>> opt = DivideAndLearn(Permutation(6), n_objectives=2, budget=40, seed=0)
    >>> while (x := opt.ask()) is not None:
    ...     opt.tell(x, [float(x[0]), float(x[-1])])
    >>> res = opt.result()
    >>> res.nfev <= 40 and res.fun.shape[1] == 2
    True
    """

    def __init__(self, space: Any, n_objectives: int, budget: int = 10_000, **options: Any):
        self._kw = dict(space=space, n_objectives=n_objectives, **options)
        self._budget = check_int("budget", budget, owner=_OWNER, low=1)
        self._asks: queue.Queue = queue.Queue(maxsize=1)
        self._answers: queue.Queue = queue.Queue(maxsize=1)
        self._pending: np.ndarray | None = None
        self._result: Result | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._finished = False
        # argument errors surface here, at construction, not in the worker thread
        divide_and_learn(lambda x: np.zeros(n_objectives), 1, **{**self._kw, "n_trace": 1})

    def _objective(self, x: np.ndarray) -> np.ndarray:
        self._asks.put(np.array(x, copy=True))
        f = self._answers.get()
        if f is _DONE:  # close(): unwind the worker
            raise _Closed
        return f

    def _work(self) -> None:
        try:
            self._result = divide_and_learn(self._objective, self._budget, **self._kw)
        except _Closed:
            pass
        except BaseException as err:  # re-raised in the caller's thread by ask()
            self._error = err
        finally:
            self._asks.put(_DONE)

    def ask(self) -> np.ndarray | None:
        """The next point to evaluate (a copy), or ``None`` when the run is over."""
        if self._pending is not None:
            fail("ask", _OWNER, "called after tell() of the previous point", self._pending.tolist(),
                 exc=RuntimeError)
        if self._finished:
            return None
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="DivideAndLearn", daemon=True)
            self._thread.start()
        item = self._asks.get()
        if item is _DONE:
            self._finished = True
            self._thread.join()
            if self._error is not None:
                raise self._error
            return None
        self._pending = item
        return item.copy()

    def tell(self, x: Any, f: Any) -> None:
        """The objective vector ``f`` of the point ``x`` returned by the last ``ask()``."""
        if self._pending is None:
            fail("x", f"{_OWNER}.tell", "the point returned by the last ask() (none is pending)",
                 np.asarray(x).tolist(), exc=RuntimeError)
        if not np.array_equal(np.asarray(x), self._pending):
            fail("x", f"{_OWNER}.tell", f"the point returned by the last ask(), "
                 f"{self._pending.tolist()}", np.asarray(x).tolist())
        self._pending = None
        self._answers.put(np.asarray(f, dtype=float))  # validated by divide_and_learn

    @property
    def done(self) -> bool:
        return self._finished

    def result(self) -> Result:
        """The run's :class:`optzoo.Result` (after ``ask()`` returned ``None``)."""
        if self._result is None:
            fail("result", _OWNER, "called once ask() has returned None (the run is over)",
                 "a run still in progress" if not self._finished else "a closed run",
                 exc=RuntimeError)
        return self._result

    def close(self) -> None:
        """Stop a run early (its worker thread ends; ``result()`` is then unavailable)."""
        if self._thread is not None and not self._finished:
            if self._pending is not None:
                self._pending = None
            self._answers.put(_DONE)
            while self._asks.get() is not _DONE:
                self._answers.put(_DONE)
            self._thread.join()
        self._finished = True


class _Closed(Exception):
    """Raised inside the worker when the driver is closed."""
