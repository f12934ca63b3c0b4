#!/usr/bin/env python3
"""docs_test.py - claims in README.md and docs/ checked against the tool.

Usage: docs_test.py VIDMM [RUN_OUTPUT] [--refresh]

Checks:
  demo     every README block between <!-- demo:begin --> and
           <!-- demo:end --> appears in `vidmm demo`'s output: its lines
           in order ("..." skips any number), after masking what depends
           on the host (system memory size, wall-clock milliseconds);
  verbs    the verbs of `vidmm --help` are the manual page's COMMANDS and
           the README's tool synopsis;
  options  every option a verb's --help lists is in the manual page, and
           every option the manual page or the README synopsis names is
           in some verb's --help (and accepted: not "unknown option");
  outputs  every block between <!-- output: ARGS --> and <!-- output:end -->
           in README.md and docs/*.md appears in what `vidmm ARGS` prints
           (stdout and stderr), as demo excerpts do; ARGS may be several
           commands joined by " ; " (the last one's output counts) and
           may name {tmp}, a scratch folder;
  counts   with RUN_OUTPUT (what tests/run.sh collected), the per-suite
           counts between <!-- counts:begin --> and <!-- counts:end --> in
           docs/TESTING.md are the ones the run printed.
--refresh rewrites the README excerpts (each line that no longer
matches replaced by the next demo line of the same shape, digits aside) and the counts instead of failing.
Prints "docs: N passed, M failed".
"""
import re
import subprocess
import sys

args = [a for a in sys.argv[1:] if a != "--refresh"]
refresh = "--refresh" in sys.argv
tool = args[0] if args else "build/vidmm"
run_output = args[1] if len(args) > 1 else None
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAILED docs: " + what)


