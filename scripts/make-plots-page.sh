#!/usr/bin/env bash
# Make plots/offline.html: the page `dvc plots show` fills (.dvc/config plots.html_template), with
# vega, vega-lite and vega-embed inlined so that it draws without a network (DVC's own page loads them
# from a CDN). The versions are those DVC's page names. Needs npm and the npm registry; run once per
# version change and commit the result (their licenses: plots/THIRD_PARTY.md).
#   usage: scripts/make-plots-page.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for spec in vega@5.20.2 vega-lite@5.2.0 vega-embed@6.18.2; do
  (cd "$tmp" && npm pack --silent "$spec" >/dev/null && mkdir -p "${spec%@*}" && tar xzf ./*"${spec#*@}".tgz -C "${spec%@*}" --strip-components=1)
done
{
  cat <<'HTML'
<!DOCTYPE html>
<html>
<head>
    {refresh_tag}
    <meta charset="utf-8">
    <title>corpusmix plots</title>
    <style>
        body { font-family: sans-serif; margin: 1.5em; }
        table { border-spacing: 15px; }
        h1 { font-size: 1.3em; }
    </style>
HTML
  for f in vega/build/vega.min.js vega-lite/build/vega-lite.min.js vega-embed/build/vega-embed.min.js; do
    printf '    <script>\n'; sed 's#</script#<\\/script#g' "$tmp/$f"; printf '\n    </script>\n'
  done
  cat <<'HTML'
</head>
<body>
    <h1>corpusmix: dvc plots (drawn offline)</h1>
    {plot_divs}
</body>
</html>
HTML
} > plots/offline.html
echo "wrote plots/offline.html ($(wc -c < plots/offline.html) bytes)"
