"""``samples.html`` escaping: model outputs (and prompts) holding HTML or script are shown as text, never run, and
cannot end the page's data element early; the templates' autoescaping is on."""

from __future__ import annotations

import html.parser
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scifig_tasks.report.runs import load_runs
from scifig_tasks.report.samples import TITLE, environment, script_json, write_samples_page

HOSTILE = (
    "<script>document.title = 'pwned'</script>",
    "</script><script>document.title = 'pwned'</script>",
    "<!--<script>",  # opens the HTML parser's "double escaped" script state, where </script> ends nothing
    "<img src=x onerror=\"document.title = 'pwned'\"> & </SCRIPT >",
    "a \u2028 line separator, <b>bold</b>",
)


def write_results(folder: Path) -> None:
    run = folder / "model-<i>"
    run.mkdir(parents=True)
    results = {"results": {"grab_functions": {"accuracy,none": 0.0}}, "model_name": "model-<i>"}
    (run / "1_results.json").write_text(json.dumps(results))
    with (run / "1_samples_grab_functions.jsonl").open("w", encoding="utf-8") as handle:
        for index, output in enumerate(HOSTILE):
            record = {"pid": index, "task": "function", "correct": 0, "output_status": "ok", "judge": "not_used"}
            sample = {"doc_id": index, "target": "1", "filtered_resps": [output], "input": f"<b>prompt {index}</b>"}
            handle.write(json.dumps(sample | {"accuracy": 0.0, "breakdown": record}) + "\n")


class Scripts(html.parser.HTMLParser):
    """The text of every ``<script>`` element, as an HTML parser reads the page."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._open = dict(attrs)
            self.scripts.append((self._open, ""))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._open = None


@pytest.fixture
def page(tmp_path: Path) -> Path:
    write_results(tmp_path / "results")
    runs = load_runs([tmp_path / "results"])
    return write_samples_page(runs, tmp_path / "out", lambda tasks: dict.fromkeys(tasks, "not loaded"))


def test_outputs_stay_inside_the_data_element_and_round_trip(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    parser = Scripts()
    parser.feed(text)
    assert [attrs.get("id") for attrs, _ in parser.scripts] == ["data", None]  # the data, then the page's code
    data = json.loads(parser.scripts[0][1])
    assert [row["c"]["0"]["o"] for row in data["rows"]] == list(HOSTILE)
    assert data["models"] == ["model-<i>"]
    element = text.split('<script type="application/json" id="data">', 1)[1].split("</script>", 1)[0]
    assert "</" not in element and "<!--" not in element
    assert f"<title>{TITLE}</title>" in text and "pwned" not in text.split("<script", 1)[0]


def test_script_json_and_autoescaping() -> None:
    assert str(script_json({"o": "</script><!--<script>"})) == '{"o":"<\\/script><\\u0021--<script>"}'
    assert json.loads(str(script_json({"o": "</script><!--<script>"}))) == {"o": "</script><!--<script>"}
    template = environment().from_string("<p>{{ value }}</p>")
    assert template.render(value="<script>x</script> & \"'") == (
        "<p>&lt;script&gt;x&lt;/script&gt; &amp; &#34;&#39;</p>"
    )


def test_the_browser_shows_hostile_outputs_as_text(page: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (bash .ci/setup installs it)")
    command = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        page.as_uri(),
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    dom = completed.stdout
    assert completed.returncode == 0 and "</html>" in dom, completed.stderr[-3000:]
    assert re.search(r'<p id="count"[^>]*>5 of 5 documents shown</p>', dom)  # the data parsed, the code ran
    assert f"<title>{TITLE}</title>" in dom and "pwned</title>" not in dom
    cells = re.findall(r'<td class="cell" data-model="0">(.*?)</td>', dom, re.S)
    assert len(cells) == 5
    assert "&lt;script&gt;document.title = 'pwned'&lt;/script&gt;" in cells[0]
    assert "&lt;!--&lt;script&gt;" in cells[2]
    assert "&lt;img src=x onerror=" in cells[3] and '<img src="x"' not in dom
    parser = Scripts()
    parser.feed(dom)
    assert [attrs.get("id") for attrs, _ in parser.scripts] == ["data", None]  # no element made from an output
