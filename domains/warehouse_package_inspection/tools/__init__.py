"""Warehouse package inspection tools, one module each, in SOP order."""

from sopgym.domains.warehouse_package_inspection.tools import (
    calculate_quantity_variance,
    decode_barcode_image,
    detect_package_damage,
    get_chargeback_terms,
    get_purchase_order_line,
    lookup_product_by_gtin,
    lookup_receiving_location,
)
from sopgym.domains.warehouse_package_inspection.tools.distractors import DISTRACTORS

TOOLS = [
    get_purchase_order_line.run,
    decode_barcode_image.run,
    lookup_product_by_gtin.run,
    calculate_quantity_variance.run,
    lookup_receiving_location.run,
    detect_package_damage.run,
    get_chargeback_terms.run,
]

__all__ = ["DISTRACTORS", "TOOLS"]
