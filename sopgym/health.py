"""``python -m sopgym.health URL``: exit 0 when ``URL`` answers 200, else 1.

The containers' HEALTHCHECK. It uses the standard library only, so it starts in milliseconds
(the ``sopgym`` CLI imports far more) and the slim images need no curl or wget.
"""

from __future__ import annotations

import sys
import urllib.error
import urllib.request


def healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m sopgym.health URL", file=sys.stderr)
        return 2
    return 0 if healthy(argv[0]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
