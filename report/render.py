"""The report's document model (tables, figures, a headline callout, sections) and its two renderers:
one self-contained HTML page and a Markdown twin.

Library module of :mod:`report.build`. The HTML page has no external resources and no scripts:
styles are inline and every figure is a ``data:image/png;base64`` URI, so the file can be mailed,
archived as a DVC output or opened offline. The Markdown twin has the same tables and writes the
same figures as PNG files into ``<stem>_files/`` next to it.
"""

from __future__ import annotations

import base64
import html
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""
    collapsed: bool = False  # HTML: folded in a <details> element (long, secondary tables)
    alert: bool = False  # shown in red (HTML) / flagged (Markdown): something needs a look


@dataclass
class Figure:
    name: str
    title: str
    png: bytes
    caption: str = ""


@dataclass
class Callout:
    """The headline box: a big first line, a summary, the verdict, a table and a small note."""

    title: str
    summary: str
    verdict: str
    table: Table | None
    note: str
    clear: bool  # True: the verdict is a clear recommendation; False: a caution (noise, no baseline)


@dataclass
class Section:
    key: str
    title: str
    blocks: list[Table | Figure | str] = field(default_factory=list)


@dataclass
class Report:
    title: str
    callout: Callout | None
    sections: list[Section]

    def tables(self, section: str) -> dict[str, Table]:
        """The tables of one section by title (for programmatic checks)."""
        sec = next(s for s in self.sections if s.key == section)
        return {b.title: b for b in sec.blocks if isinstance(b, Table)}


def fmt(v: Any) -> str:
    """Compact, stable number formatting for tables (ints with separators, floats with 4 decimals)."""
    if isinstance(v, bool) or v is None:
        return "" if v is None else str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "n/a" if math.isnan(v) else ("∞" if v > 0 else "−∞")
        if v != 0 and abs(v) < 1e-3:
            return f"{v:.2e}"
        if abs(v) >= 1e4:
            return f"{v:,.0f}"
        return f"{v:.4f}"
    return str(v)


def signed(v: float) -> str:
    return ("+" if v > 0 else "") + fmt(v)


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").lower() or "x"


# ----------------------------------------------------------------------------- HTML

CSS = """
body{font-family:system-ui,-apple-system,"DejaVu Sans",sans-serif;margin:0 auto;max-width:1180px;padding:1.5em;
color:#222;line-height:1.45}
h1{margin-bottom:.2em} h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
nav a{margin-right:1em}
.headline{border:2px solid #2f6f3e;background:#f1f8f2;border-radius:8px;padding:1em 1.4em;margin:1em 0}
.headline.caution{border-color:#a07a00;background:#fff9e6}
.headline .use{font-size:1.6em;font-weight:600}
.headline .verdict{font-size:1.1em;margin:.5em 0}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3} td.t,th.t{text-align:left}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
figure{margin:1em 0} figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#555} .note{font-size:.85em;color:#555}
summary{cursor:pointer;font-weight:600;margin:.6em 0}
table.alert caption,table.alert td{color:#b00000} table.alert{border:2px solid #b00000}
"""

_NUMERIC = re.compile(r"^[+−-]?[\d,.]+(e[+-]?\d+)?(x|%|/\d+)?( ± [\d.,e+-]+)?$|^n/a$")


def _td(v: Any) -> str:
    cls = ' class="t"' if _is_text(v) else ""
    return f"<td{cls}>{html.escape(fmt(v))}</td>"


def _is_text(v: Any) -> bool:
    return not (isinstance(v, (int, float)) or _NUMERIC.match(fmt(v)))


