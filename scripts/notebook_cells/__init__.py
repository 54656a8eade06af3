"""The cells of the teaching notebooks, one module per notebook (``CELLS``), and the helpers
they share. ``scripts/make_notebooks.py`` writes ``notebooks/*.ipynb`` from them."""

from __future__ import annotations

import textwrap

def md(text: str) -> tuple[str, str]:
    return ("markdown", textwrap.dedent(text).strip("\n"))


def code(*parts: str) -> tuple[str, str]:
    """A code cell; parts are dedented one by one and separated by two blank lines."""
    return ("code", "\n\n\n".join(textwrap.dedent(p).strip("\n") for p in parts))


# Small helpers several notebooks define in their first cell (kept visible on purpose: a reader
# should see that a picture is just PNG bytes in an <img> tag).
SHOW_HELPER = '''
def show(images, width=200):
    """Show PNG images side by side with captions; ``images`` maps caption -> PNG bytes."""
    figures = "".join(
        '<figure style="display:inline-block; margin:0 14px 10px 0; text-align:center">'
        f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" '
        f'style="width:{width}px; image-rendering:pixelated"><figcaption>{caption}</figcaption>'
        "</figure>"
        for caption, png in images.items()
    )
    display(HTML(figures))
'''
