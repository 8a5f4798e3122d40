"""optzoo: working implementations of 19 ICML 2026 optimization and learning methods,
each checked against its paper's headline claim by a reproduction anyone can run.

Importing ``optzoo`` is cheap: paper packages are imported on use (``optzoo.dks`` ...).
"""

from optzoo._core.result import NotConvergedWarning, Result, Status
from optzoo.papers import PAPERS, get_paper

__version__ = "0.1.0"
__all__ = ["PAPERS", "NotConvergedWarning", "Result", "Status", "get_paper", "__version__"]
