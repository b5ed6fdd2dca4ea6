"""A small raster canvas for eval's PNG charts, on Pillow (a core dependency).

Why not matplotlib: one eval PNG cost ~150 ms in it (text layout and glyph rendering,
then a filtered RGBA PNG encode), so ``eval --plot`` cost 4-5x the eval itself; the
charts need lines, dashes, bars, markers, text and legends, which this draws in a few ms
(docs/benchmarks.md, ``eval --plot``). Everything is drawn at :data:`SCALE` times the size
and reduced once at the end: Pillow draws lines without antialiasing, the reduction
smooths them (text is antialiased either way). The font is the one Pillow ships
(``ImageFont.load_default``), so the output does not depend on the fonts of the machine.

Coordinates are logical pixels of the final image, origin top left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from ..core.errors import ConfigError

SCALE = 2
Point = tuple[float, float]
Dash = tuple[float, float] | None
DASHED: Dash = (6.0, 3.5)
DOTTED: Dash = (1.5, 2.5)


@cache
def font(size: float) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's own font at ``size`` logical pixels (its bitmap font without FreeType)."""
    return ImageFont.load_default(size=round(size * SCALE))


class Canvas:
    """One white image of ``width`` x ``height`` logical pixels."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.image = Image.new("RGB", (width * SCALE, height * SCALE), "white")
        self.draw = ImageDraw.Draw(self.image)

    def line(self, points: Sequence[Point], colour: str, width: float = 1.0,
             dash: Dash = None) -> None:  # fmt: skip
        """A polyline; ``dash`` (on, off) in logical pixels for straight segments."""
        if dash is not None:
            for start, end in pairwise(points):
                self._dashed(start, end, colour, width, dash)
            return
        scaled = [(x * SCALE, y * SCALE) for x, y in points]
        self.draw.line(scaled, fill=colour, width=max(1, round(width * SCALE)), joint="curve")

    def _dashed(self, start: Point, end: Point, colour: str, width: float,
                dash: tuple[float, float]) -> None:  # fmt: skip
        length = math.dist(start, end)
        if length == 0:
            return
        on, off = dash
        (x0, y0), (x1, y1) = start, end
        at = 0.0
        while at < length:
            stop = min(at + on, length)
            a, b = at / length, stop / length
            self.line([(x0 + (x1 - x0) * a, y0 + (y1 - y0) * a),
                       (x0 + (x1 - x0) * b, y0 + (y1 - y0) * b)], colour, width)  # fmt: skip
            at = stop + off

    def rect(self, box: tuple[float, float, float, float], colour: str) -> None:
        """A filled rectangle (x0, y0, x1, y1) in either corner order."""
        x0, y0, x1, y1 = box
        left, right = sorted((x0, x1))
        top, bottom = sorted((y0, y1))
        pixels = [round(left * SCALE), round(top * SCALE), round(right * SCALE) - 1,
                  round(bottom * SCALE) - 1]  # fmt: skip
        if pixels[2] >= pixels[0] and pixels[3] >= pixels[1]:  # a zero-height bar: nothing
            self.draw.rectangle(pixels, fill=colour)

    def frame(self, box: tuple[float, float, float, float], colour: str = "#000") -> None:
        """A box of crisp 1-pixel sides (filled on whole pixels: no grey after reducing)."""
        x0, y0, x1, y1 = (round(v) for v in box)
        for side in ((x0, y0, x1 + 1, y0 + 1), (x0, y1, x1 + 1, y1 + 1),
                     (x0, y0, x0 + 1, y1 + 1), (x1, y0, x1 + 1, y1 + 1)):  # fmt: skip
            self.rect(side, colour)

    def dot(self, x: float, y: float, radius: float, colour: str) -> None:
        r = radius * SCALE
        self.draw.ellipse([x * SCALE - r, y * SCALE - r, x * SCALE + r, y * SCALE + r],
                          fill=colour)  # fmt: skip

    def text(self, x: float, y: float, text: str, size: float, anchor: str = "la",
             colour: str = "#000", vertical: bool = False) -> None:  # fmt: skip
        """``text`` at (x, y) with a Pillow anchor (``"mm"``: centred); ``vertical``: read
        bottom to top, (x, y) then the anchor point of the turned text's box."""
        if not vertical:
            self.draw.text((x * SCALE, y * SCALE), text, fill=colour, font=font(size),
                           anchor=anchor)  # fmt: skip
            return
        face = font(size)
        left, top, right, bottom = face.getbbox(text)
        mask = Image.new("L", (max(1, int(right - left)), max(1, int(bottom - top))), 0)
        ImageDraw.Draw(mask).text((-left, -top), text, fill=255, font=face)
        turned = mask.transpose(Image.Transpose.ROTATE_90)
        w, h = turned.size
        px = x * SCALE - {"l": 0, "m": w / 2, "r": w}[anchor[0]]
        py = y * SCALE - {"a": 0, "m": h / 2, "d": h}.get(anchor[1], h)
        self.image.paste(colour, (round(px), round(py)), turned)

    def text_width(self, text: str, size: float) -> float:
        return font(size).getlength(text) / SCALE

    def save(self, destination: Path) -> None:
        """Reduce to the final size and write an 8-bit palette PNG (the charts have a few
        colours and their antialiased edges: a quarter of the encoding time of RGB)."""
        final = self.image.reduce(SCALE) if SCALE > 1 else self.image
        paletted = final.quantize(256, method=Image.Quantize.FASTOCTREE)
        # The octree averages white with its near neighbours; the background stays white.
        entries = paletted.getpalette() or []
        paletted.putpalette([255 if min(entries[i - i % 3 : i - i % 3 + 3]) >= 250 else value
                             for i, value in enumerate(entries)])  # fmt: skip
        try:
            paletted.save(destination, "PNG", compress_level=1)
        except OSError as exc:
            raise ConfigError(f"{destination}: cannot write: {exc.strerror}") from exc


