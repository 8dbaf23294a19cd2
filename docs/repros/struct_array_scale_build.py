"""Warp >= 1.15 cannot build a valid kernel: ``s.y[i] *= v`` (or ``/=``) on an array field of a @wp.struct argument.

Found by warp_zerostore's program fuzzer (issue 31; drawn kernels reaching their arrays through a struct). The same
statement on an array argument builds, and so do ``s.y[i] = v``, ``+=`` and ``-=``. 1.9.1 to 1.14.0 build it (and
compute it right); 1.15.0 to 1.17.0 fail with "Couldn't find function overload for 'indexref' that matched inputs
with types: [array(ndim=1, dtype=float32), int32]", 1.18.0 and 1.19.0 with the same message about 'extract'.
"""

import warp as wp

wp.config.quiet = True


@wp.struct
class State:
    y: wp.array(dtype=float)


@wp.kernel
def scale(s: State, x: wp.array(dtype=float)):
    i = wp.tid()
    s.y[i] *= x[i]


state = State()
state.y = wp.array([1.0, 2.0], dtype=float)
x = wp.array([3.0, 4.0], dtype=float)
try:
    wp.launch(scale, dim=2, inputs=[state, x])
    print(f"warp-lang {wp.config.version}: builds, y = {state.y.numpy()} (expected [3. 8.])")
except Exception as error:  # noqa: BLE001
    print(f"warp-lang {wp.config.version}: BUILD ERROR {str(error).strip().splitlines()[-1]}")
