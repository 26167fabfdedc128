// The report's sample browser (report/browser/ writes its data). Plain DOM, no library. A small
// study's data are gzip + base64 in #cb-data, every row there (no network); a large study's
// #cb-data is an index, and each run's rows a gzip'd JSON file fetched when the run is chosen
// (served by `candlebench view`). Every value is set as text, never as HTML.
(async function () {
  "use strict";
  const root = document.getElementById("cb-browser");

  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else if (v !== null && v !== undefined) node.setAttribute(k, v);
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  async function unpack(text) {
    const bytes = Uint8Array.from(atob(text.trim()), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  // A fetched file: gzip'd JSON (decompressed here unless a server already undid the gzip).
  async function fetched(url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(url + ": HTTP " + response.status);
    const bytes = new Uint8Array(await response.arrayBuffer());
    const gzipped = bytes[0] === 0x1f && bytes[1] === 0x8b;
    const stream = new Blob([bytes]).stream();
    return JSON.parse(await new Response(gzipped ? stream.pipeThrough(new DecompressionStream("gzip")) : stream).text());
  }

  const status = document.getElementById("cb-status");
  let D;
  try {
    D = await unpack(document.getElementById("cb-data").textContent);
  } catch (err) {
    status.textContent = "The sample data cannot be read: " + err;
    throw err;
  }
  const SPLIT = D.split || null; // a large study: the rows are per-run files
  // The rows of every run loaded so far, as one store (the whole study at once when it is small).
  const R = { run: [], sample: [], tier: [], reason: [], failed: [], answered: [], outcome: [], answer: [] };
  const S = { task: [], id: [], date: [], code: [], market: [], group: [], label: [] };
  const X = { text: [], answer: [], error: [], prompt: [], images: [], scores: [], extra: [] };
  const IMAGES = [], PROMPTS = SPLIT ? new Map() : D.prompts; // prompt index -> text
  const sampleOf = new Map(); // task + id -> sample index, so that every run's rows on a sample meet
  const bySample = new Map(); // sample index -> its rows (one per run loaded)
  const loaded = new Map(); // run index -> the promise of its rows
  let N = 0;

  function ingest(part) {
    const base = IMAGES.length;
    for (const image of part.images) IMAGES.push(image);
    const samples = part.samples.id.map((id, k) => {
      const key = part.samples.task[k] + "\u0000" + id;
      if (!sampleOf.has(key)) {
        sampleOf.set(key, S.id.length);
        for (const name of Object.keys(S)) S[name].push(part.samples[name][k]);
      }
      return sampleOf.get(key);
    });
    // Whole columns appended (a run's 100,000 rows: element by element would be the page's slowest step).
    for (const name of Object.keys(R)) R[name] = R[name].concat(part.rows[name]);
    for (const name of Object.keys(X)) X[name] = X[name].concat(part.detail[name]);
    for (; N < R.run.length; N++) {
      const s = (R.sample[N] = samples[R.sample[N]]);
      if (base) X.images[N] = X.images[N].map((i) => i + base);
      if (!bySample.has(s)) bySample.set(s, []);
      bySample.get(s).push(N);
    }
  }

  // A large study's run, fetched once however often it is asked for.
  function load(run) {
    if (!SPLIT) return Promise.resolve();
    if (!loaded.has(run)) {
      status.textContent = "Loading " + runName(run) + "…";
      loaded.set(run, fetched(D.runs[run].file).then(ingest).then(() => { status.textContent = ""; }, (err) => {
        loaded.delete(run);
        status.textContent = "The rows of " + runName(run) + " cannot be read: " + err +
          (location.protocol === "file:" ? " (open the report with `candlebench view OUT_DIR`: browsers read no file next to a page opened from disk)" : "");
        throw err;
      }));
    }
    return loaded.get(run);
  }

  async function prompt(index) {
    if (!SPLIT) return PROMPTS[index];
    if (!PROMPTS.has(index)) {
      const first = index - (index % SPLIT.prompts_per_file);
      const texts = await fetched(SPLIT.prompts + Math.floor(index / SPLIT.prompts_per_file) + ".json.gz");
      texts.forEach((text, k) => PROMPTS.set(first + k, text));
    }
    return PROMPTS.get(index);
  }

  const runName = (i) => D.runs[i].task + "/" + D.runs[i].name;
  if (!SPLIT) ingest(D);
  const outcomeOf = (i) => R.outcome[i] || "–";
  // The sample keys some sample of the study has: a dataset's own samples (no market) have no
  // date or stock, so no column and no filter of them.
  const hasKey = (key) => D.keys.includes(key);
  // Sortable columns: header, the row's value.
  const COLUMNS = [
    ["Run", (i) => runName(R.run[i])],
    hasKey("date") ? ["Date", (i) => S.date[R.sample[i]]] : null,
    hasKey("code") ? ["Stock", (i) => S.code[R.sample[i]]] : null,
    ["Group", (i) => S.group[R.sample[i]]],
    ["Tier", (i) => R.tier[i]],
    ["Reason", (i) => R.reason[i] || ""],
    ["Outcome", outcomeOf],
    ["Answer", (i) => (R.failed[i] ? "(failed)" : R.answer[i])],
    ["Label", (i) => S.label[R.sample[i]]],
  ].filter((c) => c !== null);
  // Sorted by date where there are dates, else by run.
  const state = { run: "", task: "", from: "", to: "", stock: "", group: "", parse: "", outcome: "",
                  sort: hasKey("date") ? 1 : 0, dir: 1, page: 0 };

  const clip = (text, n) => (text && text.length > n ? text.slice(0, n - 1) + "…" : text);
  const unique = (values) => [...new Set(values)].filter((v) => v !== null && v !== "").sort();
  const options = (pairs) => pairs.map(([value, text]) => h("option", { value }, text));
  // A large study's choices come with its index: its rows are not all here.
  const tiers = D.tiers || unique(R.tier), reasons = D.reasons || unique(R.reason), groups = D.groups || unique(S.group);
  const controls = {
    run: h("select", { id: "cb-run" }, options([["", SPLIT ? "all runs loaded" : "all runs"], ...D.runs.map((r, i) => [String(i), runName(i)])])),
    task: h("select", { id: "cb-task" }, options([["", "all tasks"], ...D.tasks.map((t, i) => [String(i), t])])),
    ...(hasKey("date") ? {
      from: h("input", { id: "cb-from", type: "date", title: "from date" }),
      to: h("input", { id: "cb-to", type: "date", title: "to date" }),
    } : {}),
    ...(hasKey("code") ? { stock: h("input", { id: "cb-stock", type: "search", placeholder: "stock", size: 8 }) } : {}),
    group: h("select", { id: "cb-group" }, options([["", "all groups"], ...groups.map((g) => [g, g])])),
    parse: h("select", { id: "cb-parse" }, options([
      ["", "any parse"], ["parsed", "parsed"], ["failed", "failed"],
      ...tiers.map((t) => ["tier:" + t, "tier " + t]), ...reasons.map((r) => ["reason:" + r, "reason: " + clip(r, 48)]),
    ])),
    outcome: h("select", { id: "cb-outcome" }, options([["", "any outcome"], ["right", "right"], ["wrong", "wrong"], ["none", "no verdict"]])),
  };
  for (const [key, node] of Object.entries(controls)) {
    node.addEventListener(node.tagName === "SELECT" ? "change" : "input", async () => {
      state[key] = node.value;
      state.page = 0;
      if (key === "run" && node.value !== "") await load(Number(node.value));
      render();
    });
  }

  function matches(i) {
    const s = R.sample[i];
    if (state.run !== "" && R.run[i] !== Number(state.run)) return false;
    if (state.task !== "" && S.task[s] !== Number(state.task)) return false;
    if (state.from && S.date[s] < state.from) return false;
    if (state.to && S.date[s] > state.to) return false;
    if (state.stock && !S.code[s].toLowerCase().includes(state.stock.toLowerCase())) return false;
    if (state.group && S.group[s] !== state.group) return false;
    const p = state.parse;
    if (p === "parsed" && R.failed[i]) return false;
    if (p === "failed" && !R.failed[i]) return false;
    if (p.startsWith("tier:") && R.tier[i] !== p.slice(5)) return false;
    if (p.startsWith("reason:") && R.reason[i] !== p.slice(7)) return false;
    // The failure view's link: failed with exactly this reason ("" = none given); a parsed answer's flag is not one.
    if (p.startsWith("failed:") && (!R.failed[i] || (R.reason[i] || "") !== p.slice(7))) return false;
    if (state.outcome === "none" ? R.outcome[i] !== null : state.outcome && R.outcome[i] !== state.outcome) return false;
    return true;
  }

  const count = h("span", { id: "cb-count" });
  const pageText = h("span", { id: "cb-page" });
  const prev = h("button", { id: "cb-prev", on: { click: () => { state.page--; render(); } } }, "‹ previous");
  const next = h("button", { id: "cb-next", on: { click: () => { state.page++; render(); } } }, "next ›");
  const head = h("tr", {}, COLUMNS.map(([title], c) => h("th", {
    "data-col": c, on: { click: () => { state.dir = state.sort === c ? -state.dir : 1; state.sort = c; render(); } },
  }, title)));
  const body = h("tbody", { id: "cb-rows" });
  const detail = h("div", { id: "cb-detail" });

  function render() {
    const shown = [];
    for (let i = 0; i < N; i++) if (matches(i)) shown.push(i);
    const value = COLUMNS[state.sort][1], keys = new Array(N);
    for (const i of shown) keys[i] = value(i); // each row's key once, not once per comparison
    shown.sort((a, b) => { const x = keys[a], y = keys[b]; return (x < y ? -1 : x > y ? 1 : a - b) * state.dir; });
    const size = D.page_size, pages = Math.max(1, Math.ceil(shown.length / size));
    state.page = Math.min(Math.max(0, state.page), pages - 1);
    // A row is a run's record of a sample; "answered" is core.results.has_answer's, computed by the writer.
    const answered = shown.reduce((n, i) => n + R.answered[i], 0);
    count.textContent = shown.length + " of " + N + " records, " + answered + " answered" +
      (SPLIT ? " (" + loaded.size + " of " + D.runs.length + " runs loaded)" : "");
    pageText.textContent = "page " + (state.page + 1) + " of " + pages;
    prev.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
    for (const th of head.children) th.className = Number(th.dataset.col) === state.sort ? (state.dir > 0 ? "asc" : "desc") : "";
    body.replaceChildren(...shown.slice(state.page * size, (state.page + 1) * size).map((i) =>
      h("tr", { "data-row": i, class: R.failed[i] ? "failed" : null, on: { click: () => show(i) } },
        COLUMNS.map(([, value]) => h("td", {}, clip(value(i), 48))))));
  }

  function pre(cls, text) { return h("pre", { class: cls }, text === null || text === undefined ? "–" : text); }

  function images(i) {
    if (X.prompt[i] === null) {
      return h("p", { class: "cb-note" }, "No model input recorded (a baseline, an import, or a run recorded before prompts were kept).");
    }
    if (!X.images[i].length) return h("p", { class: "cb-note" }, "No image: the prompt alone.");
    return h("div", { class: "cb-images" }, X.images[i].map((k) => {
      const [src, w, hgt, error] = IMAGES[k];
      if (!src) return h("p", { class: "cb-note" }, error || "image unavailable");
      const caption = h("figcaption", {});
      const img = h("img", { class: "cb-img", src, loading: "lazy" });
      img.addEventListener("load", () => {
        caption.textContent = (w || img.naturalWidth) + "×" + (hgt || img.naturalHeight) + " px as the model received it" +
          (w && img.naturalWidth !== w ? " (thumbnail)" : "");
      });
      return h("figure", {}, img, caption);
    }));
  }

  function claims(extra) {
    if (!extra || !extra.claims) return null;
    if (!extra.claims.length) return h("p", { class: "cb-note" }, "No claim found in the answer.");
    return h("table", { class: "cb-claims" }, h("tr", {}, ["Claim", "Anchor", "Anchor fact", "Verdict"].map((t) => h("th", {}, t))),
      extra.claims.map((c) => h("tr", { class: "v-" + c.verdict }, h("td", {}, (c.negated ? "not " : "") + c.claim + " — " + c.sentence),
        h("td", {}, c.anchor || "–"), h("td", {}, c.fact || "–"), h("td", {}, c.verdict))));
  }

  function runColumn(sample, chosen, side) {
    const rowsHere = bySample.get(sample);
    // A large study's runs not loaded yet: offered too, read when picked.
    const more = SPLIT ? D.runs.map((r, k) => k).filter((k) => !loaded.has(k) && D.tasks[S.task[sample]] === D.runs[k].task) : [];
    const picker = h("select", { class: "cb-pick", "data-side": side },
      rowsHere.map((i) => h("option", { value: i }, runName(R.run[i]))),
      more.map((k) => h("option", { value: "load:" + k }, runName(k) + " (load)")));
    picker.value = String(chosen);
    const box = h("div", { class: "cb-run", "data-run": runName(R.run[chosen]) });
    picker.addEventListener("change", async () => {
      if (!picker.value.startsWith("load:")) return box.replaceWith(runColumn(sample, Number(picker.value), side));
      const run = Number(picker.value.slice(5));
      await load(run);
      const row = bySample.get(sample).find((i) => R.run[i] === run);
      box.replaceWith(row === undefined ? h("div", { class: "cb-run cb-note" }, runName(run) + " has no answer on this sample.")
        : runColumn(sample, row, side));
    });
    const scores = X.scores[chosen];
    const promptText = pre("cb-prompt", X.prompt[chosen] === null ? null : SPLIT ? "loading…" : PROMPTS[X.prompt[chosen]]);
    if (SPLIT && X.prompt[chosen] !== null) {
      prompt(X.prompt[chosen]).then((text) => { promptText.textContent = text; }, (err) => { promptText.textContent = String(err); });
    }
    box.append(...[
      picker,
      h("p", {}, "tier ", h("b", {}, R.tier[chosen]), R.reason[chosen] ? " · " + R.reason[chosen] : "", " · outcome ", h("b", {}, outcomeOf(chosen))),
      images(chosen),
      h("h4", {}, "Raw response"), pre("cb-raw", X.text[chosen]),
      X.error[chosen] ? pre("cb-error", X.error[chosen]) : null,
      h("h4", {}, "Parsed answer"), pre("cb-answer", X.answer[chosen]),
      scores ? h("table", { class: "cb-scores" }, Object.entries(scores).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v === null ? "–" : String(v))))) : null,
      claims(X.extra[chosen]),
      h("details", {}, h("summary", {}, "Prompt"), promptText),
    ].filter((c) => c !== null));
    return box;
  }

  function show(i) {
    const s = R.sample[i];
    // Beside it: another model's answer first (base vs fine-tuned, a pass vs its first run), else a baseline's.
    const others = bySample.get(s).filter((j) => j !== i)
      .sort((a, b) => (D.runs[R.run[b]].kind === "model") - (D.runs[R.run[a]].kind === "model") || R.run[a] - R.run[b]);
    detail.replaceChildren(
      h("h3", {}, [D.tasks[S.task[s]], S.code[s], S.date[s], S.id[s]].filter(Boolean).join(" · ")),
      h("p", {}, "group ", h("b", {}, S.group[s] || "–"), S.market[s] ? " · market " + S.market[s] : ""),
      h("details", { open: "" }, h("summary", {}, "Label"), pre("cb-label", S.label[s])),
      h("div", { class: "cb-side" }, runColumn(s, i, "left"), others.length ? runColumn(s, others[0], "right") : null),
    );
    detail.scrollIntoView({ block: "start" });
  }

  function failures() {
    const counts = new Map();
    // A large study counts them with its index, every run's whether loaded or not.
    if (SPLIT) D.runs.forEach((r, run) => r.failures.forEach(([reason, n]) => counts.set(run + "\u0000" + reason, n)));
    for (let i = 0; i < (SPLIT ? 0 : N); i++) {
      if (!R.failed[i]) continue;
      const key = R.run[i] + "\u0000" + (R.reason[i] || "");
      counts.set(key, (counts.get(key) || 0) + 1);
    }
    if (!counts.size) return h("p", { id: "cb-failures" }, "No parse failures.");
    return h("table", { id: "cb-failures" }, h("tr", {}, ["Run", "Reason", "Failed", ""].map((t) => h("th", {}, t))),
      [...counts].sort().map(([key, n]) => {
        const [run, reason] = key.split("\u0000");
        return h("tr", {}, h("td", {}, runName(Number(run))), h("td", {}, reason || "(none given)"), h("td", {}, n),
          h("td", {}, h("button", { class: "cb-show-failures", on: { click: async () => {
            await load(Number(run));
            // Exactly the samples counted here: every other filter cleared.
            for (const [key, node] of Object.entries(controls)) { state[key] = ""; node.value = ""; }
            Object.assign(state, { run, parse: "failed:" + reason, page: 0 });
            controls.run.value = run;
            if (![...controls.parse.options].some((o) => o.value === state.parse)) {
              controls.parse.append(h("option", { value: state.parse }, "failed: " + clip(reason || "(none given)", 48)));
            }
            controls.parse.value = state.parse; render();
            body.scrollIntoView({ block: "start" });
          } } }, "show")));
      }));
  }

  if (SPLIT && D.runs.length) await load(0).catch(() => null); // the first page: the first run's rows (or why not)
  else status.textContent = "";
  root.replaceChildren(
    status,
    h("h3", {}, "Parse failures by reason"), failures(),
    h("div", { class: "cb-filters" }, Object.values(controls), count),
    h("table", { class: "cb-table" }, h("thead", {}, head), body),
    h("div", { class: "cb-pager" }, prev, pageText, next),
    detail,
  );
  render();
  root.dataset.ready = "true";
})();
