"""The negative twin of user_script.py: each line marked ``expect`` must be flagged by mypy and pyright, or by
the one checker named (tests/typing/check_types.py checks that the errors appear on those lines). pyright does
not check assignments to another module's variables against their declared types: those lines are mypy's."""

import warp_zerostore as wp
from warp_zerostore.checkpoint import rollout


@wp.kernel(zero_stor=True)  # expect: misspelt keyword
def scale(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    y[wp.tid()] = 2.0 * x[wp.tid()]


tape = wp.Tape(check="loud")  # expect: not a check level
wp.config.check = "loud"  # expect[mypy]: not a check level
wp.config.zero_store = "yes"  # expect[mypy]: not a bool
wp.lanch(scale, dim=1, inputs=[])  # expect: misspelt function
rollout(lambda s, n: None, [], 3, schedule="revolve")  # expect: not a schedule