def html_table(t: Table) -> str:
    first = t.rows[0] if t.rows else []
    text_col = [i == 0 or (i < len(first) and _is_text(first[i])) for i in range(len(t.columns))]
    head = "".join(('<th class="t">' if tc else "<th>") + f"{html.escape(str(c))}</th>"
                   for c, tc in zip(t.columns, text_col, strict=True))
    body = "".join("<tr>" + "".join(_td(v) for v in row) + "</tr>" for row in t.rows)
    note = f'<p class="note">{html.escape(t.note)}</p>' if t.note else ""
    cls = ' class="alert"' if t.alert else ""
    table = (f"<table{cls}><caption>{html.escape(t.title)}</caption><thead><tr>{head}</tr></thead>"
             f"<tbody>{body}</tbody></table>{note}")
    if t.collapsed:
        return f"<details><summary>{html.escape(t.title)} ({len(t.rows)})</summary>{table}</details>"
    return table


def render_html(report: Report) -> str:
    """The whole page as one string; figures are inline ``data:image/png;base64`` URIs."""
    out = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(report.title)}"
           f"</title><style>{CSS}</style></head><body><h1>{html.escape(report.title)}</h1>"]
    out.append("<nav>" + "".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>' for s in report.sections) + "</nav>")
    c = report.callout
    if c is not None:
        out.append(f'<div class="headline{"" if c.clear else " caution"}" id="headline">'
                   f'<div class="use">{html.escape(c.title)}</div><div>{html.escape(c.summary)}</div>'
                   f'<div class="verdict">{html.escape(c.verdict)}</div>'
                   + (html_table(c.table) if c.table else "")
                   + f'<div class="note">{html.escape(c.note)}</div></div>')
    for s in report.sections:
        out.append(f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, Table):
                out.append(html_table(b))
            elif isinstance(b, Figure):
                data = base64.b64encode(b.png).decode("ascii")
                out.append(f'<figure><img alt="{html.escape(b.title)}" src="data:image/png;base64,{data}">'
                           f"<figcaption>{html.escape(b.caption or b.title)}</figcaption></figure>")
            else:
                out.append(f"<p>{html.escape(b)}</p>")
        out.append("</section>")
    out.append("</body></html>\n")
    return "\n".join(out)


# ----------------------------------------------------------------------------- Markdown

def _md_cell(v: Any) -> str:
    return fmt(v).replace("|", "\\|").replace("\n", " ")


def md_table(t: Table) -> str:
    lines = [f"**{'⚠ ' if t.alert else ''}{t.title}**", "", "| " + " | ".join(_md_cell(c) for c in t.columns) + " |",
             "|" + "|".join(":---" if i == 0 else "---:" for i in range(len(t.columns))) + "|"]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in t.rows]
    if t.note:
        lines += ["", f"_{t.note}_"]
    return "\n".join(lines) + "\n"


def render_markdown(report: Report, figure_dir: str | Path, figure_prefix: str) -> str:
    """The Markdown twin; writes every figure as ``figure_dir/<name>.png`` linked as ``figure_prefix/<name>.png``."""
    fdir = Path(figure_dir)
    fdir.mkdir(parents=True, exist_ok=True)
    out = [f"# {report.title}", ""]
    c = report.callout
    if c is not None:
        out += [f"> **{c.title}** — {c.summary}", ">", f"> {c.verdict}", ">", f"> {c.note}", ""]
        if c.table:
            out.append(md_table(c.table))
    for s in report.sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, Table):
                out.append(md_table(b))
            elif isinstance(b, Figure):
                (fdir / f"{b.name}.png").write_bytes(b.png)
                out += [f"![{b.title}]({figure_prefix}/{b.name}.png)", ""]
                if b.caption:
                    out += [f"_{b.caption}_", ""]
            else:
                out += [b, ""]
    return "\n".join(out) + "\n"


def write_report(report: Report, output: str | Path, *, markdown: bool = True) -> dict[str, str]:
    """Write ``output`` (HTML) atomically and, with ``markdown``, ``<stem>.md`` plus ``<stem>_files/*.png``."""
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = {"html": str(out)}
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(render_html(report), encoding="utf-8")
    os.replace(tmp, out)
    if markdown:
        md = out.with_suffix(".md")
        fdir = out.with_name(out.stem + "_files")
        text = render_markdown(report, fdir, fdir.name)
        tmp = md.with_name(md.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, md)
        written.update(markdown=str(md), figures=str(fdir))
    return written
