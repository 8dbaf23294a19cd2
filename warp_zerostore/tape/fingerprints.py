"""The snapshot Tape's watch on inputs changed after record (``Tape(snapshot=True)`` without checks).

For each array a recorded launch passed, the Tape keeps a fingerprint of its content after the last recorded
launch that passed it (`contents.Ledger`: computed on the array's device, no transfer) and the read sites of the
recorded launches that read it. A change outside recorded launches is found by comparing fingerprints, all at
``backward()``, where the slots are read back once:

* between launches: the fingerprint a launch takes, before it runs, of an array a recorded launch read (a change
  since the last launch passing it);
* after record: the fingerprint at ``backward()`` of every watched array a reader depends on.

A change is refused at ``backward()``, naming the readers, unless the user declared that the backward reads the
new values (`intent.read_at_backward`, when the change is found or at ``backward()``) or a restore serves them: the last launch that
passed the array before the change saved a restore of it (it wrote the array in place), or the Tape was left
since (`Fingerprints.at_exit`: an array a launch restores, read by launches after its last restoring writer, gets
one restore more, of its content then; "served" then holds only where the content did not change between that
launch and the exit, which the fingerprints say at ``backward()``).

Fingerprints are a guess (a different content with the same 64-bit checksum), used only to refuse: they never
decide what a gradient reads. The cost per launch is one fingerprint per array it passes that is (or becomes)
watched, and one per watched view of memory it writes: the launch's own arrays, not the arrays seen before.
"""

from __future__ import annotations

from .contents import Ledger, value
from .intent import is_declared


class Watched:
    """What the Tape keeps of one array object: its fingerprint after the last recorded launch that passed it,
    the sites that read it, and whether a restore puts back what they read."""

    __slots__ = ("array", "print", "readers", "served", "at")

    def __init__(self, arr):
        self.array = arr  # keeps id() unique while watched
        self.print = None  # ledger handle of its content after the last recorded launch that passed it
        #: (kernel, argument, location) -> the first recorded launch that read it there (its `Site` is made when a
        #: refusal names it: `sites`)
        self.readers: dict = {}
        #: True: the last launch that passed it saved a restore of it; False: none did; (a, b): served where
        #: fingerprints a and b are equal (a restore taken when the Tape was left, of the content then)
        self.served: bool | tuple = False
        self.at: tuple = (0, "", "")  # when ``print`` was taken: the Tape's point (journal clock, what was recorded)


class Fingerprints:
    """The watched arrays of one Tape, their fingerprints, and the changes found between launches."""

    def __init__(self):
        self.ledger = Ledger()
        self.watched: dict = {}  # id -> Watched
        #: changes between launches, decided at backward(): (array, reader Sites, the launch that found it,
        #: served, fingerprint after the last launch, fingerprint before this one, when the former was taken)
        self.between: list = []

    def before(self, launch) -> None:
        """Fingerprints, before the launch runs, of the arrays it passes that a recorded launch read."""
        for use in launch.uses:
            watched = self.watched.get(id(use.array))
            if watched is None or watched.array is not use.array or not watched.readers:
                continue
            if is_declared(use.array):
                continue  # its backward reads the new values: the user said so (`intent.read_at_backward`)
            now = self.ledger.take(use.array)
            readers = dict(watched.readers)
            found = (launch.index, launch.ident(use.label))
            self.between.append((use.array, readers, found, watched.served, watched.print, now, watched.at))

    def after(self, launch, restored_by: dict, views, at: tuple) -> None:
        """The launch's arrays after it ran: their fingerprints, and its readers. ``restored_by``: id of an array ->
        the last launch that saved a restore of it; ``views``: the other arrays over memory it wrote (changed
        legitimately, with no restore of their own); ``at``: the Tape's point after the launch."""
        replayed = launch.replayed
        for use in launch.uses:
            arr = use.array
            watched = self.watched.get(id(arr))
            reads = replayed and use.reads
            if watched is None and not reads:
                continue
            if watched is None or watched.array is not arr:
                watched = self.watched[id(arr)] = Watched(arr)
            if reads:  # one reader per kernel, argument and line (a rollout reads an array at every step)
                ident = launch.ident(use.label)
                if ident not in watched.readers:
                    watched.readers[ident] = launch.index
            watched.print = self.ledger.take(arr)
            watched.served = restored_by.get(id(arr)) == launch.index
            watched.at = at
        self._views_changed(views, at)

    def changed(self, arr, served: bool, views, at: tuple) -> None:
        """A write the Tape recorded outside a launch (`host_writes`) changed ``arr`` and its ``views``: their
        fingerprints, ``served`` where the write saved a restore of ``arr``; ``at``: the Tape's point after it."""
        watched = self.watched.get(id(arr))
        if watched is not None and watched.array is arr:
            watched.print = self.ledger.take(arr)
            watched.served = served
            watched.at = at
        self._views_changed(views, at)

    def _views_changed(self, views, at: tuple) -> None:
        for other in views:
            watched = self.watched.get(id(other))
            if watched is not None and watched.array is other:
                watched.print = self.ledger.take(other)
                watched.served = False
                watched.at = at

    def at_exit(self, snapshotted: dict) -> list:
        """When recording stops: the arrays a launch restores (``snapshotted``: id -> array) whose readers no
        restore serves yet; each gets one restore more (the caller saves it), serving them where the content did
        not change since the last launch that passed it."""
        restored = []
        for watched in self.watched.values():
            if watched.served is not False or not watched.readers or id(watched.array) not in snapshotted:
                continue
            watched.served = (watched.print, self.ledger.take(watched.array))
            restored.append(watched.array)
        return restored

    def refused(self) -> list:
        """At ``backward()``: ``(array, its readers, the launch that found the change or None, when the content was
        last known)`` for each watched array that changed outside recorded launches with no restore serving its
        readers; readers as
        `Watched.readers` (``{(kernel, argument, location): launch}``), the launch as ``(launch, (kernel, argument,
        location))``: the Tape names them (`Site`)."""
        compared = [watched for watched in self.watched.values() if watched.readers and watched.served is not True]
        now = list(zip(compared, self.ledger.take_many([watched.array for watched in compared])))
        values = self.ledger.read()

        def same(a, b) -> bool:
            return value(values, a) == value(values, b)

        def served(flag) -> bool:
            return flag is True or (isinstance(flag, tuple) and same(*flag))

        found = [
            (arr, readers, writer, at)
            for arr, readers, writer, flag, known, seen, at in self.between
            if not same(known, seen) and not served(flag) and not is_declared(arr)
        ]
        for watched, seen in now:
            if not served(watched.served) and not same(watched.print, seen) and not is_declared(watched.array):
                found.append((watched.array, watched.readers, None, watched.at))
        return found


__all__ = ["Fingerprints", "Watched"]
