"""A tiny document model for reports, rendered to Markdown and to one self-contained HTML page.

Blocks (headings, paragraphs, tables, figures, cards, examples, key-value lists, preformatted text
and collapsed ``<details>`` sections) are plain dataclasses; ``render_markdown`` and
``render_html`` turn a list of them into text. The HTML embeds figures as base64 PNG and has no
scripts or external links, so it opens without a server.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Heading:
    """A section heading (level 1-3), with an optional HTML anchor."""

    level: int
    text: str
    anchor: str = ""


@dataclass
class Para:
    """A paragraph; ``tone`` styles it, ``label`` leads it in bold ("Guaranteed: ...")."""

    text: str
    tone: str = ""  # "", "warn", "good", "note", "claim" (the headline's guaranteed/estimated lines)
    label: str = ""


@dataclass
class Table:
    """A table; ``flagged`` rows are highlighted, ``numeric`` columns right-aligned."""

    headers: list[str]
    rows: list[list[str]]
    flagged: list[bool] = field(
        default_factory=list
    )  # rows to highlight (above the cap); last column: status
    numeric: set[int] = field(default_factory=set)  # right-aligned columns
    links: list[str] = field(default_factory=list)  # per row: an in-page anchor its first cell links to


@dataclass
class Figure:
    """A PNG figure, linked from Markdown and embedded in HTML."""

    relpath: str  # relative to out_dir
    png: bytes
    alt: str


@dataclass
class Cards:
    """Headline numbers as cards: ``(label, value, detail, tone)``, tone "", "bad" or "good"."""

    cards: list[tuple[str, str, str, str]]  # (label, value, detail, tone)


@dataclass
class Examples:
    """Example sentences: ``(attribute, text, (start, end) of the marked mention, document)``."""

    items: list[tuple[str, str, tuple[int, int], str]]  # (attribute, text, mark span, document)


@dataclass
class KeyValue:
    """A list of labelled values (settings)."""

    items: list[tuple[str, str]]


@dataclass
class Pre:
    """Preformatted text (raw JSON)."""

    text: str


@dataclass
class Details:
    """A collapsed section (HTML ``<details>``) holding other blocks."""

    summary: str
    blocks: list[Block]


Block = Heading | Para | Table | Figure | Cards | Examples | KeyValue | Pre | Details


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(blocks: Sequence[Block]) -> str:
    """The blocks as Markdown (figures linked by relative path, details as HTML)."""
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            anchor = f'<a id="{html.escape(b.anchor)}"></a>\n\n' if b.anchor else ""  # the target of links
            out.append(anchor + "#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            lead = f"**{b.label}:** " if b.label else ""
            out.append(("**Warning:** " if b.tone == "warn" else "") + lead + b.text)
        elif isinstance(b, Table):
            lines = ["| " + " | ".join(_md_cell(h) for h in b.headers) + " |", "|" + "---|" * len(b.headers)]
            for i, row in enumerate(b.rows):
                cells = [_md_cell(c) for c in row]
                if i < len(b.links) and b.links[i] and cells:
                    cells[0] = f"[{cells[0]}](#{b.links[i]})"
                lines.append("| " + " | ".join(cells) + " |")
            out.append("\n".join(lines))
        elif isinstance(b, Cards):
            out.append(
                "\n".join(
                    f"* **{label}: {value}**" + (f" ({d})" if d else "") for label, value, d, _ in b.cards
                )
            )
        elif isinstance(b, Examples):
            lines = []
            for kw, text, (s, e), doc in b.items:
                lines.append(
                    f"* *{kw}*: {_md_cell(text[:s])}**{_md_cell(text[s:e])}**{_md_cell(text[e:])} ({doc})"
                )
            out.append("\n".join(lines))
        elif isinstance(b, KeyValue):
            out.append("\n".join(f"* **{k}:** {v}" for k, v in b.items))
        elif isinstance(b, Pre):
            out.append("```\n" + b.text + "\n```")
        elif isinstance(b, Details):
            out.append(
                f"<details><summary>{html.escape(b.summary)}</summary>\n\n{render_markdown(b.blocks)}\n</details>"
            )
        else:
            out.append(f"![{b.alt}]({b.relpath})")
        out.append("")
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;max-width:1100px;margin:1.5em auto;
padding:0 1.2em;color:#1f2328;line-height:1.45;background:#fff;overflow-wrap:break-word}
h1{font-size:1.6em;margin:0.2em 0 0.1em}
h2{border-bottom:1px solid #d0d7de;padding-bottom:0.2em;margin-top:1.8em;font-size:1.3em}
h3{margin:1.2em 0 0.4em;font-size:1.05em}
.sub{color:#57606a;margin:0 0 1em}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:1em 0}
.card{flex:1 1 200px;border:1px solid #d0d7de;border-radius:8px;padding:10px 14px;background:#f6f8fa}
.card .label{font-size:0.8em;text-transform:uppercase;letter-spacing:0.04em;color:#57606a}
.card .value{font-size:1.45em;font-weight:600;margin:2px 0}
.card .detail{font-size:0.85em;color:#57606a}
.card.bad{background:#fff1f0;border-color:#f5a39c}.card.bad .value{color:#b42318}
.card.good{background:#effaf2;border-color:#9fd9ae}.card.good .value{color:#1a7f37}
p.lead{font-size:1.15em;margin:0.4em 0 0.8em}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0.8em 0}
dl.kv dt{font-weight:600;color:#57606a}dl.kv dd{margin:0}
p.warn{background:#fff8e5;border-left:4px solid #d4a72c;padding:6px 10px}
p.good{color:#1a7f37}
p.claim{border-left:4px solid #8c959f;background:#f6f8fa;padding:6px 10px;margin:0.4em 0}
p.note{color:#57606a;font-size:0.9em}
div.table{overflow-x:auto;max-width:100%;margin:0.5em 0 1.2em}
table{border-collapse:collapse;font-size:0.88em}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.status td:last-child{min-width:9em}
tr.flag td{background:#fff1f0}
td:first-child{white-space:nowrap}
img{max-width:100%}
figure{margin:0.5em 0}
ul.examples{padding-left:1.2em;font-size:0.9em}
ul.examples li{margin:0.25em 0}
ul.examples .doc{color:#57606a}
mark{background:#ffd8d3;padding:0 2px}
details{margin:1.5em 0;border:1px solid #d0d7de;border-radius:8px;padding:0.5em 1em}
summary{cursor:pointer;font-weight:600}
pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:0.8em;max-height:30em}
"""


