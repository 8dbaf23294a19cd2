"""The command line's exit statuses: one meaning each, listed in ``--help``."""

from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    OK = 0
    #: check: a real hazard was found (whatever the program's own status); fuzz: a drawn kernel failed; warp-suite:
    #: a test failed; warp-examples: a mode's gradients differ from stock's, or it raised where stock ran
    HAZARDS = 1
    USAGE = 2  #: a bad command line (argparse's status), or a device that is not available
    UNCHECKED = 3  #: check: nothing real found, but launches under graph capture could not be checked
    NOT_FOUND = 4  #: check: the script or module does not exist
    PROGRAM_RAISED = 5  #: check: the program raised an exception (its traceback is printed)
    PROGRAM_FAILED = 6  #: check: the program exited with a non-zero status of its own (printed in the report)


EPILOG = """exit status:
  0  success
  1  check: hazards found (whatever the program's own status); fuzz: a kernel failed (known or new);
     warp-suite: a test failed; warp-examples: a mode differs from stock (or raised where stock ran)
  2  usage error (bad arguments, a device that is not available)
  3  check: nothing found, but some launches (under graph capture) could not be checked
  4  check: the script or module was not found
  5  check: the program raised an exception (its traceback is printed)
  6  check: the program called sys.exit(n) with n != 0 (n is printed in the report)"""
