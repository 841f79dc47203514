"""The raindrop of one sentence as an object (``Tagger.raindrop``): drawn inline in a notebook
(``_repr_html_``: the interactive component) and saved as .html, .png, .svg or .pdf by suffix."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from easyfirst.viz.plot import Drop
from easyfirst.viz.web.component import fragment, page, raindrop_data

FORMATS = (".html", ".png", ".svg", ".pdf")  # what Raindrop.save and `easyfirst plot -o` write


@dataclass
class Raindrop:
    """One or more raindrops of a sentence (several: models side by side, ``--compare``), with the tag set
    that picks their colours."""

    drops: list[Drop]
    tagset: list[str]

    @classmethod
    def side_by_side(cls, raindrops: Sequence[Raindrop]) -> Raindrop:
        """The panels of ``raindrops`` in one, left to right; colours from the union of their tag sets."""
        tagset = sorted({tag for r in raindrops for tag in r.tagset})
        return cls([drop for r in raindrops for drop in r.drops], tagset)

    def views(self, show_beta: bool = True) -> list[dict]:
        """The component's data for each panel (easyfirst.viz.web.raindrop_data); ``show_beta=False`` leaves
        out the β row."""
        return [
            raindrop_data(
                d.words,
                d.predicted,
                d.attention,
                gold=d.gold,
                model=d.model or None,
                task=d.task or None,
                title=d.title or None,
                tagset=self.tagset,
            )
            | ({} if show_beta else {"beta": False})
            for d in self.drops
        ]

    def html(self, title: str | None = None, show_beta: bool = True) -> str:
        """A whole self-contained HTML page."""
        return page(self.views(show_beta), title or f"easyfirst raindrop: {self.drops[0].sentence()}")

    def _repr_html_(self) -> str:
        return fragment(self.views())

    def save(self, path: str | Path, show_beta: bool = True) -> Path:
        """Write ``path``: an interactive page for .html, a matplotlib figure for .png, .svg and .pdf."""
        from easyfirst.atomic import atomic_write
        from easyfirst.viz.plot import save

        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in FORMATS:
            raise ValueError(f"{path}: a raindrop is saved as {', '.join(FORMATS)} (by the file's suffix)")
        if suffix == ".html":
            text = self.html(show_beta=show_beta).encode("utf-8")
            atomic_write(path, lambda out: out.write(text))
        else:
            save(self.drops, self.tagset, path, show_beta=show_beta)
        return path
