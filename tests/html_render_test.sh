#!/bin/sh
# html_render_test.sh - the HTML report (--html) as a browser shows it:
# headless Chromium (Debian's `chromium` package) opens generated reports
# from file:// URLs, and the charts must be in the rendered DOM and laid
# out.
#
#   1. For every built-in scenario, a copy of the report with a probe
#      script appended (the report itself has no script) is dumped with
#      --dump-dom; the probe writes, per chart, its namespace, its laid-out
#      size, its <rect>/<path> count and how many data elements have a
#      non-empty bounding box.  Every chart of the file must be there, an
#      SVG element, wider than 300 px; each chart kind must draw data.
#   2. The unmodified report, dumped: Chromium's parser put every chart,
#      <rect> and <path> where the file does (a markup error the browser
#      repairs would re-nest them).
#   3. A screenshot of one report: a PNG of the window's size with more
#      than a blank page's bytes.
#
# Usage: html_render_test.sh [path/to/vidmm].  Prints "render: N passed,
# M failed", or "render: skipped (...)" and exits 0 when chromium or
# python3 is missing - unless VIDMM_REQUIRE_CHROMIUM=1 (CI), which makes
# that a failure.  CHROMIUM=/path/to/binary picks the browser.
tool=${1:-build/vidmm}
browser=${CHROMIUM:-}
if [ -z "$browser" ]; then
  for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$b; break; fi
  done
fi
if [ -z "$browser" ] || ! command -v "$browser" >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
  echo "render: skipped (needs chromium and python3; Debian: apt-get install chromium)"
  [ "${VIDMM_REQUIRE_CHROMIUM:-0}" = 1 ] && exit 1
  exit 0
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pass=0
fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAILED render: $1"; }
check() { # name cmd...
  name=$1; shift
  if "$@" >"$dir/check.out" 2>&1; then ok; else bad "$name"; sed -n 1,20p "$dir/check.out"; fi
}
# Chromium writes its profile, caches and crash reports under HOME and
# the XDG directories: keep them in the scratch directory.  Root needs
# --no-sandbox; --disable-gpu because CI machines have none.
chrome() {
  HOME="$dir/home" XDG_CONFIG_HOME="$dir/home/.config" XDG_CACHE_HOME="$dir/home/.cache" \
    timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$dir/profile" --hide-scrollbars "$@" 2>>"$dir/chromium.err"
}

# The probe: measures what the browser laid out and leaves it in the DOM
# as JSON, which --dump-dom then prints.
cat >"$dir/probe.js" <<'EOF'
<script>
(function () {
  var out = [];
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var r = svg.getBoundingClientRect(), drawn = 0, series = svg.querySelectorAll('.series');
    series.forEach(function (e) { var b = e.getBBox(); if (b.width > 0 && b.height > 0) drawn++; });
    var t = svg.querySelector('title');
    var up = svg.parentElement;
    out.push({id: svg.id, ns: svg.namespaceURI, parent: up.namespaceURI + ' ' + up.localName, w: r.width, h: r.height,
              shapes: svg.querySelectorAll('rect, path').length, series: series.length, drawn: drawn,
              title: t ? t.textContent : ''});
  });
  var pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
EOF

for s in desktop game compute igpu; do
  if ! "$tool" run "$s" --html "$dir/$s.html" >/dev/null 2>"$dir/$s.err"; then
    bad "run $s --html"; cat "$dir/$s.err"; continue
  fi
  # The probe goes just before </body>.
  python3 - "$dir/$s.html" "$dir/probe.js" "$dir/$s.probe.html" <<'EOF'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
probe = open(sys.argv[2], encoding="utf-8").read()
assert page.count("</body>") == 1
open(sys.argv[3], "w", encoding="utf-8").write(page.replace("</body>", probe + "</body>"))
EOF
  chrome --dump-dom "file://$dir/$s.probe.html" >"$dir/$s.dom"
  check "chromium renders the $s report: charts present and laid out" python3 - "$dir/$s.html" "$dir/$s.dom" <<'EOF'
import html, json, re, sys
src = open(sys.argv[1], encoding="utf-8").read()
dom = open(sys.argv[2], encoding="utf-8", errors="replace").read()
m = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
assert m, "no probe output in the dumped DOM (%d bytes)" % len(dom)
charts = json.loads(html.unescape(m.group(1)))
want = re.findall(r'<svg id="([^"]+)" class="chart"', src)
got = [c["id"] for c in charts]
assert got == want, (got, want)
kinds = {"occupancy-seg": 0, "usage-": 0, "paging-bandwidth": 0, "memmap-seg": 0}
shapes = 0
for c in charts:
    assert c["ns"] == "http://www.w3.org/2000/svg", c
    assert c["parent"] == "http://www.w3.org/1999/xhtml figure", c
    assert c["w"] > 300 and c["h"] >= 20, c
    assert c["shapes"] >= 1 and c["title"], c
    shapes += c["shapes"]
    for k in kinds:
        if c["id"].startswith(k):
            kinds[k] += c["drawn"]
assert all(kinds.values()), kinds
assert shapes >= 40, shapes
print(len(charts), "charts,", shapes, "rect/path,", kinds)
EOF
done

# The unmodified report: Chromium's parser built the tree the file
# spells out (html_check.py checks the file's own nesting; this catches
# markup the browser would repair differently, e.g. a <figure> in a <p>).
chrome --dump-dom "file://$dir/desktop.html" >"$dir/desktop.dom"
check "chromium builds the file's tree: every chart, rect and path where the file puts it" \
  python3 - "$dir/desktop.html" "$dir/desktop.dom" <<'EOF'
import html.parser, sys
VOID = {"meta", "br", "link", "img", "hr", "input"}
KEEP = {"svg", "rect", "path", "figure", "figcaption", "section", "table", "title", "text", "g", "p"}
class Tree(html.parser.HTMLParser):
    """Ancestors of the report's elements from a naive stack: right for a
    well-formed file and for Chromium's serialisation, so markup that the
    browser repairs (an unclosed or misnested element) shows as a
    difference."""
    def __init__(self):
        super().__init__()
        self.stack, self.sig = [], []
    def handle_starttag(self, tag, attrs, closed=False):
        if tag in ("html", "head", "body", "tbody"):   # implied or inserted by the parser
            return
        if tag in KEEP:
            self.sig.append("/".join(self.stack + [tag]))
        if not closed and tag not in VOID:
            self.stack.append(tag)
    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs, True)
    def handle_endtag(self, tag):
        if tag in VOID or tag in ("html", "head", "body", "tbody") or tag not in self.stack:
            return
        while self.stack.pop() != tag:
            pass
def tree(path):
    t = Tree()
    t.feed(open(path, encoding="utf-8", errors="replace").read())
    return t.sig
src, dom = tree(sys.argv[1]), tree(sys.argv[2])
diff = next(((a, b) for a, b in zip(src, dom) if a != b), (len(src), len(dom)))
assert len(src) > 100 and src == dom, diff
EOF

# A screenshot: the page paints (a blank page is a few KB of PNG).
chrome --window-size=1024,3000 --screenshot="$dir/desktop.png" "file://$dir/desktop.html" >/dev/null
check "chromium paints the report (screenshot)" python3 - "$dir/desktop.png" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", b[16:24])
assert (w, h) == (1024, 3000), (w, h)
assert len(b) > 40000, len(b)
EOF

if [ "$fail" -ne 0 ] && [ -s "$dir/chromium.err" ]; then
  echo "chromium's stderr (last lines):"; tail -n 5 "$dir/chromium.err"
fi
echo "render: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
