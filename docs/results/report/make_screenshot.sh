#!/usr/bin/env bash
# The report screenshot in this folder: three hospitals' CSV files with a header (200, 1000 and 5000
# rows; seed 0), each released with `bayes-dpreg release`, fitted, reported with the comparison, and
# the HTML page rendered by headless Chromium (Debian's `chromium` package).
#   bash docs/results/report/make_screenshot.sh   (from the repository root, the package installed)
set -euo pipefail
out="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
cd "$work"
python - <<'PY'
import numpy as np
rng = np.random.default_rng(0)
for j, n in enumerate([200, 1000, 5000]):
    X = rng.normal(size=(n, 4)) * [1, 0.5, 2, 1]
    y = X @ [0.3, -0.2, 0.1, 0.0] + 0.3 * rng.normal(size=n)
    with open(f"h{j}.csv", "w") as f:
        f.write("age,bmi,dose,sex,outcome\n")
        for r, t in zip(X, y):
            f.write(",".join(f"{v:.4f}" for v in r) + f",{t:.4f}\n")
PY
for j in 0 1 2; do
  bayes-dpreg release "h$j.csv" --epsilon 1 --delta 1e-5 --x-bound 6 --y-bound 3 --y-column outcome --seed "$j" -o "h$j.json"
done
bayes-dpreg fit h0.json h1.json h2.json -o post.nc
bayes-dpreg report post.nc -o report.html --stats h0.json h1.json h2.json
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$work/chromium" --hide-scrollbars \
  --window-size=1200,5200 --screenshot="$out/report_screenshot.png" "file://$work/report.html"
