"""Looking at trained models: where the decoder looked, and what a model is.

Owns the raindrop figures (``plot``: PNG/SVG/PDF and the terminal, paper Figs. 2–4), the attention
analysis over a data set (``analysis``: first focus, sharpness, evenness), the interactive raindrop for
browsers and notebooks (``web``: raindrop.js, raindrop.css, the Raindrop object) and model cards
(``model_card``: the README.md that ``easyfirst export`` writes).

May import: ``config``, ``data``, ``atomic``, ``errors`` and the package's ``__version__``; it draws
what it is given (tokens, tags, attention) and never loads or runs a model itself.
"""
