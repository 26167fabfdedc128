"""Whole-text token embeddings for the caption task's BERTScore and COS: one encoder pass per text
serves both, and references are embedded once and kept on disk.

Why not the libraries' own entry points: ``bert_score.BERTScorer.score`` and
``SentenceTransformer.encode`` each run the encoder again on every text of every run, and both cut
a text at the encoder's window (bert-score at 512 word pieces, all-MiniLM-L6-v2 at 256), so a
caption's closing opinion, at its end, never reached COS. Here:

* A text is split into windows of at most ``window`` word pieces, each framed by [CLS] ... [SEP]
  as the encoder was trained (256 for all-MiniLM-L6-v2); the last hidden layer of every window,
  concatenated, is the text's token embeddings. No text is cut; ``windowed`` counts those that
  needed more than one window.
* BERTScore F1 is ``bert_score.utils.greedy_cos_idf`` (the library's own matching) on those
  token embeddings, with bert-score's weights for ``idf=False`` (1 per word piece, 0 for [CLS] and
  [SEP]). For a text within one window this is exactly ``BERTScorer(model_type=<the encoder>,
  num_layers=<its last layer>)`` (tested).
* COS is the cosine of the mean of all token embeddings, normalised: sentence-transformers' mean
  pooling, so for a text within one window exactly ``SentenceTransformer.encode`` (tested).
* Embeddings pass through float16 on every path, cached or not, so a run scores the same whether
  its references came from the cache or the encoder; windows are batched with windows of their
  own length only (no padding), so a text's embeddings never depend on the texts encoded with it.
  The cache: ``<cache_dir>/caption-embeddings/<encoder key>/<sha256 of the text>.npz``; the
  encoder key hashes the model path, its weights' size and modification time, the window, the
  layer, the library versions and :data:`BATCHING`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np


# How windows share a forward pass, in the cache's key: embeddings cached under another way are
# another encoder's. "unpadded": windows of one length together (before: sorted, padded batches).
BATCHING = "unpadded"


@dataclass(frozen=True)
class Embedded:
    tokens: np.ndarray  # (word pieces incl. each window's [CLS] and [SEP], dim), float32
    weights: np.ndarray  # bert-score's idf=False weights: 0 for [CLS] / [SEP], else 1
    windows: int


class TextEncoder:
    """``layer``: the hidden layer whose states are the token embeddings (bert-score's ``num_layers``);
    None or the model's depth is its last layer."""

    def __init__(self, path: str, window: int = 256, cache_dir: Path | None = None, batch_size: int = 32,
                 layer: int | None = None):
        import torch
        import transformers
        from transformers import AutoModel, AutoTokenizer

        self._torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).eval()
        self.window = window
        self.batch_size = batch_size
        self.layer = None if layer is None or int(layer) == int(self.model.config.num_hidden_layers) else int(layer)
        weights = sorted(p for p in Path(path).glob("*") if p.suffix in (".safetensors", ".bin"))
        stamp = "|".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in weights)
        self.key = hashlib.sha256(f"{Path(path).resolve()}|{stamp}|{window}|{self.layer}|{transformers.__version__}|"
                                  f"{torch.__version__}|{BATCHING}".encode()).hexdigest()[:16]
        self.cache = None if cache_dir is None else Path(cache_dir) / "caption-embeddings" / self.key

    def _windows(self, text: str) -> list[list[int]]:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        size = self.window - 2
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        return [[cls, *ids[i:i + size], sep] for i in range(0, max(len(ids), 1), size)]

    def _encode(self, texts: Sequence[str]) -> list[Embedded]:
        torch = self._torch
        pieces = [(t, w) for t, text in enumerate(texts) for w in self._windows(text)]
        # Windows of one length batched together, never padded: beside a longer window's padding a
        # window's states moved in the last bits (up to 1e-3 in float16), so a reference's cached
        # embedding, and its scores (~1e-6), depended on the texts first encoded with it.
        lengths: dict[int, list[int]] = {}
        for i, (_, w) in enumerate(pieces):
            lengths.setdefault(len(w), []).append(i)
        states: dict[int, np.ndarray] = {}
        with torch.inference_mode():
            for same in lengths.values():
                for start in range(0, len(same), self.batch_size):
                    batch = same[start:start + self.batch_size]
                    ids = torch.tensor([pieces[i][1] for i in batch])
                    out = self.model(input_ids=ids, attention_mask=torch.ones_like(ids),
                                     output_hidden_states=self.layer is not None)
                    hidden = (out.last_hidden_state if self.layer is None else out.hidden_states[self.layer]).numpy()
                    for row, i in enumerate(batch):
                        states[i] = hidden[row]
        out: list[list[np.ndarray]] = [[] for _ in texts]
        for i, (t, _) in enumerate(pieces):
            out[t].append(states[i])
        special = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id}
        embedded = []
        for t, text in enumerate(texts):
            tokens = np.concatenate(out[t]).astype(np.float16).astype(np.float32)
            ids = [x for w in self._windows(text) for x in w]
            embedded.append(Embedded(tokens, np.asarray([0.0 if x in special else 1.0 for x in ids], dtype=np.float32),
                                     len(out[t])))
        return embedded

    def embed(self, texts: Sequence[str], cached: bool = False) -> list[Embedded]:
        """Each text's token embeddings; with ``cached``, read from and written to the disk cache."""
        if not cached or self.cache is None:
            return self._encode(texts)
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found: dict[str, Embedded] = {}
        for key in dict.fromkeys(keys):
            path = self.cache / key[:2] / f"{key}.npz"
            if path.exists():
                with np.load(path) as z:
                    found[key] = Embedded(z["tokens"].astype(np.float32), z["weights"], int(z["windows"]))
        by_key = dict(zip(keys, texts))
        missing = [k for k in by_key if k not in found]
        for key, e in zip(missing, self._encode([by_key[k] for k in missing])):
            found[key] = e
            path = self.cache / key[:2] / f"{key}.npz"
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp.npz")
            np.savez(tmp, tokens=e.tokens.astype(np.float16), weights=e.weights, windows=e.windows)
            tmp.replace(path)  # a reader never sees half a file
        return [found[k] for k in keys]


def cos(a: Embedded, b: Embedded) -> float:
    """sentence-transformers' mean pooling, normalised, then the cosine."""
    x, y = a.tokens.mean(axis=0), b.tokens.mean(axis=0)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def bertscore_f1(cands: Sequence[Embedded], refs: Sequence[Embedded], batch_size: int = 64) -> np.ndarray:
    """bert-score's greedy matching F1 of each pair (idf=False weights)."""
    import torch
    from bert_score.utils import greedy_cos_idf
    from torch.nn.utils.rnn import pad_sequence

    def padded(items: Sequence[Embedded]):
        emb = pad_sequence([torch.from_numpy(e.tokens) for e in items], batch_first=True, padding_value=2.0)
        weights = pad_sequence([torch.from_numpy(e.weights) for e in items], batch_first=True)
        lens = torch.tensor([len(e.tokens) for e in items])
        return emb, torch.arange(int(lens.max()))[None, :] < lens[:, None], weights

    out = []
    with torch.no_grad():
        for start in range(0, len(cands), batch_size):
            _, _, f1 = greedy_cos_idf(*padded(refs[start:start + batch_size]), *padded(cands[start:start + batch_size]))
            out.append(f1.numpy())
    return np.concatenate(out) if out else np.zeros(0)
