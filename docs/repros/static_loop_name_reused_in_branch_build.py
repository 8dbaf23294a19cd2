"""Fuzzer finding (stock and zero_store=True, build error): a constant-bound loop, then a runtime-bound loop of
the same counter name inside an `if` that also assigns a local. A valid kernel; Warp 1.12.1 and 1.19.0 do not
build it (1.9.1 does). Shrunk by hand from benchmarks/fuzz_false_alarms.py --seed 7.
"""

import warp as wp


@wp.kernel
def fuzzed(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64), n: int):
    i = wp.tid()
    a1 = x[i]
    for k0 in range(2):
        y[i] += wp.float64(k0)
    if x[i] > wp.float64(0.0):
        for k0 in range(n):  # renaming this counter (or the one above) makes it build
            a1 = y[i]
        if y[i] > wp.float64(0.5):
            a1 = wp.min(y[i], y[i] + wp.float64(0.25))
    y[i] = a1


try:
    wp.load_module(device="cpu")
    print("built")
except Exception as error:  # 1.12.1, 1.19.0: where() true value type int32 ... false type float64
    print("build error:", str(error).splitlines()[-1])
