"""The DDP test's kernel, alone in its Warp module so every process builds (or loads) the same module hash."""

import warp_zerostore as wp


@wp.kernel(zero_store=True)
def sq_norm(h: wp.array(dtype=wp.vec3d), y: wp.array(dtype=wp.float64)):
    """y = |h|^2 per row."""
    i = wp.tid()
    y[i] = wp.dot(h[i], h[i])
