"""Forty-five financial tools no banking SOP here needs: callable, deterministic, and named
like the services a real bank exposes next to the ones that matter (paper §3.3).

Their parameters share no name with any scenario's fields (the packs' tests check it), so in
the stage-1 graph they are isolated nodes and never change the scenarios' dependency graphs.
"""

from __future__ import annotations

import hashlib

from sopgym.core.tools import Tool, ToolContext, arguments_schema, result_schema, tool
from sopgym.types import JSON

_PARAMETERS: dict[str, tuple[JSON, object]] = {
    "currency": ({"type": "string", "enum": ["EUR", "GBP", "USD", "CHF", "JPY"]}, "GBP"),
    "branch_code": ({"type": "string", "pattern": "^BR[0-9]{4}$"}, "BR0042"),
    "ticker": ({"type": "string", "pattern": "^[A-Z]{1,5}$"}, "NWND"),
    "postal_code": ({"type": "string", "minLength": 3, "maxLength": 10}, "LS1 4AP"),
    "card_last4": ({"type": "string", "pattern": "^[0-9]{4}$"}, "4821"),
    "iban": ({"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}[A-Z0-9]{10,30}$"},
             "GB29NWBK60161331926819"),
    "period": ({"type": "string", "enum": ["day", "week", "month", "quarter", "year"]}, "month"),
    "product_line": ({"type": "string", "enum": ["retail", "business", "private", "wealth"]},
                     "retail"),
    "quote_size": ({"type": "integer", "minimum": 1}, 5000),
    "language": ({"type": "string", "enum": ["en", "fr", "de", "es", "pt"]}, "en"),
}

# (name, description, parameters)
_CATALOG: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("get_fx_rate", "Spot exchange rate of a currency against sterling.", ("currency",)),
    ("get_fx_forward_points", "Forward points for a currency over a period.",
     ("currency", "period")),
    ("get_branch_hours", "Opening hours of a branch.", ("branch_code",)),
    ("get_branch_services", "Services offered at a branch.", ("branch_code", "language")),
    ("list_atms_near", "Cash machines near a postal code.", ("postal_code",)),
    ("get_stock_quote", "Latest quote of a listed share.", ("ticker",)),
    ("get_stock_dividend_history", "Dividends a share paid over a period.", ("ticker", "period")),
    ("get_fund_factsheet", "Factsheet of a fund by ticker.", ("ticker", "language")),
    ("get_card_travel_notice", "Travel notices filed for a card.", ("card_last4",)),
    ("report_card_lost", "Flags a card as lost (demo desk, no effect).", ("card_last4",)),
    ("validate_iban", "Checks an IBAN's format and check digits.", ("iban",)),
    ("get_iban_bank_name", "Bank that issued an IBAN.", ("iban",)),
    ("get_sepa_reachability", "Whether an IBAN is reachable by instant payments.", ("iban",)),
    ("get_swift_cutoff", "Same-day payment cut-off for a currency.", ("currency",)),
    ("get_market_summary", "Market summary for a period.", ("period",)),
    ("get_interbank_rate", "Interbank offered rate for a currency and period.",
     ("currency", "period")),
    ("get_inflation_print", "Latest inflation figure for a period.", ("period",)),
    ("get_product_brochure", "Brochure of a product line.", ("product_line", "language")),
    ("get_product_fees", "Fee schedule of a product line.", ("product_line",)),
    ("get_promo_offers", "Current promotions of a product line.", ("product_line", "period")),
    ("get_cash_order_quote", "Quote for ordering foreign cash.", ("currency", "quote_size")),
    ("get_transfer_fee", "Fee of an international transfer of a size.",
     ("currency", "quote_size")),
    ("get_safe_deposit_availability", "Safe deposit boxes free at a branch.", ("branch_code",)),
    ("book_branch_appointment_slots", "Free appointment slots at a branch.",
     ("branch_code", "period")),
    ("get_call_centre_wait", "Expected wait at the call centre.", ("language",)),
    ("get_complaint_procedure", "The complaints procedure text.", ("language",)),
    ("get_privacy_notice", "The privacy notice text.", ("language",)),
    ("get_terms_version", "Current terms and conditions of a product line.", ("product_line",)),
    ("get_chargeback_window", "Days allowed to dispute a card payment.", ("card_last4",)),
    ("get_card_design_options", "Card designs available for a product line.",
     ("product_line",)),
    ("get_contactless_limit", "Contactless limit for a currency.", ("currency",)),
    ("get_esg_rating", "Sustainability rating of a listed company.", ("ticker",)),
    ("get_analyst_consensus", "Analysts' consensus on a share.", ("ticker",)),
    ("get_bond_yield_curve", "Government yield curve for a currency.", ("currency",)),
    ("get_precious_metal_price", "Gold price in a currency.", ("currency",)),
    ("get_crypto_policy", "The bank's policy on crypto assets for a product line.",
     ("product_line",)),
    ("get_holiday_calendar", "Bank holidays of a currency's market in a period.",
     ("currency", "period")),
    ("get_postal_region_stats", "Branch density around a postal code.", ("postal_code",)),
    ("get_mobile_app_version", "Current version of the banking app in a language.",
     ("language",)),
    ("get_statement_cycle", "Statement cycle of a product line.", ("product_line",)),
    ("get_referral_bonus", "Referral bonus for a product line over a period.",
     ("product_line", "period")),
    ("get_tax_reporting_dates", "Tax reporting dates in a period.", ("period",)),
    ("get_atm_withdrawal_fee", "ATM fee abroad for a currency.", ("currency", "quote_size")),
    ("get_merchant_category_list", "Merchant category codes, in a language.", ("language",)),
    ("get_branch_manager_contact", "Public contact of a branch's manager.", ("branch_code",)),
)


def _make(name: str, description: str, parameters: tuple[str, ...]) -> Tool:
    example = {p: _PARAMETERS[p][1] for p in parameters}

    @tool(
        name=name,
        description=description,
        input_schema=arguments_schema({p: _PARAMETERS[p][0] for p in parameters},
                                      examples=[example]),
        output_schema=result_schema({"service": {"type": "string"},
                                     "reference_value": {"type": "number"},
                                     "as_of": {"type": "string"}}),
    )
    def run(args: JSON, ctx: ToolContext) -> JSON:
        digest = hashlib.sha256(f"{name}|{sorted(args.items())}".encode()).digest()
        return {"service": name, "reference_value": int.from_bytes(digest[:3]) / 1000,
                "as_of": "2026-01-02"}  # fmt: skip

    return run


# one set of objects, shared by every scenario pack (the contract tests test each once)
FINANCIAL_DISTRACTORS = [_make(*entry) for entry in _CATALOG]


PARAMETER_NAMES = frozenset(_PARAMETERS)
