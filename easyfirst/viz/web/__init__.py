"""Raindrops people can explore: the interactive component (raindrop.js, raindrop.css) and its HTML.

``raindrop_data(tokens, tags, attention, ...)`` is one view's data, ``fragment(views)`` a ``<div>`` for a
notebook or a page, ``page(views, title)`` a whole self-contained HTML file; in the browser,
``window.easyfirstRaindrop.render(element, data_or_list_of_data)`` draws the same data.
"""

from easyfirst.viz.web.component import asset, fragment, page, raindrop_data, tag_colors

__all__ = ["asset", "fragment", "page", "raindrop_data", "tag_colors"]
