"""``python -m warp_zerostore``: the command line (`warp_zerostore.cli`)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m warp_zerostore"))
