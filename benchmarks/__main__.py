"""``python -m benchmarks NAME [args]``: run one benchmark module's ``main(argv)``."""

import importlib
import pkgutil
import sys
from pathlib import Path


def _names() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                  if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    names = _names()
    if not argv or argv[0] not in names:
        print(f"usage: python -m benchmarks NAME [args]; NAME is one of: {', '.join(names) or '(none)'}")
        return 2
    return importlib.import_module(f"benchmarks.{argv[0]}").main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
