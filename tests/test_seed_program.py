"""The seed program (two launches overwrite y) on every mode, against the installed Warp's expectations."""

import numpy as np
import pytest
from helpers.seed import EXPECTED, SEED, run_seed

import warp_zerostore as wp


@pytest.mark.parametrize("flag", [True, False, None])
def test_seed_program(flag, device):
    out = run_seed(*SEED[flag], device)
    np.testing.assert_array_equal(out["y"], 3.0)
    for name, value in EXPECTED[flag].items():
        np.testing.assert_array_equal(out[name], value, err_msg=f"{name} with zero_store={flag}")


def test_flags_read_back():
    assert [wp.effective_zero_store(SEED[f][0]) for f in (True, False, None)] == [True, False, None]
