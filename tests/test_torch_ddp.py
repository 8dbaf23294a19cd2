"""Scale-out through an existing engine: DistributedDataParallel (gloo, 2 CPU processes on 127.0.0.1) trains a
model whose loss goes through a bridged Warp op; its all-reduced gradients equal a single-process run's."""

import os
import pathlib
import socket
import subprocess
import sys

import pytest

torch = pytest.importorskip(
    "torch", reason="warp_zerostore.torch needs PyTorch: pip install 'warp_zerostore[torch]' (torch==2.13.0)"
)
if not torch.distributed.is_available():
    pytest.skip("this PyTorch build has no torch.distributed", allow_module_level=True)

from helpers import ddp_model  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
WORLD = 2
TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_gradients_equal_single_process(tmp_path):
    # single process first: it also builds the Warp module, so the ranks load it from the kernel cache
    model = ddp_model.TinyModel()
    expected = ddp_model.train(model, model, slice(None))

    path = [str(HERE.parent), str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), GLOO_SOCKET_IFNAME="lo")
    port = _free_port()
    outs = [tmp_path / f"rank{r}.pt" for r in range(WORLD)]
    ranks = [
        subprocess.Popen(
            [sys.executable, str(HERE / "helpers" / "ddp_worker.py"), str(r), str(WORLD), str(port), str(outs[r])],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(WORLD)
    ]
    logs = []
    try:
        for p in ranks:
            logs.append(p.communicate(timeout=TIMEOUT_S)[0])
    finally:
        for p in ranks:
            if p.poll() is None:
                p.kill()
    for r, p in enumerate(ranks):
        assert p.returncode == 0, f"rank {r} failed:\n{logs[r] if r < len(logs) else ''}"

    for r in range(WORLD):
        history = torch.load(outs[r])
        assert len(history) == len(expected) == ddp_model.STEPS
        for step, (got, want) in enumerate(zip(history, expected)):
            for g, w in zip(got, want):
                torch.testing.assert_close(
                    g, w, rtol=1e-12, atol=1e-14, msg=lambda m, r=r, step=step: f"rank {r} step {step}: {m}"
                )
