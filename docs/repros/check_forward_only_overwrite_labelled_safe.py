"""warp_zerostore check-mode defect, FIXED (tests/test_fuzz_programs_findings.py; found while writing the repro of the program fuzzer's upstream class
untaped-write-over-a-recorded-write, issue 31): from warp-lang 1.13 on, ``Tape(check="warn")`` labels an
overwrite by an ``enable_backward=False`` kernel as safe
(``real=False``: "the later kernel zeroes its store adjoints"), though that kernel's adjoint never runs, so the
overwritten values' gradient flows on and the result is wrong.

``y = x * x`` (recorded), then a forward-only kernel stores ``y[i] = 0``: d(sum y)/dx is 0, every Tape gives 2 x.
On 1.9.1 to 1.12.1 (store adjoints accumulate) the check Tape reports the overwrite as real; on 1.13.0 and later
it reports it as safe and says nothing.
"""

import warnings

import warp as wp

import warp_zerostore as wpz

wp.config.quiet = True


@wp.kernel
def square(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = x[i] * x[i]


@wp.kernel(enable_backward=False)
def clear(y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = 0.0


x = wp.array([0.5, -1.0], dtype=float, requires_grad=True)
y = wp.zeros(2, dtype=float, requires_grad=True)
tape = wpz.Tape(check="warn")
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    with tape:
        wp.launch(square, dim=2, inputs=[x, y])
        wp.launch(clear, dim=2, inputs=[y])
    tape.backward(grads={y: wp.ones(2, dtype=float)})
hazards = [(h.kind, "real" if h.real else "safe") for h in tape.hazards]
flag = "" if any(h[1] == "real" for h in hazards) else "   <-- NOT REPORTED"
print(f"warp-lang {wp.config.version}: x.grad {x.grad.numpy()} (expected [0. 0.]); hazards {hazards}{flag}")
