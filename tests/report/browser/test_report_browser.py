"""The report's sample browser in a real headless browser (Debian's chromium + chromium-driver via
selenium; tests/install_browser.sh). Under CANDLEBENCH_REQUIRE_BROWSER=1 (make test) a missing
browser is an error, never a skip.

One forecast study on the committed slice: the baselines and the tiny model from `run`, the tiny
model again under a pixel budget (so its images are preprocessed ones), and an imported run whose
unparseable answers and unanswered samples are known."""

from __future__ import annotations

import base64
import gzip
import json
import os
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from candlebench.core.results import answered_rows
from candlebench.rendering.model_input import fit_size

from helpers import cli

MODEL = "tiny_qwen2_5_vl-transformers"
SMALL = "tiny-small"
BUDGET = 120_000
GARBAGE = "I would rather not say."

_PROBLEM = next((f"no {b} on PATH" for b in ("chromium", "chromedriver") if shutil.which(b) is None), None)
if _PROBLEM is None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        _PROBLEM = "selenium is not installed (pip install -e '.[test]')"
if _PROBLEM and os.environ.get("CANDLEBENCH_REQUIRE_BROWSER") == "1":
    raise RuntimeError(f"CANDLEBENCH_REQUIRE_BROWSER=1 but the browser tests cannot run: {_PROBLEM}")
pytestmark = [pytest.mark.browser, pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM))]


def common(out: Path) -> list[str]:
    return ["data=slice", "data.codes=[AC,ALI]", "task.samples.interval=60", f"out_dir={out}"]


@pytest.fixture(scope="module")
def study(tmp_path_factory, env) -> Path:
    out = tmp_path_factory.mktemp("browser")
    args = common(out)
    cli("run", "tasks=[forecast]", *args, env=env)
    cli("infer", *args, f"infer.run_name={SMALL}", f"infer.image.max_pixels={BUDGET}", env=env)
    cli("score", *args, f"score.run={SMALL}", env=env)
    samples = pd.read_parquet(out / "forecast" / "samples.parquet")
    # Every third answer unparseable, every seventh sample unanswered (an empty answer is no answer).
    lines = [{"sample_id": s, "text": None if k % 7 == 1 else "Score: 0.25" if k % 3 else GARBAGE}
             for k, s in enumerate(samples["sample_id"])]
    answers = out / "other.jsonl"
    answers.write_text("".join(json.dumps(x) + "\n" for x in lines))
    cli("import", str(answers), *args, "infer.run_name=other", env=env)
    cli("score", *args, "score.run=other", env=env)
    cli("report", *args, env=env)
    cli("report", *args, "report.embed=true", f"report.dir={out / 'mailed'}", env=env)
    cli("report", *args, "report.embed=false", f"report.dir={out / 'files'}", env=env)
    cli("report", *args, "report.embed=false", "report.bundle=true", f"report.dir={out / 'bundled'}", env=env)
    return out


def parsed(out: Path, run: str) -> pd.DataFrame:
    return pd.read_parquet(out / "forecast" / "runs" / run / "parsed.parquet")


def counted(shown: pd.DataFrame, total: int) -> str:
    """The browser's count line of ``shown`` rows of ``total``: answered as every stage counts it."""
    return f"{len(shown)} of {total} records, {answered_rows(shown).sum()} answered"


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1600",
                "--allow-file-access-from-files"):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=webdriver.ChromeService(shutil.which("chromedriver")), options=options)
    yield driver
    driver.quit()


def open_report(driver, page: Path) -> None:
    driver.get(page.as_uri())
    deadline = time.monotonic() + 30
    while not driver.execute_script("return document.getElementById('cb-browser').dataset.ready"):
        assert time.monotonic() < deadline, driver.find_element("id", "cb-browser").text
        time.sleep(0.05)


def errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def shown_rows(driver) -> list[tuple[str, str, str]]:
    """(run, date, stock) of every row the filters leave, over all pages."""
    from selenium.webdriver.common.by import By

    rows = []
    while True:
        for tr in driver.find_elements(By.CSS_SELECTOR, "#cb-rows tr"):
            cells = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            rows.append((cells[0], cells[1], cells[2]))
        nxt = driver.find_element(By.ID, "cb-next")
        if not nxt.is_enabled():
            return rows
        nxt.click()


def pick(driver, control: str, value: str) -> None:
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element("id", control)).select_by_value(value)


def run_names(driver) -> list[str]:
    """The runs the open page's run filter lists, in its order (its first option is every run)."""
    from selenium.webdriver.common.by import By

    return [o.text for o in driver.find_elements(By.CSS_SELECTOR, "#cb-run option")][1:]


def click_row(driver, study: Path, run: str, sample_id: str) -> None:
    """Open the detail of ``run``'s answer on a sample of ``study`` in the open page (filtered to that
    run, found by its date and stock): whichever page is open, whatever ran before."""
    from selenium.webdriver.common.by import By

    row = parsed(study, run).set_index("sample_id").loc[sample_id]
    pick(driver, "cb-run", str(run_names(driver).index(f"forecast/{run}")))
    pick(driver, "cb-parse", "")
    for tr in driver.find_elements(By.CSS_SELECTOR, "#cb-rows tr"):
        cells = [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        if cells[1] == str(row["cutoff"])[:10] and cells[2] == row["code"]:
            tr.click()
            return
    raise AssertionError(f"no row of {run} on {sample_id} on the first page")


@pytest.fixture(scope="module")
def opened(browser, study):
    open_report(browser, study / "report" / "report.html")
    return browser


def test_the_report_opens_with_every_record_counting_its_answers_and_no_console_error(opened, study):
    assert errors(opened) == []
    names = sorted(p.name for p in (study / "forecast" / "runs").iterdir() if (p / "parsed.parquet").exists())
    assert sorted(run_names(opened)) == [f"forecast/{n}" for n in names]
    rows = pd.concat([parsed(study, n) for n in names])
    assert 0 < answered_rows(rows).sum() < len(rows)  # the imported run's empty answers
    assert opened.find_element("id", "cb-count").text == counted(rows, len(rows))


def test_filtering_to_failed_parses_shows_exactly_those(opened, study):
    pick(opened, "cb-run", "")
    pick(opened, "cb-parse", "failed")
    expected = sorted(
        (f"forecast/{run}", str(r["cutoff"])[:10], r["code"])
        for run in (p.name for p in (study / "forecast" / "runs").iterdir() if (p / "parsed.parquet").exists())
        for r in parsed(study, run).to_dict("records") if pd.isna(r["answer"])
    )
    other = parsed(study, "other")
    assert other["answer"].isna().sum() == sum(other["text"] == GARBAGE) + other["text"].isna().sum() > 0
    assert sorted(shown_rows(opened)) == expected
    pick(opened, "cb-parse", "")


def test_the_failure_view_links_each_reason_to_its_raw_texts(opened, study):
    from selenium.webdriver.common.by import By

    other = parsed(study, "other")
    reason = other.loc[other["text"] == GARBAGE, "reason"].iloc[0]
    for tr in opened.find_elements(By.CSS_SELECTOR, "#cb-failures tr")[1:]:
        cells = tr.find_elements(By.TAG_NAME, "td")
        if cells[0].text == "forecast/other" and cells[1].text == reason:
            assert cells[2].text == str(int((other["reason"] == reason).sum()))
            cells[3].find_element(By.TAG_NAME, "button").click()
            break
    else:
        raise AssertionError(f"no failure row for forecast/other: {reason}")
    rows = shown_rows(opened)
    assert len(rows) == int((other["reason"] == reason).sum()) and {r[0] for r in rows} == {"forecast/other"}
    opened.find_elements(By.CSS_SELECTOR, "#cb-rows tr")[0].click()
    assert opened.find_element(By.CSS_SELECTOR, "#cb-detail .cb-run .cb-raw").text == GARBAGE
    pick(opened, "cb-run", "")
    pick(opened, "cb-parse", "")


def test_a_samples_detail_shows_the_images_the_model_received_and_its_raw_response(opened, study):
    from selenium.webdriver.common.by import By

    tiny = parsed(study, MODEL)
    sample = tiny.iloc[0]
    click_row(opened, study, MODEL, sample["sample_id"])
    left = opened.find_element(By.CSS_SELECTOR, "#cb-detail .cb-run")
    assert left.find_element(By.CSS_SELECTOR, ".cb-raw").text == sample["text"].strip()
    assert left.find_element(By.CSS_SELECTOR, ".cb-answer").text == sample["answer"]
    images = left.find_elements(By.CSS_SELECTOR, "img.cb-img")
    charts = sample["charts"].split(",")
    assert len(images) == len(charts) == 2
    for img, chart in zip(images, charts):
        width, height = opened.execute_script(
            "const i = arguments[0]; return i.decode().then(() => [i.naturalWidth, i.naturalHeight])", img)
        assert (width, height) == Image.open(study / "forecast" / sample[f"image_{chart}"]).size
    prompt = left.find_element(By.CSS_SELECTOR, ".cb-prompt")
    assert opened.execute_script("return arguments[0].textContent", prompt) == sample["prompt"]
    assert errors(opened) == []


def test_two_runs_side_by_side_on_one_sample(opened, study):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    small = parsed(study, SMALL).set_index("sample_id")
    sample_id = parsed(study, MODEL)["sample_id"].iloc[1]
    click_row(opened, study, MODEL, sample_id)
    right = Select(opened.find_element(By.CSS_SELECTOR, "#cb-detail .cb-pick[data-side=right]"))
    right.select_by_visible_text(f"forecast/{SMALL}")
    left, shown = opened.find_elements(By.CSS_SELECTOR, "#cb-detail .cb-run")
    assert left.get_attribute("data-run") == f"forecast/{MODEL}" and shown.get_attribute("data-run") == f"forecast/{SMALL}"
    assert shown.find_element(By.CSS_SELECTOR, ".cb-raw").text == small.loc[sample_id, "text"].strip()
    # Its images are the preprocessed ones: the pixel budget applied, as the runner applies it.
    source = Image.open(study / "forecast" / small.loc[sample_id, "image_daily"]).size
    img = shown.find_elements(By.CSS_SELECTOR, "img.cb-img")[0]
    size = opened.execute_script("const i = arguments[0]; return i.decode().then(() => [i.naturalWidth, i.naturalHeight])", img)
    assert tuple(size) == fit_size(source, BUDGET) != source
    assert errors(opened) == []


def test_embedded_thumbnails_travel_in_one_file(browser, study):
    from selenium.webdriver.common.by import By

    page = study / "mailed" / "report.html"
    alone = study / "alone"
    alone.mkdir()
    shutil.copy(page, alone / "report.html")  # nothing next to it: every image is inside
    open_report(browser, alone / "report.html")
    browser.find_element(By.CSS_SELECTOR, "#cb-rows tr:not(.failed)").click()
    for img in browser.find_elements(By.CSS_SELECTOR, "#cb-detail img.cb-img"):
        assert img.get_attribute("src").startswith("data:image/webp;base64,")
        width = browser.execute_script("const i = arguments[0]; return i.decode().then(() => i.naturalWidth)", img)
        assert 0 < width <= 360
    assert errors(browser) == []
    assert page.stat().st_size > (study / "files" / "report.html").stat().st_size  # than charts beside it


@pytest.mark.parametrize("made, moved", [("report", "page"), ("bundled", "folder")])
def test_a_small_studys_page_and_a_bundled_folder_travel_with_their_charts(browser, study, made, moved, tmp_path):
    """report.html of a small study, copied alone, shows every chart at its own size (the charts are
    inside it, report.embed=auto); a bundled report's folder, copied anywhere, does too."""
    from selenium.webdriver.common.by import By

    where = tmp_path / "elsewhere"
    if moved == "page":
        where.mkdir()
        shutil.copy(study / made / "report.html", where / "report.html")
    else:
        shutil.copytree(study / made, where)
    open_report(browser, where / "report.html")
    sample = parsed(study, MODEL).iloc[0]
    click_row(browser, study, MODEL, sample["sample_id"])
    images = browser.find_element(By.CSS_SELECTOR, "#cb-detail .cb-run").find_elements(By.CSS_SELECTOR, "img.cb-img")
    assert len(images) == 2
    for img, chart in zip(images, sample["charts"].split(",")):
        size = browser.execute_script("const i = arguments[0]; return i.decode().then(() => [i.naturalWidth, i.naturalHeight])", img)
        assert tuple(size) == Image.open(study / "forecast" / sample[f"image_{chart}"]).size
    assert errors(browser) == []


def test_the_report_opens_on_results_and_never_scrolls_sideways(study, browser):
    """Results first, provenance last and folded, a table of contents; at 1400 and 900 px no element
    pushes the page wider than the window (wide tables scroll inside their box)."""
    from selenium.webdriver.common.by import By

    open_report(browser, study / "report" / "report.html")
    titles = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "h2")]
    assert titles[0].startswith("Forecast") and titles[-2:] == ["Provenance", "Samples"], titles
    assert browser.find_element(By.CSS_SELECTOR, "details > summary h2").text == "Provenance"
    contents = [a.get_attribute("href").split("#")[-1] for a in browser.find_elements(By.CSS_SELECTOR, "nav a")]
    assert contents[-1] == "samples" and all(browser.find_elements(By.ID, c) for c in contents)
    numeric = browser.find_elements(By.CSS_SELECTOR, ".box td.n")
    assert numeric and numeric[0].value_of_css_property("text-align") == "right"
    for width in (1400, 900):
        browser.set_window_size(width, 1200)
        page, window = browser.execute_script(
            "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert page <= window, (width, page, window)
        # the headline table fits without scrolling; a wider one scrolls with its run column in view
        inner, outer = browser.execute_script("const b = arguments[0]; return [b.scrollWidth, b.clientWidth]",
                                              browser.find_element(By.CSS_SELECTOR, ".box"))
        assert inner <= outer, (width, inner, outer)
    assert browser.find_element(By.CSS_SELECTOR, ".box td").value_of_css_property("position") == "sticky"
    assert errors(browser) == []
    browser.set_window_size(1400, 1600)


@pytest.fixture(scope="module")
def viewed(study, env):
    """The study's report with one data file per run (report.split_above=0: as a paper-scale study
    writes it), served by `candlebench view` on localhost."""
    import subprocess

    from helpers import CANDLEBENCH

    folder = study / "split"
    cli("report", *common(study), "report.split_above=0", f"report.dir={folder}", env=env)
    server = subprocess.Popen([CANDLEBENCH, "view", str(folder), "--port", "0"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = server.stdout.readline()
        assert "http://127.0.0.1:" in line, line
        yield folder, line.split()[2]
    finally:
        server.terminate()
        server.wait(timeout=30)


def wait_for(driver, script: str, expected) -> None:
    deadline = time.monotonic() + 30
    while (got := driver.execute_script(script)) != expected:
        assert time.monotonic() < deadline, (got, expected)
        time.sleep(0.05)


def test_through_candlebench_view_a_chosen_runs_rows_are_fetched_and_shown(viewed, browser, study):
    from selenium.webdriver.common.by import By

    folder, url = viewed
    assert len(list((folder / "browser" / "runs").iterdir())) > 1
    embedded = (folder / "report.html").read_text().split("id='cb-data'>")[1].split("<")[0]
    index = json.loads(gzip.decompress(base64.b64decode(embedded)))
    assert "rows" not in index and len(index["runs"]) > 1  # the page holds the runs' index, no row
    browser.get(url)
    wait_for(browser, "return document.getElementById('cb-browser').dataset.ready", "true")
    runs = [o.text for o in browser.find_elements(By.CSS_SELECTOR, "#cb-run option")][1:]
    names = sorted(p.name for p in (study / "forecast" / "runs").iterdir() if (p / "parsed.parquet").exists())
    assert runs == [f"forecast/{n}" for n in names]
    first = parsed(study, names[0])
    assert browser.find_element(By.ID, "cb-count").text == f"{counted(first, len(first))} (1 of {len(names)} runs loaded)"

    tiny = parsed(study, MODEL)
    pick(browser, "cb-run", str(runs.index(f"forecast/{MODEL}")))
    wait_for(browser, "return document.getElementById('cb-count').textContent",
             f"{counted(tiny, len(first) + len(tiny))} (2 of {len(names)} runs loaded)")
    expected = sorted((f"forecast/{MODEL}", str(r["cutoff"])[:10], r["code"]) for r in tiny.to_dict("records"))
    assert sorted(shown_rows(browser)) == expected

    # A row's detail: the raw response from the run's file, the prompt from the shared prompt files.
    row = browser.find_element(By.CSS_SELECTOR, "#cb-rows tr")
    date, code = [td.text for td in row.find_elements(By.TAG_NAME, "td")][1:3]
    sample = tiny[(tiny["cutoff"].astype(str).str[:10] == date) & (tiny["code"] == code)].iloc[0]
    row.click()
    left = browser.find_element(By.CSS_SELECTOR, "#cb-detail .cb-run")
    assert left.find_element(By.CSS_SELECTOR, ".cb-raw").text == sample["text"].strip()
    wait_for(browser, "return document.querySelector('#cb-detail .cb-run .cb-prompt').textContent", sample["prompt"])
    assert errors(browser) == []


def test_samples_without_dates_or_stocks_get_no_such_column_or_filter(browser, env, tmp_path, monkeypatch):
    """The example task of docs/development.md (samples of no market: no cutoff, no code): its page
    has no Date or Stock column, no date or stock filter, rows sorted by run, and a detail title
    without empty parts; a study of stocks and dates keeps both (the tests above)."""
    from selenium.webdriver.common.by import By

    from candlebench.stages.graph import run_stage
    from helpers import ROOT

    monkeypatch.setenv("CANDLEBENCH_TASKS", str(ROOT / "docs" / "example_task"))
    monkeypatch.setenv("CANDLEBENCH_CACHE", env["CANDLEBENCH_CACHE"])
    common = ["task=candle", "task.samples.n=6", f"out_dir={tmp_path}"]
    for stage in ("samples", "render", "baseline"):
        run_stage(stage, common)
    for name in ("always_bullish", "coin"):
        run_stage("score", [*common, f"score.run={name}"])
    run_stage("report", [*common, "tasks=[candle]"])
    open_report(browser, tmp_path / "report" / "report.html")
    assert errors(browser) == []
    heads = [th.text for th in browser.find_elements(By.CSS_SELECTOR, ".cb-table th")]
    assert heads[:2] == ["Run", "Group"] and not {"Date", "Stock"} & set(heads), heads
    assert not browser.find_elements(By.ID, "cb-from") and not browser.find_elements(By.ID, "cb-stock")
    rows = [tr.find_element(By.TAG_NAME, "td").text for tr in browser.find_elements(By.CSS_SELECTOR, "#cb-rows tr")]
    assert rows == ["candle/always_bullish"] * 6 + ["candle/coin"] * 6  # sorted by run
    browser.find_element(By.CSS_SELECTOR, "#cb-rows tr").click()
    title = browser.find_element(By.CSS_SELECTOR, "#cb-detail h3").text
    assert title.startswith("candle · candle-00") and title.count("·") == 1, title
