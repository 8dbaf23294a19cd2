"""A mutant of Warp itself for the fuzzer's mutation test: a builtin's adjoint made wrong in generated C++.

Test-only, and the one place the tests touch Warp's private module builder (reached through ``_compat``, the
package's boundary): the fuzzer must show it catches a wrong *builtin* adjoint, and Warp has no public way to
replace one. Inside `wrong_adjoint`, every module Warp generates calls ``wp::adj_<name>_mutant``, which calls
Warp's own ``adj_<name>`` with the incoming adjoint scaled by ``factor``; the forward is untouched. Modules
built inside must carry `salt` in their options (part of Warp's module hash), so a mutated binary is cached
under a hash no unmutated build has.
"""

import contextlib

from warp_zerostore import _compat


def salt(name: str, factor: float) -> str:
    """A prelude line for the fuzzer's batch module: an option naming the mutant (module options are part of
    Warp's module hash), so a mutated binary never serves an unmutated build from the kernel cache."""
    return f"wp.set_module_options({{'warp_zerostore_test_mutant': 'adj_{name} x{factor!r}'}})\n"


#: The scalar adjoints that can be mutated: Warp's parameters of ``adj_<name>`` (the same in 1.9 to 1.19).
PARAMETERS = {
    "tanh": ("x", "ret", "&adj_x", "adj_ret"),
    "sin": ("x", "&adj_x", "adj_ret"),
    # the builtins of the fuzzer's feature "builtins2" (the same parameters in 1.9.1, 1.12.1 and 1.19.0)
    "pow": ("a", "b", "ret", "&adj_a", "&adj_b", "adj_ret"),
    "atan2": ("y", "x", "&adj_y", "&adj_x", "adj_ret"),
    "asin": ("x", "&adj_x", "adj_ret"),
}


def mutate(source: str, name: str, factor: float) -> str:
    """``source`` (a module's generated C++) with every call of ``wp::adj_<name>`` off by ``factor``."""
    if f"wp::adj_{name}(" not in source:
        return source
    params = ", ".join(f"T& {p[1:]}" if p.startswith("&") else f"T {p}" for p in PARAMETERS[name])
    args = ", ".join(p.lstrip("&") for p in PARAMETERS[name][:-1])
    shim = (
        f"namespace wp {{\ntemplate <typename T>\ninline CUDA_CALLABLE void adj_{name}_mutant({params})\n"
        f"{{\n    adj_{name}({args}, T({factor!r}) * adj_ret);\n}}\n}}\n"
    )
    head, include, rest = source.partition('#include "builtin.h"\n')
    return head + include + shim + rest.replace(f"wp::adj_{name}(", f"wp::adj_{name}_mutant(")


@contextlib.contextmanager
def wrong_adjoint(name: str = "tanh", factor: float = 1.5):
    """Within the block, Warp's generated code uses ``adj_<name>`` off by ``factor``."""
    owner = _compat.ModuleBuilder
    original = owner.__dict__["codegen"]

    def codegen(self, device, *args, **kwargs):
        return mutate(original(self, device, *args, **kwargs), name, factor)

    owner.codegen = codegen
    try:
        yield
    finally:
        owner.codegen = original