def sh(*a):
    r = subprocess.run([tool] + list(a), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def mask(line):
    line = line.rstrip()
    if re.match(r"^0\s+system\s", line):
        line = re.sub(r"[0-9.]+ [KMGT]iB", "SIZE", line)   # the host's RAM
    line = re.sub(r"\(\d+ waited on the paging fence\)", "(N waited on the paging fence)", line)  # engine thread timing
    return re.sub(r"[0-9.]+ ms\b", "N ms", line)            # wall clock


def shape(line):
    # Digits and units aside, and column padding too (a wider number
    # shifts the columns after it).
    return re.sub(r"\s+", " ", re.sub(r"[0-9.]+( [KMGT]?i?B\b)?", "#", line.strip()))


def match_excerpt(lines, masked, raw):
    """An excerpt's lines in order in the output (masked for comparison;
    "..." skips any number; a long line may be cut short).  Returns the
    first line that is not there (None when all are) and the excerpt
    rewritten from the output (lines of the same shape replaced)."""
    at, out, bad = 0, [], None
    for l in lines:
        if l.strip() == "...":
            out.append(l)
            continue
        m = mask(l)
        j = next((k for k in range(at, len(masked)) if masked[k] == m or (len(m) > 40 and masked[k].startswith(m))), None)
        if j is None:
            j2 = next((k for k in range(at, len(masked)) if shape(masked[k]) == shape(m)), None)
            if bad is None:
                bad = l
            if j2 is None:
                out.append(l)
                continue
            j = j2
        out.append(l if masked[j] == m or masked[j].startswith(m) else raw[j])
        at = j + 1
    return bad, out


readme = open("README.md", encoding="utf-8").read()
man = open("docs/vidmm.1", encoding="utf-8").read()

# ---- demo -----------------------------------------------------------------
rc, demo_out, _ = sh("demo")
check(rc == 0, "vidmm demo exits 0 (rc %d)" % rc)
demo = [mask(l) for l in demo_out.splitlines()]
raw_demo = demo_out.splitlines()
blocks = list(re.finditer(r"<!-- demo:begin -->\n```\n(.*?)```\n<!-- demo:end -->", readme, re.S))
check(len(blocks) >= 1, "README has <!-- demo:begin --> blocks")
new_readme = readme
for b in blocks:
    lines = b.group(1).splitlines()
    at, out, bad = 0, [], None
    for l in lines:
        if l.strip() == "...":
            out.append(l)
            continue
        m = mask(l)
        # An excerpt may cut a long line short: a prefix matches.
        j = next((k for k in range(at, len(demo)) if demo[k] == m or (len(m) > 40 and demo[k].startswith(m))), None)
        if j is None:
            j2 = next((k for k in range(at, len(demo)) if shape(demo[k]) == shape(m)), None)
            if bad is None:
                bad = l
            if j2 is None:
                out.append(l)
                continue
            j = j2
        out.append(l if demo[j] == m or demo[j].startswith(m) else raw_demo[j])
        at = j + 1
    if refresh:
        new_readme = new_readme.replace(b.group(1), "\n".join(out) + "\n")
    else:
        check(bad is None, "README demo excerpt line not in `vidmm demo` output (make docs-refresh): %r" % bad)
if refresh and new_readme != readme:
    open("README.md", "w", encoding="utf-8").write(new_readme)
    print("docs: README demo excerpts refreshed")

# ---- outputs --------------------------------------------------------------
import glob
import shlex
import tempfile

scratch = tempfile.mkdtemp(prefix="vidmm-docs-")
cache = {}


def output_of(args):
    if args not in cache:
        text = ""
        for cmd in args.split(" ; "):
            r = subprocess.run([tool] + shlex.split(cmd.replace("{tmp}", scratch)), capture_output=True, text=True)
            text = r.stdout + r.stderr
        cache[args] = text
    return cache[args]


for path in ["README.md"] + sorted(glob.glob("docs/*.md")):
    text = open(path, encoding="utf-8").read()
    found = list(re.finditer(r"<!-- output: (.*?) -->\n```\n(.*?)```\n<!-- output:end -->", text, re.S))
    new_text = text
    for b in found:
        raw = output_of(b.group(1)).splitlines()
        bad, out = match_excerpt(b.group(2).splitlines(), [mask(l) for l in raw], raw)
        if refresh:
            new_text = new_text.replace(b.group(2), "\n".join(out) + "\n")
        else:
            check(bad is None, "%s: excerpt of `vidmm %s` has a line it no longer prints (make docs-refresh): %r"
                  % (path, b.group(1), bad))
    if refresh and new_text != text:
        open(path, "w", encoding="utf-8").write(new_text)
        print("docs: %s excerpts refreshed" % path)
    if path == "README.md":
        check(len(found) >= 2, "README has <!-- output: ... --> excerpts")
    if path == "docs/OUTPUTS.md":
        check(len(found) >= 2, "docs/OUTPUTS.md has <!-- output: ... --> excerpts")
subprocess.run(["rm", "-rf", scratch])

# ---- verbs ----------------------------------------------------------------
_, help_out, _ = sh("--help")
sec = help_out.split("verbs:\n", 1)[1].split("\n\n", 1)[0]
verbs = [l.split()[0] for l in sec.splitlines() if l.strip() and not l.split()[0].startswith("-")]
check(len(verbs) >= 10, "vidmm --help lists the verbs")
commands = man.split(".SH COMMANDS", 1)[1].split(".SH OPTIONS", 1)[0]
commands = re.sub(r"^\.RS\n.*?^\.RE\n", "", commands, flags=re.S | re.M)   # run's scenario list
man_verbs = re.findall(r'^\.TP\n\.B[I]? "?([a-z\\-]+)', commands, re.M)
man_verbs = [v.replace("\\-", "-") for v in man_verbs]
check(sorted(man_verbs) == sorted(verbs),
      "manual page COMMANDS %s are the tool's verbs %s" % (sorted(man_verbs), sorted(verbs)))
synopsis = man.split(".SH SYNOPSIS", 1)[1].split(".SH DESCRIPTION", 1)[0]
syn_verbs = set(v.replace("\\-", "-") for v in re.findall(r"^\.B vidmm ([a-z\\-]+)", synopsis, re.M))
check(syn_verbs == set(verbs), "manual page SYNOPSIS verbs %s" % sorted(syn_verbs ^ set(verbs)))
tool_block = readme.split("## The tool", 1)[1].split("```", 2)[1]
readme_verbs = set(re.findall(r"^vidmm ([a-z-]+)", tool_block, re.M))
for extra in re.findall(r"^vidmm scenarios \| (.*)$", tool_block, re.M):
    readme_verbs |= set(w for w in re.split(r"[ |]+", extra) if w and not w.startswith("-"))
check(readme_verbs == set(verbs), "README tool synopsis verbs differ: %s" % sorted(readme_verbs ^ set(verbs)))

# ---- options --------------------------------------------------------------
helps = {}
for v in verbs:
    _, o, _ = sh("help", v)
    helps[v] = o
help_opts = set()
for v, o in helps.items():
    for opt in set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", o)):
        help_opts.add(opt)
        if opt in ("--help", "--version"):
            continue
        rc, _, err = sh(v, opt, "x")
        check("unknown option '%s'" % opt not in err, "vidmm %s accepts %s, which its help lists" % (v, opt))
man_opts = set(re.findall(r"(--[a-z][a-z-]*)", man.replace("\\-", "-")))
readme_opts = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", tool_block))
for opt in sorted(help_opts - {"--help", "--version"}):
    check(opt in man_opts, "option %s (vidmm help) is in the manual page" % opt)
for opt in sorted(man_opts | readme_opts):
    check(opt in help_opts or opt in ("--help", "--version"),
          "option %s (manual page or README) is in some verb's --help" % opt)

# ---- counts ---------------------------------------------------------------
if run_output:
    got = {}
    for l in open(run_output, encoding="utf-8", errors="replace"):
        m = re.match(r"^(?:([a-z0-9]+): )?(\d+) passed, (\d+) failed", l)
        if m and m.group(1) != "total":
            got[m.group(1) if m.group(1) not in (None, "unit") else "library"] = int(m.group(2))
    testing = open("docs/TESTING.md", encoding="utf-8").read()
    m = re.search(r"<!-- counts:begin -->\n(.*?)<!-- counts:end -->", testing, re.S)
    check(m is not None, "docs/TESTING.md has <!-- counts:begin --> ... <!-- counts:end -->")
    if m:
        want = "".join("| %s | %d |\n" % (k, v) for k, v in got.items())
        text = "| suite (tests/run.sh) | checks passed |\n|---|---|\n" + want
        if refresh:
            if m.group(1) != text:
                open("docs/TESTING.md", "w", encoding="utf-8").write(testing.replace(m.group(1), text))
                print("docs: docs/TESTING.md counts refreshed")
        else:
            check(m.group(1) == text, "docs/TESTING.md counts differ from this run (make docs-refresh):\n" + text)

print("docs: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
