"""Benchmark: hostile lines generated from the rules, through the redactor and whole commands.

    python tests/benchmarks/bench_hostile.py [--mb 1] [--commands check,audit,scrub,migrate]
        [--forms text,json,yaml-block] [--only LABEL-SUBSTRING] [--skip-redactor]

Part one redacts every hostile line of `tests/test_linear_time.py` (each rule's keywords,
examples, near misses and separators repeated; each credential name; the shapes of the
issue reports) at `--mb` and three times that in this process, and prints the worst
CPU seconds per MB and the worst growth (3x the text: linear is 3, quadratic 9).

Part two writes the shapes of `tests/test_hostile_commands.py` (the issue reports' and a
few more) as a text file, a cassette body and a YAML block (`--forms`), at `--mb` and 3x,
and runs each command on them in a fresh process (migrate on the recordings only): wall
and CPU seconds, peak memory, exit code. The baseline is what the issue measured before
the one-pass scan, printed beside each shape ("api_key=abcdefgh1234 x N: over 60 s at
1 MB", ...).

Exit 1 when a growth passes 5, a megabyte of any line costs the redactor over 2 CPU-s, a
command exits 3 or outside 0-1, or a command's peak memory passes 200 MB + 20x the file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ for helpers

from helpers import run_measured
from test_hostile_commands import FORMS, SHAPES, command_args, write
from test_linear_time import REDACTOR, _cases, _cost, _fill

MB = 1 << 20
def redactor_part(mb: float, only: str) -> bool:
    worst_rate, worst_growth, failed = (0.0, ""), (0.0, ""), False
    cases = [(label, piece) for label, piece in _cases() if only in label]
    for label, piece in cases:
        small = _cost(REDACTOR.redact_text, _fill(piece, int(mb * MB)))
        large = _cost(REDACTOR.redact_text, _fill(piece, int(3 * mb * MB)))
        rate, growth = large / (3 * mb), large / max(small, 0.01)
        worst_rate = max(worst_rate, (rate, label))
        worst_growth = max(worst_growth, (growth, label))
        if rate > 2.0 or growth > 5.0:
            failed = True
            print(f"  {label}: {small:.2f} s -> {large:.2f} s ({rate:.2f} s/MB)")
    print(f"redactor, {len(cases)} hostile lines at {mb:g} and {3 * mb:g} MB: worst "
          f"{worst_rate[0]:.2f} CPU-s/MB ({worst_rate[1]}), worst growth "
          f"{worst_growth[0]:.2f}x ({worst_growth[1]})")
    return failed


def commands_part(mb: float, commands: list[str], forms: list[str], root: Path) -> bool:
    failed = False
    for piece, before in SHAPES.items():
        for form in forms:
            for size in (mb, 3 * mb):
                folder = root / f"in-{form}-{size}"
                folder.mkdir(exist_ok=True)
                path = write(folder / "hostile", form, _fill(piece, int(size * MB)))
                bytes_mb = path.stat().st_size / MB
                for command in commands:
                    if command == "migrate" and form == "text":
                        continue  # (migrate reads recordings)
                    args = command_args(command, path)
                    if command != "migrate":
                        args.remove("--jobs")
                        args.remove("1")
                    run = run_measured(args, root)
                    bar = 200 + 20 * bytes_mb
                    ok = run.code in (0, 1) and run.peak_mb < bar
                    failed |= not ok
                    print(f"{piece[:20]!r:24} {form:12} {bytes_mb:5.1f} MB {command:6} "
                          f"{run.wall:6.2f} s wall {run.seconds:6.2f} CPU-s "
                          f"{run.peak_mb:6.0f} MB exit {run.code}"
                          f"{'' if ok else '  <- FAIL'}   (before: {before or '-'})")
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--commands", default="check,audit,scrub,migrate")
    parser.add_argument("--forms", default="text,json,yaml-block", help=", ".join(FORMS))
    parser.add_argument("--only", default="", help="redactor lines whose label holds this")
    parser.add_argument("--skip-redactor", action="store_true")
    options = parser.parse_args()
    failed = False
    if not options.skip_redactor:
        failed |= redactor_part(options.mb, options.only)
    with tempfile.TemporaryDirectory(prefix="redactkey-hostile-") as tmp:
        root = Path(tmp)
        (root / ".redactkey.toml").write_text("", encoding="utf-8")
        failed |= commands_part(options.mb, [c for c in options.commands.split(",") if c],
                                [f for f in options.forms.split(",") if f], root)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
