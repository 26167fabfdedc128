"""Your own captioned charts (`task.dataset=`): a JSONL manifest or a folder, each problem named by
line or file; the images are copied in (not drawn), then inferred and scored like the generated set."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from helpers import cli

REFERENCE = ("The chart shows a steady advance from 40.00 to 48.00 between 2024-01-02 and 2024-03-28 on the daily "
             "time frame. We remain constructive.")


def _charts(folder: Path, n: int, slice_market) -> list[Path]:
    from candlebench.market.bars import chart_bars, history_before
    from candlebench.rendering.chart import ChartSpec, render_chart

    folder.mkdir(parents=True, exist_ok=True)
    spec = ChartSpec(ma_windows=(5, 10, 20), ma_colors=("black", "orange", "blue"))
    bars = slice_market.stock("AC")
    out = []
    for i in range(n):
        cutoff = bars["date"].iloc[100 + 40 * i]
        png = render_chart(chart_bars(history_before(bars, cutoff), "daily", (5, 10, 20), 60), spec, f"chart {i}")
        (folder / f"c{i}.png").write_bytes(png)
        out.append(folder / f"c{i}.png")
    return out


@pytest.fixture()
def manifest(tmp_path, slice_market) -> Path:
    images = _charts(tmp_path / "charts", 3, slice_market)
    path = tmp_path / "mine.jsonl"
    lines = [{"image": f"charts/{p.name}", "reference": f"{REFERENCE} Chart {i}.", "id": f"c{i}",
              "metadata": {"degree": ["daily"], "time": ["2024-01-02"], "price": ["40.00", "48.00"]}}
             for i, p in enumerate(images)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("line, says", [
    ("not json", "line 2: not JSON"),
    (json.dumps({"image": "charts/c0.png"}), "line 2: no ['reference']"),
    (json.dumps({"image": "charts/none.png", "reference": "x"}), "line 2: image"),
    (json.dumps({"image": "mine.jsonl", "reference": "x"}), "is not a readable image"),
    (json.dumps({"image": "charts/c1.png", "reference": "x", "metadata": {"wave": ["(3)"]}}), "metadata category ['wave'] unknown"),
    (json.dumps({"image": "charts/c1.png", "reference": "x", "metadata": {"time": "2024"}}), "metadata.time must be a list"),
    # A second entry with the first one's id: both lines named.
    (json.dumps({"image": "charts/c1.png", "reference": "x", "id": "c0"}), "line 2: the same id 'c0' as "),
    (json.dumps({"image": "charts/c1.png", "reference": " \n\t "}), "line 2: no ['reference'] (or only whitespace)"),
    (json.dumps({"image": "charts/c1.png", "reference": "x", "date": "soon"}), "date 'soon' is not a date"),
])
def test_a_bad_manifest_line_is_named(manifest, line, says):
    from candlebench.tasks.caption.dataset import DatasetError, read_dataset

    first = manifest.read_text().splitlines()[0]
    manifest.write_text(first + "\n" + line + "\n")
    with pytest.raises(DatasetError, match="mine.jsonl") as err:
        read_dataset(manifest)
    assert says in str(err.value)
    if "same id" in says:
        assert str(err.value).endswith("mine.jsonl, line 1; give each entry its own id")


def test_a_charts_code_and_date_are_kept_as_its_stock_and_date(manifest):
    """Kept, not used as market keys: two charts of one stock and day (two sources) are two samples."""
    from candlebench.tasks.caption.dataset import read_dataset

    lines = [json.loads(line) for line in manifest.read_text().splitlines()]
    for line in lines[:2]:
        line.update(code="AC", date="2024-03-01")
    manifest.write_text("".join(json.dumps(line) + "\n" for line in lines))
    frame = read_dataset(manifest)
    assert list(frame["sample_id"].map(len)) == [16] * 3 and frame["sample_id"].is_unique
    assert list(frame["stock"].iloc[:2]) == ["AC", "AC"] and pd.isna(frame["stock"].iloc[2])
    assert list(frame["date"].iloc[:2]) == [pd.Timestamp("2024-03-01")] * 2 and pd.isna(frame["date"].iloc[2])


def test_a_folder_of_images_with_their_texts(tmp_path, slice_market):
    from candlebench.tasks.caption.dataset import DatasetError, read_dataset

    images = _charts(tmp_path / "f", 2, slice_market)
    images[0].with_suffix(".txt").write_text(REFERENCE)
    with pytest.raises(DatasetError, match="c1.png: no reference c1.txt"):
        read_dataset(tmp_path / "f")
    images[1].with_suffix(".txt").write_text(REFERENCE + " Two.")
    images[1].with_suffix(".json").write_text(json.dumps({"price": ["40.00"]}))
    frame = read_dataset(tmp_path / "f")
    assert json.loads(frame["metadata"].iloc[1])["price"] == ["40.00"]
    # No market keys made up (code = the id, a 1970 cutoff): the charts are the dataset's.
    assert not {"code", "cutoff"} & set(frame.columns) and frame["stock"].isna().all() and frame["date"].isna().all()
    # Two images of one name (c0.png, c0.jpg) cannot be told apart by id: the message says to rename, not to add ids.
    from PIL import Image

    Image.open(images[0]).convert("RGB").save(images[0].with_suffix(".jpg"))
    with pytest.raises(DatasetError, match=r"c0.(png|jpg): an image of the same name as .*c0.(png|jpg); rename one"):
        read_dataset(tmp_path / "f")


def test_your_own_charts_run_end_to_end(manifest, tmp_path, env):
    out = tmp_path / "out"
    common = ["tasks=[caption]", f"task.dataset={manifest}", "score.n_boot=50", "infer.generation.max_new_tokens=24",
              f"out_dir={out}"]
    cli("run", *common, env={**env, "HF_HUB_OFFLINE": "1"})
    samples = pd.read_parquet(out / "caption" / "samples.parquet")
    assert len(samples) == 3 and set(samples["market"]) == {"mine"}
    for _, row in samples.iterrows():  # the user's own bytes reach the model, not a drawn chart
        assert row["image_daily"].startswith("images/samples/")  # filed by sample: no stock or date made up
        copied = (out / "caption" / row["image_daily"]).read_bytes()
        assert hashlib.sha256(copied).digest() == hashlib.sha256(Path(row["source_image"]).read_bytes()).digest()
    m = json.loads((out / "caption" / "runs" / "describer" / "metrics.json").read_text())
    assert m["bleu4"] == pytest.approx(1.0, abs=1e-4) and m["coverage_price"] == 1.0
    tiny = json.loads((out / "caption" / "runs" / "tiny_qwen2_5_vl-transformers" / "metrics.json").read_text())
    assert tiny["n"] == 3 and tiny["n_missing_records"] == 0
    # A changed chart is copied again and its answer asked again; the others are kept.
    first = Path(samples["source_image"].iloc[0])
    first.write_bytes(Path(samples["source_image"].iloc[1]).read_bytes())
    again = cli("run", *common, env={**env, "HF_HUB_OFFLINE": "1"}).stdout
    assert "1 generated, 2 already done" in again
