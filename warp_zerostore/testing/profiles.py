"""hypothesis settings profiles for checking Warp kernels: bounded examples, kernels built once."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

#: Profile name -> number of examples per test.
PROFILES = {"warp_zerostore-ci": 25, "warp_zerostore-dev": 10, "warp_zerostore-thorough": 300}


def register_profiles(deadline=None) -> list:
    """Register the ``warp_zerostore-ci`` (25 examples), ``-dev`` (10) and ``-thorough`` (300) profiles.

    The CI profile is derandomized (it runs the same examples every time); all print a reproduction
    blob on failure. ``deadline`` (a ``datetime.timedelta`` or milliseconds) defaults to None: the first example
    of a session builds the Warp module of the kernels it launches (seconds), and hypothesis would
    report the slow first run as flaky. Give a deadline once your kernels are built before the tests
    run (``wp.load_module(...)``).

    Args:
        deadline: hypothesis's per-example deadline (a ``datetime.timedelta`` or milliseconds); None: none.

    Returns:
        The names of the profiles registered.

    Example:
        ```python
        from hypothesis import settings
        from warp_zerostore.testing import register_profiles

        register_profiles()
        settings.load_profile("warp_zerostore-ci")
        ```
    """
    for name, examples in PROFILES.items():
        settings.register_profile(
            name,
            max_examples=examples,
            deadline=deadline,
            derandomize=name == "warp_zerostore-ci",
            print_blob=True,
            suppress_health_check=[HealthCheck.too_slow],
        )
    return list(PROFILES)
