"""``check``'s report: each group of hazards that are not real is headed by the reason that applies to it (a
zeroing later writer, a linear read, ...), a real group by none, and a cause the command does not know is named as
it is. No kernel runs here: the hazards are built as the Tape builds them."""

from warp_zerostore.cli.check import SAFE_REASONS, format_report, safe_reason
from warp_zerostore.tape.tape import OVERWRITE, STALE_READ, Hazard, Site


def _site(launch, kernel, argument="x"):
    return Site(launch, kernel, argument, f"program.py:{10 + launch}")


SAFE_OVERWRITE = Hazard(OVERWRITE, writer=_site(1, "zeroing"), earlier=_site(0, "first"), real=False, elements=3)
LINEAR_READ = Hazard(STALE_READ, writer=_site(2, "later"), reader=_site(1, "fft_rows"), real=False, elements=8)
REAL_READ = Hazard(STALE_READ, writer=_site(3, "later"), reader=_site(1, "square"), real=True, elements=1)


def _headings(report: str) -> list:
    return [line for line in report.splitlines() if line.startswith("== ")]


def test_each_group_of_notes_is_headed_by_its_own_reason():
    report = format_report([SAFE_OVERWRITE, LINEAR_READ, REAL_READ])
    assert _headings(report) == [
        "== overwrite (safe: the later writer zeroes its store adjoints): 1",
        "== stale read: 1",
        "== stale read (safe: the reader's backward reads no value it loaded: each is used linearly): 1",
    ]


def test_a_linear_read_is_not_headed_as_a_zeroing_writer():  # negative twin of the old single heading
    (heading,) = _headings(format_report([LINEAR_READ]))
    assert "zeroes" not in heading and "linearly" in heading


def test_a_cause_the_command_does_not_know_is_named_not_hidden():
    unknown = Hazard(OVERWRITE, writer=_site(1, "k"), earlier=_site(0, "j"), real=False, cause="a new reason")
    assert (OVERWRITE, "a new reason") not in SAFE_REASONS
    assert safe_reason(unknown) == "labelled not real, cause 'a new reason'"
    assert "cause 'a new reason'" in _headings(format_report([unknown]))[0]