def _html_blocks(blocks: Sequence[Block]) -> list[str]:
    body: list[str] = []
    esc = html.escape
    for b in blocks:
        if isinstance(b, Heading):
            anchor = f' id="{esc(b.anchor)}"' if b.anchor else ""
            body.append(f"<h{b.level}{anchor}>{esc(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            cls = f' class="{b.tone}"' if b.tone else ""
            lead = f"<b>{esc(b.label)}:</b> " if b.label else ""
            body.append(f"<p{cls}>{lead}{esc(b.text)}</p>")
        elif isinstance(b, Table):
            head = "".join(f"<th>{esc(h)}</th>" for h in b.headers)
            rows = []
            for i, row in enumerate(b.rows):
                flag = ' class="flag"' if i < len(b.flagged) and b.flagged[i] else ""
                link = b.links[i] if i < len(b.links) else ""
                cells = "".join(
                    f'<td class="num">{esc(c)}</td>'
                    if j in b.numeric
                    else f'<td><a href="#{esc(link)}">{esc(c)}</a></td>'
                    if j == 0 and link
                    else f"<td>{esc(c)}</td>"
                    for j, c in enumerate(row)
                )
                rows.append(f"<tr{flag}>{cells}</tr>")
            status = (
                ' class="status"' if b.flagged else ""
            )  # rows with a cap status: keep its column readable
            # in a box that scrolls sideways if the table is wider than the page: the page never does
            body.append(
                f'<div class="table"><table{status}><thead><tr>{head}</tr></thead>'
                f"<tbody>{''.join(rows)}</tbody></table></div>"
            )
        elif isinstance(b, Cards):
            cards = "".join(
                f'<div class="card {tone}"><div class="label">{esc(label)}</div>'
                f'<div class="value">{esc(value)}</div><div class="detail">{esc(detail)}</div></div>'
                for label, value, detail, tone in b.cards
            )
            body.append(f'<div class="cards">{cards}</div>')
        elif isinstance(b, Examples):
            items = "".join(
                f"<li><b>{esc(kw)}</b>: {esc(text[:s])}<mark>{esc(text[s:e])}</mark>{esc(text[e:])} "
                f'<span class="doc">({esc(doc)})</span></li>'
                for kw, text, (s, e), doc in b.items
            )
            body.append(f'<ul class="examples">{items}</ul>')
        elif isinstance(b, KeyValue):
            items = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in b.items)
            body.append(f'<dl class="kv">{items}</dl>')
        elif isinstance(b, Pre):
            body.append(f"<pre>{esc(b.text)}</pre>")
        elif isinstance(b, Details):
            inner = "\n".join(_html_blocks(b.blocks))
            body.append(f"<details><summary>{esc(b.summary)}</summary>\n{inner}\n</details>")
        else:
            data = base64.b64encode(b.png).decode("ascii")
            body.append(f'<figure><img alt="{esc(b.alt)}" src="data:image/png;base64,{data}"></figure>')
    return body


def render_html(blocks: Sequence[Block], title: str) -> str:
    """The blocks as one self-contained HTML page."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(_html_blocks(blocks))
        + "\n</body></html>\n"
    )
