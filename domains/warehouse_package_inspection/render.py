"""Drawing the inspection images the generator writes into ``files_dir``.

Barcodes are EAN-13 symbols drawn as black and white columns; package photos are a carton on
a light floor with dark blotches (water or crush marks) whose pixel area the damage tool
measures. Images are small so the whole dataset renders in well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw

from sopgym.domains.warehouse_package_inspection.symbology import MODULES, encode

MODULE_PX = 2
QUIET_PX = 5
BARCODE_SIZE = (MODULES * MODULE_PX + 2 * QUIET_PX, 50)
BAR_TOP, BAR_BOTTOM = 4, 45
PHOTO_SIZE = (160, 100)

FLOOR = (228, 228, 226)
CARTON = (176, 130, 84)
CARTON_EDGE = (128, 94, 62)
TAPE = (206, 178, 128)
LABEL = (250, 250, 248)
LABEL_TEXT = (118, 118, 118)
BLOTCH = (38, 30, 24)
CARTON_BOX = (14, 10, 146, 90)
LABEL_BOX = (92, 18, 138, 50)


@dataclass(frozen=True)
class Blotch:
    """A dark mark on the carton: an ellipse centred at (x, y) with radii (rx, ry)."""

    x: int
    y: int
    rx: int
    ry: int


def render_barcode(gtin: str, path: Path, defect: str | None = None) -> None:
    """Draw ``gtin``; ``defect`` 'smear' inks over left digits, 'torn' blanks right digits."""
    image = Image.new("L", BARCODE_SIZE, 255)
    draw = ImageDraw.Draw(image)
    for m, bit in enumerate(encode(gtin)):
        if bit == "1":
            x = QUIET_PX + m * MODULE_PX
            draw.rectangle((x, BAR_TOP, x + MODULE_PX - 1, BAR_BOTTOM), fill=0)
    if defect == "smear":  # ink over modules 10-31: left digits 2-4 read as solid bars
        draw.rectangle(_module_span(10, 31), fill=0)
    elif defect == "torn":  # label torn over modules 55-76: right digits 2-3 read as blank
        draw.rectangle(_module_span(55, 76), fill=255)
    elif defect is not None:
        raise ValueError(f"unknown barcode defect {defect!r}")
    image.save(path, optimize=False, compress_level=1)


def _module_span(first: int, last: int) -> tuple[int, int, int, int]:
    return (
        QUIET_PX + first * MODULE_PX,
        BAR_TOP - 2,
        QUIET_PX + (last + 1) * MODULE_PX - 1,
        BAR_BOTTOM + 2,
    )


def render_package(path: Path, blotches: list[Blotch], label_lines: int = 3) -> None:
    """Draw a taped carton with a shipping label and the given dark blotches."""
    image = Image.new("RGB", PHOTO_SIZE, FLOOR)
    draw = ImageDraw.Draw(image)
    draw.rectangle(CARTON_BOX, fill=CARTON, outline=CARTON_EDGE)
    draw.rectangle((CARTON_BOX[0] + 1, 46, CARTON_BOX[2] - 1, 54), fill=TAPE)
    draw.rectangle(LABEL_BOX, fill=LABEL, outline=LABEL_TEXT)
    for k in range(label_lines):
        y = LABEL_BOX[1] + 6 + 7 * k
        draw.rectangle(
            (LABEL_BOX[0] + 4, y, LABEL_BOX[2] - 8 - 6 * (k % 2), y + 2), fill=LABEL_TEXT
        )
    for b in blotches:
        draw.ellipse((b.x - b.rx, b.y - b.ry, b.x + b.rx, b.y + b.ry), fill=BLOTCH)
    image.save(path, optimize=False, compress_level=1)
