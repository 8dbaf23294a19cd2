"""Kernels that use the value an atomic returns (a slot claimed with ``wp.atomic_add``), in the kernel's body and in
a ``@wp.func`` helper, and their negative twin whose atomic's return is discarded."""

import warp_zerostore as wp


@wp.kernel
def cube_into_claimed(x: wp.array(dtype=float), cursor: wp.array(dtype=int), out: wp.array(dtype=float)):
    slot = wp.atomic_add(cursor, 0, 1)  # the value used: an index
    out[slot] = x[slot] * x[slot] * x[slot] / 3.0


@wp.func
def claim(cursor: wp.array(dtype=int)):
    return wp.atomic_add(cursor, 0, 1)


@wp.kernel
def cube_into_helper_claimed(x: wp.array(dtype=float), cursor: wp.array(dtype=int), out: wp.array(dtype=float)):
    slot = claim(cursor)  # the helper's atomic: its returned value used here
    out[slot] = x[slot] * x[slot] * x[slot] / 3.0


@wp.kernel(zero_store=True)
def cube_into_helper_claimed_flagged(x: wp.array(dtype=float), cursor: wp.array(dtype=int), out: wp.array(dtype=float)):
    slot = claim(cursor)
    out[slot] = x[slot] * x[slot] * x[slot] / 3.0


@wp.kernel
def cube_and_count(x: wp.array(dtype=float), cursor: wp.array(dtype=int), out: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(cursor, 0, 1)  # the negative twin: the return is discarded
    out[i] = x[i] * x[i] * x[i] / 3.0


@wp.func
def claim_kept(cursor: wp.array(dtype=int), slots: wp.array(dtype=int), i: int):
    slot = wp.atomic_add(cursor, 0, 1)
    slots[i] = slot
    return slot


@wp.func_replay(claim_kept)
def claim_kept_replay(cursor: wp.array(dtype=int), slots: wp.array(dtype=int), i: int):
    return slots[i]  # Warp's remedy: the backward reads back the slot the forward claimed


@wp.kernel
def cube_into_replayed_claim(
    x: wp.array(dtype=float), cursor: wp.array(dtype=int), slots: wp.array(dtype=int), out: wp.array(dtype=float)
):
    i = wp.tid()
    slot = claim_kept(cursor, slots, i)
    out[slot] = x[slot] * x[slot] * x[slot] / 3.0
