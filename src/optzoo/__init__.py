"""optzoo: working implementations of 19 ICML 2026 optimization and learning methods,
each checked against its paper's headline claim by a reproduction anyone can run.

Importing ``optzoo`` is cheap: paper packages are imported on use (``optzoo.dks`` ...).
"""

from optzoo.papers import PAPERS, get_paper

__version__ = "0.1.0"
__all__ = ["PAPERS", "get_paper", "__version__"]
