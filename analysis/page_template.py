"""The Jinja2 template of the reports' HTML page (report.html, compare.html).

One self-contained page: styles inline, figures embedded as base64 PNG (no external file,
no network). Kept as a module so that it is installed with the package like its code.
The page is built from :class:`rendering.Document`; block kinds: h, p, ul, table, fig.
"""

PAGE = """\
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ doc.title | plain }}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>
body { font: 14px/1.45 -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; color: #1b1b1b;
       max-width: 1180px; margin: 1.5em auto; padding: 0 1.2em; }
h1 { font-size: 1.6em; border-bottom: 2px solid #333; padding-bottom: .2em; }
h2 { font-size: 1.3em; margin-top: 1.8em; border-bottom: 1px solid #bbb; }
h3 { font-size: 1.1em; margin-top: 1.4em; }
code { background: #f1f1f1; padding: 0 .25em; border-radius: 3px; font-size: 92%; }
.tablewrap { overflow-x: auto; margin: .6em 0 1em; }
table { border-collapse: collapse; font-size: 12.5px; }
th, td { border: 1px solid #c8c8c8; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #eef1f5; position: sticky; top: 0; }
td:first-child, th:first-child { text-align: left; }
td.text { text-align: left; }
tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 12.5px; color: #444; margin-top: .2em; }
.problems { background: #fff4f4; border-left: 4px solid #c0392b; padding: .4em 1em; }
.summary { background: #f3f8ff; border-left: 4px solid #2a6fb0; padding: .4em 1em; }
.finding { color: #9b1c1c; }
.missing { color: #9b1c1c; font-style: italic; }
</style></head><body>
<h1>{{ doc.title | inline }}</h1>
{% for section in doc.sections %}
{% if section.title %}
<h{{ section.level }}>{{ section.title | inline }}</h{{ section.level }}>
{% endif %}
{% for block in section.blocks %}
{% if block.kind == "h" %}
<h{{ block.level }}>{{ block.text | inline }}</h{{ block.level }}>
{% elif block.kind == "p" %}
<p{% if block.css %} class="{{ block.css }}"{% endif %}>{{ block.text | inline }}</p>
{% elif block.kind == "ul" %}
<ul{% if block.css %} class="{{ block.css }}"{% endif %}>{% for item in block.items %}<li>{{ item | inline }}</li>{% endfor %}</ul>
{% elif block.kind == "table" %}
<div class="tablewrap"><table><thead><tr>{% for name in block.header %}<th>{{ name | inline }}</th>{% endfor %}</tr></thead><tbody>
{% for row in block.cells() %}<tr>{% for cell in row %}<td{% if not cell | numeric %} class="text"{% endif %}>{{ cell | inline }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div>
{% elif block.kind == "fig" %}
{% set image = block.path | embedded_png %}
<figure>{% if image.data %}<img alt="{{ (block.caption | plain) or block.path.stem }}" src="data:image/png;base64,{{ image.data }}">{% else %}<p class="missing">figure {{ block.path.name }} missing: {{ image.error }}</p>{% endif %}{% if block.caption %}<figcaption>{{ block.caption | inline }}</figcaption>{% endif %}</figure>
{% endif %}
{% endfor %}
{% endfor %}
</body></html>
"""
