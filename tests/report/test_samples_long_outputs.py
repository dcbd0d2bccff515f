"""``samples.html`` with long unbroken model outputs, through ``scifig report``: a GRAB run written here in lmms-eval's
format (a results file and a sample log, no model run) with eight outputs of 20,000 characters without a line break
(one of them hiding an HTML payload past the fold), rendered in headless Chromium with the page's filters in its
address. Every long field (the output and the answer read from it, a many-line prompt) is folded to its first lines
or characters with a "show all" control, the page has no horizontal overflow folded or unfolded, the filters still
apply and the payload stays text.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.lmms import offline_env

TASK = "grab_functions"
LENGTH = 20_000
WRONG = {0, 4, 7}  # the rows the probe reads (documents 0 and 7) are among those the filter shows
PAYLOAD = "<img src=x onerror=\"document.title='pwned'\">"
PROMPT_LINES = 30


def output(index: int) -> str:
    """A 20,000-character output without a line break or space (document 7 hides the payload near its end)."""
    text = (f"{index}abcdefghij" * LENGTH)[:LENGTH]
    return text[: LENGTH - 100] + PAYLOAD + text[LENGTH - 100 + len(PAYLOAD) :] if index == 7 else text


def write_run(folder: Path) -> None:
    """One model's GRAB ``grab_functions`` run of eight documents (the ones in :data:`WRONG` wrong)."""
    folder.mkdir(parents=True)
    accuracy = {"accuracy,none": (8 - len(WRONG)) / 8, "breakdown,none": {}}
    results = {
        "results": {"grab": {"alias": "grab"} | accuracy, TASK: {"alias": TASK} | accuracy},
        "groups": {"grab": {"alias": "grab"} | accuracy},
        "versions": {TASK: "2.2"},
        "n-samples": {TASK: {"original": 8, "effective": 8}},
        "model_name": "long-talker",
        "date": "20250101_000000",
    }
    (folder / "20250101_000000_results.json").write_text(json.dumps(results))
    lines = []
    for doc in range(8):
        record = {"pid": doc, "task": "function", "category": "Extrema", "complexity": 0, "precision": "integer"}
        record |= {"correct": int(doc not in WRONG), "output_status": "ok", "judge": "not_used", "extracted": None}
        prompt = "\n".join(f"line {n} of the prompt" for n in range(PROMPT_LINES)) if doc == 0 else f"[q{doc}]"
        sample = {"doc_id": doc, "target": "7", "filtered_resps": [output(doc)], "input": prompt}
        lines.append(json.dumps(sample | {"accuracy": float(doc not in WRONG), "breakdown": record}))
    (folder / f"20250101_000000_samples_{TASK}.jsonl").write_text("\n".join(lines) + "\n")


PROBE = """<pre id="probe"></pre><script>
window.addEventListener("load", () => {
  const root = document.documentElement;
  const state = () => ({overflow: root.scrollWidth - root.clientWidth, title: document.title,
                        images: document.querySelectorAll("img").length});
  const row = (n) => [...document.querySelectorAll("tr.sample")].find(
    (tr) => tr.querySelector("td:nth-child(2) .meta").textContent.startsWith("doc " + n + ":"));
  const field = (tr, selector) => {
    const node = tr.querySelector(selector);
    const button = node && node.querySelector("button");
    return {text: node ? node.textContent.length : -1, button: button ? button.textContent : null};
  };
  const found = {count: document.getElementById("count").textContent, folded: state(),
                 shown: [...document.querySelectorAll("tr.sample")].filter((tr) => !tr.hidden).length};
  const seven = row(7);
  found.answer = field(seven, "td.cell .answer");
  found.output = field(seven, "td.cell .text");
  found.prompt = field(row(0), "td:nth-child(3) .text");
  seven.querySelector("td.cell .answer button").click();
  seven.querySelector("td.cell .text button").click();
  found.answerOpen = field(seven, "td.cell .answer");
  found.answerText = seven.querySelector("td.cell .answer").textContent;
  found.outputOpen = field(seven, "td.cell .text");
  found.open = state();
  document.getElementById("probe").textContent = JSON.stringify(found);
});
</script>
"""


def probe(page: Path, fragment: str, profile: Path) -> dict:
    """Render a copy of ``page`` with :data:`PROBE` appended, at ``#fragment``, in headless Chromium; what it found."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is not installed (bash .ci/setup installs it)"
    copy = page.with_name(f"probe-{page.name}")
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]
    command += ["--window-size=1280,900", "--virtual-time-budget=10000", "--dump-dom", f"{copy.as_uri()}#{fragment}"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    found = re.search(r'<pre id="probe">(.*?)</pre>', completed.stdout, re.S)
    assert completed.returncode == 0 and found, completed.stderr[-3000:]
    return json.loads(found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))


@pytest.mark.slow
@pytest.mark.cli
def test_long_unbroken_outputs_are_folded_and_wrapped(tmp_path: Path) -> None:
    write_run(tmp_path / "results" / "long-talker")
    out = tmp_path / "report"
    command = [str(Path(sys.executable).parent / "scifig"), "report", str(tmp_path / "results"), "--out", str(out)]
    env = offline_env(tmp_path / "env")
    made = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert made.returncode == 0, made.stdout + made.stderr[-4000:]

    found = probe(out / "samples.html", "task=grab_functions&correct=wrong", tmp_path / "profile")

    assert found["count"] == f"{len(WRONG)} of 8 documents shown" and found["shown"] == len(WRONG)  # the filters
    assert found["folded"]["overflow"] <= 0 and found["open"]["overflow"] <= 0  # wrapped, folded or not
    for name in ("answer", "output"):  # the first ~600 characters, then the control
        assert 0 < found[name]["text"] < 800 and found[name]["button"].startswith("show all"), found[name]
        assert found[f"{name}Open"]["text"] > LENGTH and found[f"{name}Open"]["button"] == "show less"
    assert found["answerText"].startswith("answer: 7abcdefghij") and PAYLOAD in found["answerText"]
    assert found["prompt"]["text"] < 300 and found["prompt"]["button"].startswith("show all")  # folded by lines
    assert found["open"]["title"] == found["folded"]["title"] != "pwned" and found["open"]["images"] == 0
