"""``wp.config.verify_fp`` still checks the new adjoints (run in a child process: it rebuilds everything)."""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import warp_zerostore as wp
    wp.config.quiet = True
    wp.config.verify_fp = True
    wp.init()

    @wp.kernel(zero_store=True)
    def overwrite(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = 2.0 * x[i]
        y[i] = 3.0 * x[i]

    x = wp.ones(2, dtype=float, requires_grad=True)
    y = wp.zeros(2, dtype=float, requires_grad=True)
    with wp.Tape() as tape:
        wp.launch(overwrite, dim=2, inputs=[x, y])
    seed = float("{seed}")
    tape.backward(grads={{y: wp.full(2, seed, dtype=float)}})
    wp.synchronize()
    print("x.grad", x.grad.numpy().tolist(), flush=True)
    """
)


def run(seed: str, folder) -> subprocess.CompletedProcess:
    script = folder / f"verify_fp_{seed.replace('.', '_')}.py"  # Warp reads kernel source from a file
    script.write_text(SCRIPT.format(seed=seed))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.parametrize("seed", ["nan"])
def test_verify_fp_reports_a_non_finite_adjoint_in_the_zeroing_store(seed, tmp_path):
    result = run(seed, tmp_path)
    assert "adj_array_store_zero" in result.stdout + result.stderr


def test_verify_fp_is_silent_for_finite_adjoints(tmp_path):
    result = run("1.0", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "x.grad [3.0, 3.0]" in result.stdout
    assert "adj_array_store_zero" not in result.stdout + result.stderr
