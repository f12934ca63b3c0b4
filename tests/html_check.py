#!/usr/bin/env python3
"""html_check.py - structural checks of a `vidmm --html` report.

Usage: html_check.py REPORT.html [TEXT_REPORT]

Parses the file with html.parser and checks what the HTML report promises
(docs/OUTPUTS.md): the tags balance (html.parser itself accepts almost
anything, so nesting is checked here), ids are unique, nothing is loaded
from outside the file (no script, link, img, iframe, object, style import
or url(); links only to #fragments), every chart is an <svg> with an id,
role="img", an aria-label and a <title> first, and draws something; the
four chart kinds are present (occupancy-segN and memmap-segN for every
segment of the summary table, usage-*, paging-bandwidth) with data drawn
(elements of class "series"); the summary's call count is the text
report's.  Exits 1 with the reasons on a failure.
"""
import html.parser
import re
import sys

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
DRAWN = {"rect", "path", "line", "polyline", "polygon", "circle", "ellipse", "text"}
SHAPES = {"rect", "path", "line", "polyline", "polygon", "circle", "ellipse"}
FORBIDDEN = {"script", "link", "img", "iframe", "object", "embed", "image", "use", "foreignobject"}


class Checker(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.errors = []
        self.stack = []
        self.ids = {}
        self.svgs = []          # [{id, attrs, children, shapes, series, first}]
        self.svg = None
        self.doctype = False
        self.in_td = None
        self.cells = []         # (table id, text) of summary cells
        self.table = None

    def err(self, msg):
        line, col = self.getpos()
        self.errors.append("line %d: %s" % (line, msg))

    def handle_decl(self, decl):
        if decl.lower() == "doctype html":
            self.doctype = True

    def start(self, tag, attrs, closed):
        a = dict(attrs)
        if tag in FORBIDDEN:
            self.err("external or scripted element <%s>" % tag)
        for k, v in attrs:
            if k.startswith("on"):
                self.err("event handler attribute %s" % k)
            if k in ("src", "srcset", "xlink:href"):
                self.err("%s= loads a resource" % k)
            if k == "href" and not (v or "").startswith("#"):
                self.err("link outside the file: %s" % v)
            if k == "style" and v and "url(" in v:
                self.err("url() in a style attribute")
        if "id" in a:
            if a["id"] in self.ids:
                self.err("duplicate id %s" % a["id"])
            self.ids[a["id"]] = tag
        if tag == "svg":
            if self.svg is not None and "chart" in a.get("class", ""):
                self.err("chart inside an svg")
            if "chart" in a.get("class", ""):
                self.svg = {"id": a.get("id"), "attrs": a, "children": 0, "shapes": 0, "series": 0, "first": None,
                            "title": "", "in_title": False}
                self.svgs.append(self.svg)
        elif self.svg is not None:
            if self.svg["first"] is None:
                self.svg["first"] = tag
                self.svg["in_title"] = tag == "title"
            if tag in DRAWN:
                self.svg["children"] += 1
            if tag in SHAPES:
                self.svg["shapes"] += 1
            if "series" in a.get("class", "").split():
                self.svg["series"] += 1
        if tag == "table":
            self.table = a.get("id")
        if tag in ("td", "th"):
            self.in_td = []
        if not closed and tag not in VOID:
            self.stack.append(tag)

    def handle_starttag(self, tag, attrs):
        self.start(tag, attrs, False)

    def handle_startendtag(self, tag, attrs):
        self.start(tag, attrs, True)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack:
            self.err("</%s> without an open element" % tag)
            return
        top = self.stack.pop()
        if top != tag:
            self.err("</%s> closes <%s>" % (tag, top))
        if tag == "title" and self.svg is not None:
            self.svg["in_title"] = False
        if tag == "svg" and self.svg is not None and "svg" not in self.stack:
            self.svg = None
        if tag in ("td", "th") and self.in_td is not None:
            self.cells.append((self.table, "".join(self.in_td).strip()))
            self.in_td = None
        if tag == "table":
            self.table = None

    def handle_data(self, data):
        if self.in_td is not None:
            self.in_td.append(data)
        if self.svg is not None and self.svg["in_title"]:
            self.svg["title"] += data


def main():
    path = sys.argv[1]
    raw = open(path, "rb").read()
    problems = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        print("%s: not UTF-8: %s" % (path, e))
        return 1
    if re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text):
        problems.append("control characters in the file")
    p = Checker()
    p.feed(text)
    p.close()
    problems += p.errors
    if not p.doctype:
        problems.append("no <!DOCTYPE html>")
    if p.stack:
        problems.append("unclosed elements at the end: %s" % p.stack)
    if "@import" in text or re.search(r"url\(", text):
        problems.append("the stylesheet loads something")
    if text.count("http://") != text.count('xmlns="http://www.w3.org/2000/svg"') or "https://" in text:
        problems.append("an absolute URL other than the SVG namespace")

    for s in p.svgs:
        a = s["attrs"]
        if not s["id"]:
            problems.append("a chart without an id")
        if a.get("role") != "img" or not a.get("aria-label"):
            problems.append("%s: no role=img / aria-label" % s["id"])
        if s["first"] != "title" or not s["title"].strip():
            problems.append("%s: <title> is not its first child" % s["id"])
        if a.get("aria-label") != s["title"]:
            problems.append("%s: aria-label and <title> differ" % s["id"])
        if s["children"] == 0 or s["shapes"] == 0:
            problems.append("%s: draws nothing" % s["id"])

    charts = {s["id"]: s for s in p.svgs}
    # Segment ids: the first column of the summary's segment table.
    seg_cells = [c for t, c in p.cells if t == "summary-segments"]
    ncol = 10
    segs = [int(seg_cells[i]) for i in range(ncol, len(seg_cells), ncol)]
    if not segs:
        problems.append("no segment rows in the summary table")
    for kind in ("occupancy-seg", "memmap-seg"):
        for sid in segs:
            if kind + str(sid) not in charts:
                problems.append("no chart %s%d" % (kind, sid))
        extra = [i for i in charts if i.startswith(kind) and int(i[len(kind):]) not in segs]
        if extra:
            problems.append("charts for segments not in the table: %s" % extra)
    kinds = {
        "occupancy": [s for i, s in charts.items() if i.startswith("occupancy-seg")],
        "usage": [s for i, s in charts.items() if i in ("usage-local", "usage-non-local")],
        "paging": [s for i, s in charts.items() if i == "paging-bandwidth"],
        "memory map": [s for i, s in charts.items() if i.startswith("memmap-seg")],
    }
    for k, lst in kinds.items():
        if not lst:
            problems.append("no %s chart" % k)
        elif not any(s["series"] for s in lst):
            problems.append("the %s charts draw no data" % k)
    for sid in ("summary", "summary-calls", "summary-segments", "summary-processes", "summary-paging"):
        if sid not in p.ids:
            problems.append("no #%s" % sid)

    if len(sys.argv) > 2:
        rep = open(sys.argv[2], encoding="utf-8", errors="replace").read()
        m = re.search(r"^calls: (\d+) \((\d+) failed\)", rep, re.M)
        calls = [c for t, c in p.cells if t == "summary-calls"]
        if not m:
            problems.append("no calls line in the text report")
        elif len(calls) < 4 or calls[1] != m.group(1) or calls[3] != m.group(2):
            problems.append("summary calls %s, text report %s" % (calls[:4], m.groups()))

    if problems:
        for x in problems[:30]:
            print("%s: %s" % (path, x))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
