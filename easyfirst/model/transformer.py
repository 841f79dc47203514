"""A transformer's vectors for each word, beneath the BiLSTM (like Flair's stacked embeddings).

Each sentence's words are split into the transformer's sub-words (pieces); the pieces run through the
transformer in windows of at most its length (``window`` pieces, between its special tokens), each
window ``stride`` pieces after the one before, so that a long sentence is never truncated: a piece
takes its vectors from the window where it has the most context on its shorter side (the earlier window
on a tie). The chosen hidden layers (0: the embeddings' output, -1: the last) are pooled over each word's
pieces (``first``, ``last``, ``mean`` or ``first_last``, the first and the last concatenated) and then
averaged, or, with ``mix``, combined by a learned scalar mix (softmax weights and a scale; Peters et al.
2018).

Frozen (the default) the transformer is not part of the model's parameters or saved state: its run
folder names it and records a hash of its weights (easyfirst.data.transformer_models), and loading the
folder with other weights is an error. A frozen transformer's vectors of a sentence can be kept in a
bounded cache keyed by the sentence's words (:meth:`TransformerEmbedder.start_cache`): training computes
each sentence once per run, not once per epoch. Fine-tuned, the transformer is a submodule, trained at its
own learning rate and saved with the model.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import torch
from torch import nn

from easyfirst.errors import InputError
from easyfirst.model.settings import POOLINGS, parse_layers

CHUNK = 64  # windows per call of the transformer


class SentenceCache:
    """Each sentence's vectors (a CPU tensor) by its words, the least recently used dropped past
    ``limit`` bytes."""

    def __init__(self, limit: int):
        self.limit, self.size = limit, 0
        self.rows: OrderedDict[tuple[str, ...], torch.Tensor] = OrderedDict()

    def get(self, words: tuple[str, ...]) -> torch.Tensor | None:
        found = self.rows.get(words)
        if found is not None:
            self.rows.move_to_end(words)
        return found

    def put(self, words: tuple[str, ...], vectors: torch.Tensor) -> None:
        cost = vectors.numel() * vectors.element_size()
        if cost > self.limit or words in self.rows:
            return
        self.rows[words] = vectors
        self.size += cost
        while self.size > self.limit:
            _, dropped = self.rows.popitem(last=False)
            self.size -= dropped.numel() * dropped.element_size()


class TransformerEmbedder(nn.Module):
    """Word vectors ``(B, L, output_dim)`` from a transformer ``(net, tokenizer)`` (see module)."""

    def __init__(
        self,
        net: nn.Module,
        tokenizer,
        pooling: str = "mean",
        layers: Sequence[int] = (-1,),
        mix: bool = False,
        finetune: bool = False,
        window: int = 0,
        stride: int = 0,
    ):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
        depth = net.config.num_hidden_layers + 1  # the hidden states: the embeddings' output, then each layer
        wrong = [k for k in layers if not -depth <= k < depth]
        if wrong:
            raise InputError(
                f"model.transformer_layers: the transformer has hidden states 0..{depth - 1} (or -{depth}..-1),"
                f" not {wrong[0]}"
            )
        self.tokenizer, self.pooling, self.layers = tokenizer, pooling, tuple(layers)
        self.finetune = finetune
        if finetune:
            self.net = net
        else:  # a plain attribute: not a parameter, not in the saved state; moved by _apply
            self._frozen = [net.eval().requires_grad_(False)]
        # the special tokens around a window's pieces (BERT's [CLS] … [SEP], RoBERTa's <s> … </s>)
        probe = tokenizer(["x"], is_split_into_words=True, add_special_tokens=True)
        kept = [i for i, word in enumerate(probe.word_ids()) if word is not None]
        self.before, self.after = probe["input_ids"][: kept[0]], probe["input_ids"][kept[-1] + 1 :]
        self.offset, self.specials = len(self.before), len(self.before) + len(self.after)
        longest = net.config.max_position_embeddings
        if 0 < getattr(tokenizer, "model_max_length", 0) < longest:
            longest = tokenizer.model_max_length
        most = longest - self.specials
        if window > most:
            raise InputError(
                f"model.transformer_window = {window}: the transformer takes at most {most} pieces"
            )
        self.window = window or most
        self.stride = stride or max(1, self.window // 2)
        if self.stride > self.window:
            raise InputError(
                f"model.transformer_stride = {self.stride} is longer than the window ({self.window} pieces): "
                "pieces between windows would have no vectors"
            )
        # an uncased vocabulary splits "The" as "the": the word's other parts must carry the case
        self.uncased = tokenizer.tokenize("The Paris") == tokenizer.tokenize("the paris")
        self.output_dim = net.config.hidden_size * (2 if pooling == "first_last" else 1)
        self.mix = None
        if mix:
            self.mix = nn.Parameter(torch.zeros(len(self.layers)))
            self.mix_scale = nn.Parameter(torch.ones(()))
        self.cache: SentenceCache | None = None
        self.calls = 0  # the transformer's forward calls (windows are computed CHUNK at a time)

    @classmethod
    def from_settings(cls, e) -> TransformerEmbedder:
        """The transformer of the ``[model]`` settings ``e`` (``EmbedderSettings``), loaded; with
        ``e.transformer_sha256`` (a saved run's), weights that hash otherwise are refused."""
        from easyfirst.data.transformer_models import load_transformer

        net, tokenizer, digest = load_transformer(e.transformer)
        if e.transformer_sha256 and digest != e.transformer_sha256:
            raise InputError(
                f"model.transformer {e.transformer!r}: these weights are not the ones the model was trained "
                f"with (their SHA-256 is {digest[:16]}…, the run recorded {e.transformer_sha256[:16]}…); "
                "give the run the transformer it was trained with"
            )
        layers = parse_layers(e.transformer_layers, net.config.num_hidden_layers + 1)
        module = cls(
            net,
            tokenizer,
            e.transformer_pooling,
            layers,
            e.transformer_mix,
            e.transformer_finetune,
            e.transformer_window,
            e.transformer_stride,
        )
        module.sha256 = digest
        return module

    def describe(self, e, t) -> str:
        """In words, for the training log: ``e`` the embedder's settings, ``t`` the training's."""
        layers = ",".join(map(str, self.layers))
        combined = " mixed (learned)" if self.mix is not None else " averaged" if len(self.layers) > 1 else ""
        how = f"fine-tuned at lr {t.transformer_lr:g}" if self.finetune else "frozen"
        return (
            f"{e.transformer}, {self.output_dim}-d: layer{'s' * (len(self.layers) > 1)} {layers}{combined}, "
            f"{self.pooling} of each word's sub-words, windows of {self.window} sub-words every {self.stride}; "
            f"{how}{'; the source words too' if e.transformer_source else ''}{self.case_note(e)}; weights "
            f"SHA-256 {self.sha256[:16]}…"
        )

    def case_note(self, e) -> str:
        """For an uncased transformer: which other parts of the word keep the case (``e``: the embedder's
        settings), or that none does."""
        if not self.uncased:
            return ""
        parts = e.spelling()
        kept = ", ".join(parts) + " keep" if len(parts) > 1 else f"{parts[0]} keeps" if parts else ""
        return f"; uncased: {kept or 'no other part of the word keeps'} the case"

    @property
    def transformer(self) -> nn.Module:
        return self.net if self.finetune else self._frozen[0]

    def _apply(self, fn, recurse=True):
        if not self.finetune:
            self._frozen[0]._apply(fn)
        return super()._apply(fn, recurse)

    def start_cache(self, megabytes: int) -> None:
        """Keep each sentence's vectors (at most ``megabytes`` MB of them); frozen transformers only."""
        self.cache = SentenceCache(megabytes * 2**20) if not self.finetune and megabytes > 0 else None

    def forward(self, tokens: Sequence[Sequence[str]], length: int, device: torch.device) -> torch.Tensor:
        """The vectors of the words of ``tokens`` (B sentences), padded with zeros to ``length``."""
        found: list[torch.Tensor | None] = [None] * len(tokens)
        missing = []
        for b, words in enumerate(tokens):
            found[b] = self.cache.get(tuple(words)) if self.cache is not None else None
            if found[b] is None:
                missing.append(b)
        if missing:
            with torch.set_grad_enabled(self.finetune and torch.is_grad_enabled()):
                computed = self.pooled([tokens[b] for b in missing], device)
            for b, vectors in zip(missing, computed, strict=True):
                found[b] = vectors
                if self.cache is not None:
                    self.cache.put(tuple(tokens[b]), vectors.detach().cpu())
        width = (len(self.layers),) * (self.mix is not None) + (self.output_dim,)
        dtype = found[0].dtype if found else torch.get_default_dtype()
        out = torch.zeros(len(tokens), length, *width, device=device, dtype=dtype)
        for b, vectors in enumerate(found):
            out[b, : len(vectors)] = vectors.to(device)
        if self.mix is None:
            return out
        return (torch.softmax(self.mix, 0)[:, None] * out).sum(2) * self.mix_scale

    def aligned(self, sources: Sequence, length: int, device: torch.device) -> torch.Tensor:
        """QE: ``sources``, each MT sentence's source words and alignment pairs ``(i, j)`` → for each of
        its ``length`` (padded) MT words the mean of its aligned source words' vectors ``(B, length, D)``,
        zeros for a word with none."""
        longest = max((len(words) for words, _ in sources), default=0)
        vectors = self([words for words, _ in sources], max(longest, 1), device)  # (B, S, D)
        links = torch.zeros(len(sources), length, vectors.shape[1], dtype=vectors.dtype)
        for b, (_, pairs) in enumerate(sources):  # built on the CPU, moved once
            for i, j in pairs:
                links[b, j, i] = 1.0
        links = links.to(device)
        return links @ vectors / links.sum(2, keepdim=True).clamp(min=1)

    def warm(self, sentences: Sequence[Sequence[str]], device: torch.device, batch_size: int = 32) -> int:
        """Fill the cache with the vectors of ``sentences``, batches of similar length together; returns
        how many sentences were computed."""
        if self.cache is None:
            return 0
        todo = sorted({tuple(s) for s in sentences if s and self.cache.get(tuple(s)) is None}, key=len)
        with torch.no_grad():
            for start in range(0, len(todo), batch_size):
                part = todo[start : start + batch_size]
                for words, vectors in zip(part, self.pooled(part, device), strict=True):
                    self.cache.put(words, vectors.cpu())
        return len(todo)

    def pooled(self, sentences: Sequence[Sequence[str]], device: torch.device) -> list[torch.Tensor]:
        """Each sentence's word vectors: ``(n, k, D)`` for ``k`` layers with a learned mix, else the
        layers averaged, ``(n, D)``."""
        pieces = [self.pieces(words) for words in sentences]
        states = self.piece_states([ids for ids, _ in pieces], device)  # each (P, k, H)
        out = []
        for (_, spans), hidden in zip(pieces, states, strict=True):
            words = self.pool(hidden, spans)
            out.append(words if self.mix is not None else words.mean(1))
        return out

    def pieces(self, words: Sequence[str]) -> tuple[list[int], list[tuple[int, int]]]:
        """A sentence's piece ids and each word's span of them ``[start, end)``; a word the tokenizer
        makes nothing of is one unknown piece."""
        encoded = self.tokenizer(list(words), is_split_into_words=True, add_special_tokens=False)
        per_word: list[list[int]] = [[] for _ in words]
        for piece, word in zip(encoded["input_ids"], encoded.word_ids(), strict=True):
            if word is not None:
                per_word[word].append(piece)
        ids, spans = [], []
        for word_pieces in per_word:
            word_pieces = word_pieces or [self.tokenizer.unk_token_id]
            spans.append((len(ids), len(ids) + len(word_pieces)))
            ids += word_pieces
        return ids, spans

    def windows(self, count: int) -> tuple[list[int], list[int]]:
        """The windows' first pieces over ``count`` pieces, and for each piece the window it takes its
        vectors from: the one where it has the most context on its shorter side (the earlier on a tie)."""
        if count <= self.window:
            return [0], [0] * count
        starts = list(range(0, count - self.window, self.stride)) + [count - self.window]
        chosen = []
        for p in range(count):
            sides = [min(p - s, s + self.window - 1 - p) if s <= p < s + self.window else -1 for s in starts]
            chosen.append(sides.index(max(sides)))
        return starts, chosen

    def piece_states(self, sentences: list[list[int]], device: torch.device) -> list[torch.Tensor]:
        """The chosen layers' states of each sentence's pieces ``(P, k, H)``, through windows."""
        runs, plans = [], []
        for ids in sentences:
            starts, chosen = self.windows(len(ids))
            plans.append((len(runs), starts, chosen))
            runs += [ids[s : s + self.window] for s in starts]
        states = []
        for start in range(0, len(runs), CHUNK):
            states += self.run(runs[start : start + CHUNK], device)
        out = []
        for first, starts, chosen in plans:  # a window's chosen pieces are consecutive: one slice each
            parts, p = [], 0
            while p < len(chosen):
                w, end = chosen[p], p
                while end < len(chosen) and chosen[end] == w:
                    end += 1
                at = self.offset - starts[w]
                parts.append(states[first + w][at + p : at + end])
                p = end
            out.append(torch.cat(parts) if parts else states[first][:0])
        return out

    def run(self, windows: list[list[int]], device: torch.device) -> list[torch.Tensor]:
        """The transformer on windows of piece ids, each between its special tokens: each window's
        chosen hidden states ``(T, k, H)``."""
        inputs = [self.before + ids + self.after for ids in windows]
        longest = max(map(len, inputs))
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.full((len(inputs), longest), pad, dtype=torch.long)
        mask = torch.zeros(len(inputs), longest, dtype=torch.long)
        for i, row in enumerate(inputs):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        self.calls += 1
        output = self.transformer(
            input_ids=ids.to(device), attention_mask=mask.to(device), output_hidden_states=True
        )
        hidden = torch.stack([output.hidden_states[k] for k in self.layers], dim=2)  # (W, T, k, H)
        return list(hidden)

    def pool(self, hidden: torch.Tensor, spans: list[tuple[int, int]]) -> torch.Tensor:
        """Pieces' states ``(P, k, H)`` → words' ``(n, k, D)`` by the pooling (see module)."""
        first = torch.tensor([a for a, _ in spans], dtype=torch.long, device=hidden.device)
        last = torch.tensor([b - 1 for _, b in spans], dtype=torch.long, device=hidden.device)
        if self.pooling == "first":
            return hidden[first]
        if self.pooling == "last":
            return hidden[last]
        if self.pooling == "first_last":
            return torch.cat([hidden[first], hidden[last]], dim=-1)
        word = torch.repeat_interleave(
            torch.arange(len(spans), device=hidden.device),
            torch.tensor([b - a for a, b in spans]).to(hidden.device),
        )
        summed = hidden.new_zeros(len(spans), *hidden.shape[1:]).index_add_(0, word, hidden)
        return summed / (last - first + 1).to(hidden.dtype)[:, None, None]
