#!/usr/bin/env python3
"""README doc test: every command the README shows in a ```console block is
run on the build, and what it prints is compared with the README, figure by
figure, with no tolerance; every table marked with a doc-table comment is
compared with the JSON its commands print. A change that moves a figure
fails here, naming the README line, until the README says what the build
prints (``--update`` writes it; review the diff).

Format (what a README section follows to be tested):

``console`` blocks
    ```console
    $ build/capplan simulate scenarios/kimi-k2.6-kv-fp8.json --row
    kimi-k2.6-kv-fp8   conc   64 | out 1417.5 tok/s ...
    ```
    A line starting with "$ " is a command; the lines after it, up to the
    next "$ " line or the end of the block, are what it prints on stdout,
    line for line. A last line "..." means the output goes on (only the
    lines above it are compared); "..." nowhere else. A command followed by
    no lines must only succeed (exit 0). Commands run from the source root
    through /bin/sh (pipes such as `| grep` pick lines out of long output);
    "build/capplan" is replaced with the build's binary. A command ending
    in a backslash continues on the next line.

``console skip`` blocks
    Shown, not run: a command that needs a GPU, the network, or minutes.
    The text around it says why.

``sh``, ``python`` and other blocks are not run (set-up steps, API sketches
whose module has its own test, tests/python/).

Tables: an HTML comment right above a Markdown table::

    <!-- doc-table
    row: sim=build/capplan simulate A.json --json ; cap=build/capplan capacity ... --json
    row: sim=build/capplan simulate B.json --json ; cap=...
    col 2: sim /gpus
    col 3: sim /memory/weights_bytes_per_gpu GiB
    col 4: cap /kv_capacity_tokens
    col 5.2: sim /gpu_joules_per_output_token
    -->
    | configuration | GPUs | ... |

One "row:" line per data row of the table, in order, naming the commands
whose JSON fills it; "col N:" (1-based) says which command's JSON value (a
JSON pointer) column N shows, "col N.K:" the K-th number of that cell
("2.694 (0.711)": 5.2 is 0.711). A unit after the pointer converts the
value: GiB (bytes / 2^30), % (x 100). The cell's number is compared with
that value rounded to the decimals the cell shows ("1,116,960" has none,
"47.5 ms" one); thousands separators are ignored when reading and kept when
writing. A cell "-" says the JSON has no value there (a figure the run does
not have), and is checked to stay so.

Usage: readme_doc_test.py --capplan BUILD/capplan --source SRC_DIR [--readme FILE]
       [--update]. Exit 0 when everything matches; 1 with one line per
difference ("README.md:123: ..."); 77 when the capplan binary is missing.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


class Doc:
    def __init__(self, path):
        self.path = path
        with open(path) as f:
            self.lines = f.read().split("\n")
        self.errors = []

    def error(self, lineno, message):
        self.errors.append(f"{os.path.basename(self.path)}:{lineno}: {message}")


class Runner:
    """Runs each distinct command once, from the source root."""

    def __init__(self, capplan, source):
        self.capplan = os.path.abspath(capplan)
        self.source = source
        self.cache = {}

    def run(self, command):
        if command not in self.cache:
            cmd = re.sub(r"(?<![\w/.-])build/capplan(?![\w/.-])", shlex.quote(self.capplan), command)
            p = subprocess.run(["/bin/sh", "-c", cmd], cwd=self.source, capture_output=True,
                               text=True, timeout=600)
            self.cache[command] = p
        return self.cache[command]


def console_blocks(doc):
    """Yields (info, first_line_index, [line indices]) of each fenced block."""
    i = 0
    while i < len(doc.lines):
        m = re.match(r"^```(\S*)\s*(.*)$", doc.lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        lang, extra = m.group(1), m.group(2).split()
        start = i + 1
        j = start
        while j < len(doc.lines) and not doc.lines[j].startswith("```"):
            j += 1
        yield lang, extra, list(range(start, j))
        i = j + 1


def commands_of(doc, indices):
    """[(command, line index, [expected line indices])]."""
    out = []
    k = 0
    while k < len(indices):
        line = doc.lines[indices[k]]
        if not line.startswith("$ "):
            doc.error(indices[k] + 1, "console block: output before any '$ ' command")
            k += 1
            continue
        at = indices[k]
        cmd = line[2:]
        while cmd.endswith("\\") and k + 1 < len(indices):
            k += 1
            cmd = cmd[:-1] + " " + doc.lines[indices[k]].strip()
        k += 1
        expected = []
        while k < len(indices) and not doc.lines[indices[k]].startswith("$ "):
            expected.append(indices[k])
            k += 1
        out.append((cmd, at, expected))
    return out


def check_command(doc, runner, cmd, at, expected, update):
    p = runner.run(cmd)
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or [""])[-1]
        doc.error(at + 1, f"'{cmd}' exited {p.returncode}: {err}")
        return
    printed = p.stdout.rstrip("\n").split("\n") if p.stdout else []
    want = [doc.lines[i] for i in expected]
    more = bool(want) and want[-1] == "..."
    if more:
        want = want[:-1]
        expected = expected[:-1]
    if "..." in want:
        doc.error(at + 1, "console block: '...' may only end a command's output")
        return
    got = printed[:len(want)] if more else printed
    if got == want:
        return
    if update:
        # Replace the expected lines with what was printed.
        first = expected[0] if expected else at + 1
        for i in reversed(expected):
            del doc.lines[i]
        for n, line in enumerate(got):
            doc.lines.insert(first + n, line)
        return
    for n in range(max(len(want), len(got))):
        w = want[n] if n < len(want) else "<nothing>"
        g = got[n] if n < len(got) else "<nothing>"
        if w != g:
            line = expected[n] + 1 if n < len(expected) else at + 1
            doc.error(line, f"'{cmd}' printed {g!r}, the README says {w!r}")
            return


def check_console(doc, runner, update):
    # Walk blocks bottom-up so that --update's line edits keep earlier
    # indices valid.
    blocks = [b for b in console_blocks(doc) if b[0] == "console"]
    count = 0
    for lang, extra, indices in reversed(blocks):
        if "skip" in extra:
            continue
        for cmd, at, expected in reversed(commands_of(doc, indices)):
            check_command(doc, runner, cmd, at, expected, update)
            count += 1
    return count


def json_pointer(doc_json, pointer):
    node = doc_json
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(part)] if part.isdigit() and int(part) < len(node) else None
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            node = None
        if node is None:
            return None
    return node


def format_like(value, cell_number):
    decimals = len(cell_number.split(".")[1]) if "." in cell_number else 0
    text = f"{value:,.{decimals}f}" if "," in cell_number else f"{value:.{decimals}f}"
    return text


def parse_table_directive(doc, start):
    """Reads "<!-- doc-table ... -->" from line `start`; returns (rows, cols,
    index of the line after "-->")."""
    rows, cols = [], {}
    i = start + 1
    while i < len(doc.lines) and doc.lines[i].strip() != "-->":
        line = doc.lines[i].strip()
        if line.startswith("row:"):
            named = {}
            for part in line[4:].split(" ; "):
                name, _, cmd = part.strip().partition("=")
                named[name.strip()] = cmd.strip()
            rows.append((i, named))
        elif line.startswith("col "):
            m = re.match(r"col (\d+)(?:\.(\d+))?: (\S+) (\S+)(?: (GiB|%))?$", line)
            if not m:
                doc.error(i + 1, "doc-table: expected 'col N[.K]: NAME /json/pointer [GiB|%]'")
            else:
                cols[(int(m.group(1)), int(m.group(2) or 1))] = (m.group(3), m.group(4),
                                                                 m.group(5))
        elif line:
            doc.error(i + 1, "doc-table: expected 'row:' or 'col N:'")
        i += 1
    return rows, cols, i + 1


def check_table(doc, runner, start, update):
    rows, cols, i = parse_table_directive(doc, start)
    while i < len(doc.lines) and not doc.lines[i].startswith("|"):
        i += 1
    table = []
    while i < len(doc.lines) and doc.lines[i].startswith("|"):
        table.append(i)
        i += 1
    data = [t for t in table[2:]]  # after the header and its rule
    if len(data) != len(rows):
        doc.error(start + 1, f"doc-table: {len(rows)} row lines for {len(data)} table rows")
        return 0
    checked = 0
    for (row_at, named), t in zip(rows, data):
        cells = doc.lines[t].split("|")[1:-1]
        for (col, nth), (name, pointer, unit) in sorted(cols.items()):
            if name not in named:
                doc.error(row_at + 1, f"doc-table: no command named {name} in this row")
                continue
            p = runner.run(named[name])
            if p.returncode != 0:
                err = (p.stderr.strip().splitlines() or [""])[-1]
                doc.error(row_at + 1, f"'{named[name]}' exited {p.returncode}: {err}")
                continue
            value = json_pointer(json.loads(p.stdout), pointer)
            if isinstance(value, (int, float)):
                value = value / 2**30 if unit == "GiB" else value * 100 if unit == "%" else value
            cell = cells[col - 1]
            if value is None and cell.strip() == "-":
                checked += 1  # the summary has no such figure, and the cell says so
                continue
            found = list(NUMBER.finditer(cell))
            m = found[nth - 1] if len(found) >= nth else None
            if not isinstance(value, (int, float)) or m is None:
                doc.error(t + 1, f"column {col}: {pointer} of '{named[name]}' is {value!r}, "
                                 f"the cell {cell.strip()!r}")
                continue
            text = format_like(value, m.group(0))
            checked += 1
            if text == m.group(0):
                continue
            if update:
                cells[col - 1] = cell[:m.start()] + text + cell[m.end():]
                doc.lines[t] = "|" + "|".join(cells) + "|"
            else:
                doc.error(t + 1, f"column {col}: the build prints {text} ({pointer} of "
                                 f"'{named[name]}'), the README says {m.group(0)}")
    return checked


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--capplan", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--readme")
    ap.add_argument("--update", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(a.capplan):
        print(f"skipped: {a.capplan} is not built")
        return 77
    doc = Doc(a.readme or os.path.join(a.source, "README.md"))
    if not any(doc.lines):
        print(f"{doc.path}: empty; nothing to check")
        return 1
    runner = Runner(a.capplan, a.source)
    tables = [i for i, line in enumerate(doc.lines) if line.strip() == "<!-- doc-table"]
    figures = sum(check_table(doc, runner, i, a.update) for i in tables)
    commands = check_console(doc, runner, a.update)
    if a.update:
        # Renamed into place, so a reader never sees a half-written file.
        tmp = doc.path + ".doc-test-update"
        with open(tmp, "w") as f:
            f.write("\n".join(doc.lines))
        os.replace(tmp, doc.path)
    for e in doc.errors:
        print(e)
    print(f"{commands} commands, {len(tables)} tables ({figures} figures): "
          f"{'updated' if a.update else 'checked'}, {len(doc.errors)} differences")
    return 1 if doc.errors else 0


if __name__ == "__main__":
    sys.exit(main())
