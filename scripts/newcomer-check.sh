#!/usr/bin/env bash
# The first day as a newcomer meets it, checked (docs/reproducibility.md): a fresh clone, `make setup`
# (the only step that uses the network), `make demo` with the network off, then
#   - rc 0 and `git status --porcelain` empty (outputs ignored, dvc.lock reproduced byte for byte),
#   - `dvc metrics show` under 120 columns with no failure line,
#   - the `dvc plots show` page and the report drawn in headless Chromium with the network off
#     (screenshots kept), the report's verdict naming a mixture,
#   - a second `dvc repro` that runs no stage.
# Writes DEST.newcomer/ (outside the clone, so that it stays clean): newcomer.json (times, disk,
# results), the screenshots newcomer-plots.png and newcomer-report.png, and the logs; exits 1 on any
# failed check.
#   usage: scripts/newcomer-check.sh DEST [REPO [BRANCH]]   (REPO default: this checkout, BRANCH: its HEAD)
set -uo pipefail
dest="${1:?usage: scripts/newcomer-check.sh DEST [REPO [BRANCH]]}"
here="$(cd "$(dirname "$0")/.." && pwd)"
repo="${2:-$here}"
branch="${3:-$(git -C "$here" rev-parse --abbrev-ref HEAD)}"
[ -e "$dest" ] && { echo "newcomer-check: $dest exists; give a new folder" >&2; exit 2; }
art="$(mkdir -p "$dest.newcomer" && cd "$dest.newcomer" && pwd)"
fail=0
check() { if [ "$2" = ok ]; then echo "newcomer-check: PASS $1"; else echo "newcomer-check: FAIL $1: $2"; fail=1; fi; }
now() { date +%s.%N; }

git clone -q --branch "$branch" "$repo" "$dest" || exit 1
cd "$dest" || exit 1
t0=$(now); make setup > "$art/setup.log" 2>&1; setup_rc=$?; t1=$(now)
grep '^setup:' "$art/setup.log"
check "make setup" "$([ $setup_rc = 0 ] && echo ok || echo "rc $setup_rc ($art/setup.log)")"
venv_mb=$(du -sm .venv | cut -f1)
t2=$(now); make demo > "$art/demo.log" 2>&1; demo_rc=$?; t3=$(now)
check "make demo (network off)" "$([ $demo_rc = 0 ] && echo ok || echo "rc $demo_rc ($art/demo.log)")"
porcelain=$(git status --porcelain)
check "git status clean" "$([ -z "$porcelain" ] && echo ok || echo "$(echo "$porcelain" | tr '\n' ' ')")"
. .venv/bin/activate
metrics=$(dvc metrics show 2>&1)
width=$(echo "$metrics" | awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }')
echo "$metrics"
check "dvc metrics show < 120 columns, no failure" "$( [ "$width" -lt 120 ] && ! echo "$metrics" | grep -qiE 'fail|error' \
  && echo ok || echo "width $width")"
dvc plots show > "$art/plots.log" 2>&1
t4=$(now); second=$(scripts/offline.sh dvc repro 2>&1); t5=$(now)
check "second dvc repro runs nothing" "$(echo "$second" | grep -q 'Running stage' && echo "it ran: $(echo "$second" \
  | grep 'Running stage' | tr '\n' ' ')" || echo ok)"
shots=$(ART="$art" scripts/offline.sh python - <<'PY'
import json, os, re, shutil
from pathlib import Path
from playwright.sync_api import sync_playwright

flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
out = {}
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=flags, headless=True)
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000})
    outside = []
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://")
              else (outside.append(r.request.url), r.abort()))
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(Path("out/dvc_plots/index.html").resolve().as_uri())
    page.wait_for_function("document.querySelectorAll('.vega-embed svg, .vega-embed canvas').length >= 5",
                           timeout=60_000)
    out["plots_drawn"] = page.evaluate("document.querySelectorAll('.vega-embed svg, .vega-embed canvas').length")
    page.screenshot(path=os.path.join(os.environ["ART"], "newcomer-plots.png"), full_page=True)
    page.goto(Path("out/report/report.html").resolve().as_uri())
    out["report_images"] = page.evaluate("[...document.images].filter(i => i.complete && i.naturalWidth > 0).length")
    page.screenshot(path=os.path.join(os.environ["ART"], "newcomer-report.png"), full_page=True)
    text = page.inner_text("body")
    m = re.search(r"Use:? +([A-Za-z_-]+)", text)
    out["verdict_mixture"] = m.group(1) if m else None
    out["errors"], out["outside_requests"] = errors, outside
    browser.close()
print(json.dumps(out))
PY
)
echo "$shots"
check "plots and report drawn offline" "$(python -c "
import json, sys; s = json.loads(sys.argv[1])
print('ok' if s['plots_drawn'] >= 5 and s['report_images'] >= 3 and not s['errors'] and not s['outside_requests'] else s)
" "$shots" 2>&1)"
check "the verdict names a mixture" "$(python -c "
import json, sys; m = json.loads(sys.argv[1])['verdict_mixture']
print('ok' if m in ('natural', 'uniform', 'doremi', 'regmix', 'manual') else repr(m))" "$shots" 2>&1)"
python - "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$venv_mb" "$width" "$fail" "$shots" "$art" <<'PY'
import json, os, sys
t0, t1, t2, t3, t4, t5 = map(float, sys.argv[1:7])
doc = {"setup_s": round(t1 - t0), "demo_s": round(t3 - t2), "second_repro_s": round(t5 - t4),
       "venv_mb": int(sys.argv[7]), "metrics_width": int(sys.argv[8]), "passed": sys.argv[9] == "0",
       **json.loads(sys.argv[10] or "{}")}
json.dump(doc, open(os.path.join(sys.argv[11], "newcomer.json"), "w"), indent=1)
print(json.dumps(doc))
PY
exit $fail
