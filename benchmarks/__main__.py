"""``python -m benchmarks [name] [args]``: run a benchmark (default and only one: ``limb``)."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    name = "limb"
    if args and not args[0].startswith("-"):
        name = args.pop(0)
    if name != "limb":
        print(f"benchmarks: unknown benchmark {name!r}; available: limb", file=sys.stderr)
        return 2
    from benchmarks.limb import main as limb_main

    return limb_main(args)


if __name__ == "__main__":
    sys.exit(main())
