"""EAN-13 as module strings: shared by the generator (drawing) and the decoding tool (reading).

Keeping both directions in one module means a rendered barcode and its decoder can never
disagree about the code tables; the images themselves are the only thing that travels.
"""

from __future__ import annotations

from sopgym.core.exceptions import DataError

MODULES = 95  # 3 start guard + 6x7 left digits + 5 centre guard + 6x7 right digits + 3 end guard
START_END = "101"
CENTRE = "01010"

L_CODES = ("0001101", "0011001", "0010011", "0111101", "0100011",
           "0110001", "0101111", "0111011", "0110111", "0001011")  # fmt: skip
R_CODES = tuple("".join("1" if b == "0" else "0" for b in code) for code in L_CODES)
G_CODES = tuple(code[::-1] for code in R_CODES)
# Parity of the six left digits (L or G) encodes the leading digit.
PARITY = ("LLLLLL", "LLGLGG", "LLGGLG", "LLGGGL", "LGLLGG",
          "LGGLLG", "LGGGLL", "LGLGLG", "LGLGGL", "LGGLGL")  # fmt: skip

_LEFT = {code: (str(d), "L") for d, code in enumerate(L_CODES)} | {
    code: (str(d), "G") for d, code in enumerate(G_CODES)
}
_RIGHT = {code: str(d) for d, code in enumerate(R_CODES)}


class SymbolError(DataError, ValueError):
    """The module string is not a well-formed EAN-13 symbol; the message says where."""


def check_digit(first12: str) -> str:
    """GS1 check digit: weights 1 and 3 alternating from the left over the first 12 digits."""
    total = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(first12))
    return str((10 - total % 10) % 10)


def encode(gtin: str) -> str:
    """The 95-module bar pattern ('1' = bar) of a 13-digit GTIN with a valid check digit."""
    if len(gtin) != 13 or not gtin.isdigit() or check_digit(gtin[:12]) != gtin[12]:
        raise SymbolError(f"not a valid GTIN-13: {gtin!r}")
    parity = PARITY[int(gtin[0])]
    left = "".join(
        (L_CODES if p == "L" else G_CODES)[int(d)] for d, p in zip(gtin[1:7], parity, strict=True)
    )
    right = "".join(R_CODES[int(d)] for d in gtin[7:])
    return START_END + left + CENTRE + right + START_END


def decode(modules: str) -> str:
    """The GTIN carried by a 95-module pattern; raises :class:`SymbolError` if unreadable."""
    if len(modules) != MODULES:
        raise SymbolError(f"expected {MODULES} modules, read {len(modules)}")
    if modules[:3] != START_END or modules[-3:] != START_END or modules[45:50] != CENTRE:
        raise SymbolError("guard pattern not found")
    digits, parity = [], []
    for k in range(6):
        chunk = modules[3 + 7 * k : 10 + 7 * k]
        if chunk not in _LEFT:
            raise SymbolError(f"unreadable symbol at left position {k + 1}")
        digit, side = _LEFT[chunk]
        digits.append(digit)
        parity.append(side)
    for k in range(6):
        chunk = modules[50 + 7 * k : 57 + 7 * k]
        if chunk not in _RIGHT:
            raise SymbolError(f"unreadable symbol at right position {k + 1}")
        digits.append(_RIGHT[chunk])
    pattern = "".join(parity)
    if pattern not in PARITY:
        raise SymbolError("invalid parity pattern")
    gtin = str(PARITY.index(pattern)) + "".join(digits)
    if check_digit(gtin[:12]) != gtin[12]:
        raise SymbolError("check digit mismatch")
    return gtin