def nice_ticks(low: float, high: float, count: int = 6, integer: bool = False) -> list[float]:
    """About ``count`` round tick values (1, 2, 2.5, 5 times a power of ten) in
    [low, high]; whole numbers only when ``integer``."""
    span = max(high - low, 1e-9)
    raw = span / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    if integer:
        step = max(1, math.ceil(step))
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + 1e-9 * span:
        ticks.append(round(value, 10))
        value += step
    return ticks


def label(value: float) -> str:
    """A tick label: thousands separated, no trailing ``.0``."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


@dataclass
class Axes:
    """A plot area ``box`` (x0, y0, x1, y1) on ``canvas`` showing data ``xs`` x ``ys``."""

    canvas: Canvas
    box: tuple[float, float, float, float]
    xs: tuple[float, float]
    ys: tuple[float, float]

    def at(self, x: float, y: float) -> Point:
        x0, y0, x1, y1 = self.box
        fx = (x - self.xs[0]) / ((self.xs[1] - self.xs[0]) or 1)
        fy = (y - self.ys[0]) / ((self.ys[1] - self.ys[0]) or 1)
        return x0 + fx * (x1 - x0), y1 - fy * (y1 - y0)

    def decorate(self, xticks: Sequence[tuple[float, str]], yticks: Sequence[float],
                 xlabel: str, ylabel: str, title: str, tick_size: float = 11) -> None:  # fmt: skip
        """The frame, ticks and their labels, the axis labels and the title."""
        c, (x0, y0, x1, y1) = self.canvas, self.box
        c.frame(self.box)
        lines = 1
        for x, text in xticks:
            px, _ = self.at(x, self.ys[0])
            c.rect((round(px), y1, round(px) + 1, y1 + 5), "#000")
            for n, part in enumerate(text.split("\n")):
                c.text(px, y1 + 6 + n * (tick_size + 2), part, tick_size, "ma")
            lines = max(lines, text.count("\n") + 1)
        widest = 0.0
        for y in yticks:
            _, py = self.at(self.xs[0], y)
            c.rect((x0 - 4, round(py), x0, round(py) + 1), "#000")
            c.text(x0 - 6, py, label(y), 11, "rm")
            widest = max(widest, c.text_width(label(y), 11))
        c.text((x0 + x1) / 2, y1 + 10 + lines * (tick_size + 2), xlabel, 12, "ma")
        c.text(x0 - widest - 12, (y0 + y1) / 2, ylabel, 12, "rm", vertical=True)
        c.text((x0 + x1) / 2, y0 - 7, title, 11, "md")


@dataclass(frozen=True)
class Key:
    """One legend entry: a line (``dash``, ``marker``) or a filled box (``box``)."""

    label: str
    colour: str
    dash: Dash = None
    marker: bool = False
    box: bool = False


def legend(canvas: Canvas, keys: Sequence[Key], centre: float, top: float, columns: int) -> None:
    """``keys`` in rows of ``columns``, centred on ``centre``, no frame (never over data)."""
    size, sample, gap = 10.5, 26.0, 24.0
    widths = [sample + 6 + canvas.text_width(k.label, size) for k in keys]
    column_widths = [max(widths[i::columns]) for i in range(min(columns, len(keys)))]
    left = centre - (sum(column_widths) + gap * (len(column_widths) - 1)) / 2
    for index, key in enumerate(keys):
        row, column = divmod(index, columns)
        x = left + sum(column_widths[:column]) + gap * column
        y = top + row * 18 + 6
        if key.box:
            canvas.rect((x + 4, y - 5, x + sample - 4, y + 5), key.colour)
        else:
            canvas.line([(x, y), (x + sample, y)], key.colour, 1.6, key.dash)
            if key.marker:
                canvas.dot(x + sample / 2, y, 3.5, key.colour)
        canvas.text(x + sample + 6, y, key.label, size, "lm")
