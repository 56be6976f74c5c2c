"""J*_n / V0, Theorem 2.11's exact J_n / V0 and the tuned policy's against n from 16 to 1000: the rows of the bracket
runs (``experiments/results/optimal``, n <= 256) and of the doubling runs (``experiments/results/optimal_1000``) of
the bundled exponential systems in one figure, drawn by the study's own figure
(:func:`jaxq.studies.optimal.figure`).

    python experiments/optimal_figure.py    # writes experiments/results/optimal_1000/J_over_V0_16_to_1000.png
"""

from __future__ import annotations

import csv
import shutil
import tempfile
from pathlib import Path

from jaxq.studies import optimal

RESULTS = Path(__file__).resolve().parent / "results"
SYSTEMS = ("pss_P", "pss_T2")
NAME = "J_over_V0_16_to_1000.png"


def _rows(folder: str) -> list[dict]:
    """The summary rows of one run, numbers as floats (empty cells None)."""
    out = []
    with open(RESULTS / folder / "summary.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            row = {}
            for k, v in r.items():
                if k in ("system", "case", "policy"):
                    row[k] = v
                elif k == "phases_observed":
                    row[k] = v == "True"
                else:
                    row[k] = float(v) if v != "" else None
            out.append(row)
    return out


def main() -> None:
    rows = [r for folder in ("optimal", "optimal_1000") for r in _rows(folder) if r["system"] in SYSTEMS]
    rows.sort(key=lambda r: (SYSTEMS.index(r["system"]), r["n"]))
    target = RESULTS / "optimal_1000" / NAME
    with tempfile.TemporaryDirectory() as tmp:  # the study's figure has a fixed name: drawn aside, then moved
        (drawn,) = optimal.figure(None, None, None, {"summary": rows}, Path(tmp))
        shutil.move(drawn, target)
    print(target)


if __name__ == "__main__":
    main()
