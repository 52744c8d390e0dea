"""The investment scenario as data: 17 APIs giving the paper's 17-node, 23-edge graph, four
exception paths, suitability and an investable maximum, and three output fields."""

from sopgym.domains.banking._engine.spec import Api, Check, Scenario

_KYC = ("identity_verified", "kyc_ref", "kyc_tier_band", "residency_code", "tax_id_number",
        "kyc_expiry_date")
_FUND = ("fund_risk_band", "fund_ref", "fund_nav_value", "fund_currency_code",
         "ongoing_charge_ratio", "fund_launch_date")

SCENARIO = Scenario(
    name="investments",
    title="Fund investment orders",
    entity="investment order",
    id_prefix="IV",
    context=(
        "The wealth desk places customers' orders into funds. An order is accepted only from "
        "a verified, unsanctioned customer with enough investment knowledge whose portfolio "
        "is not already concentrated. An order never exceeds what suitability and the "
        "portfolio allow; a larger order may be placed at that maximum. Large orders need "
        "senior sign-off."
    ),
    given=("customer_id", "full_name", "date_of_birth", "city", "investment_amount",
           "horizon_years", "fund_code"),
    recorded=("identity_verified", "kyc_ref", "knowledge_score"),
    request_field="investment_amount",
    limit_field="max_investment_amount",
    amount_output="order_amount",
    tiers=(("officer", 20_000), ("manager", 100_000), ("committee", 500_000)),
    checks=(
        Check("identity_verified", "false", "identity_unverified", "identity must be verified"),
        Check("sanctions_hit", "true", "sanctions_match", "no sanctioned customer"),
        Check("knowledge_score", "below", "insufficient_knowledge",
              "enough investment knowledge", 500),
        Check("concentration_ratio", "above", "portfolio_concentrated",
              "no concentrated portfolio", 0.4),
    ),
    task_count=184,
    paper_graph=(17, 23),
    paper_catalog=281,
    apis=(
        Api("get_investment_order", "Fetch an investment order record.", "fetch", ()),
        Api("verify_identity", "Verify the customer's identity and KYC standing.",
            "screen", ("customer_id", "full_name", "date_of_birth", "city",
                       "investment_amount", "fund_code"), _KYC),
        Api("screen_sanctions", "Screen the verified customer against sanctions lists.",
            "screen", _KYC, ("sanctions_hit", "screening_ref")),
        Api("assess_knowledge", "Score the customer's investment knowledge questionnaire.",
            "screen", _KYC,
            ("knowledge_score", "questionnaire_ref", "experience_years", "trade_count",
             "education_band", "loss_capacity_amount")),
        Api("get_portfolio_holdings", "The customer's current portfolio.",
            "screen", ("customer_id", "full_name", "date_of_birth", "city", "fund_code",
                       "investment_amount"),
            ("portfolio_ref", "portfolio_value", "concentration_ratio", "cash_balance",
             "holdings_count")),
        Api("get_risk_profile", "The customer's risk profile from the questionnaire.",
            "offer", ("knowledge_score", "questionnaire_ref", "experience_years",
                      "trade_count", "education_band", "loss_capacity_amount"),
            ("risk_profile_band", "profile_ref")),
        Api("get_fund_details", "Risk, price and currency of a fund.",
            "offer", ("fund_code", "investment_amount", "horizon_years", "customer_id",
                      "city", "full_name"), _FUND),
        Api("check_suitability", "Whether the fund suits the customer's risk profile.",
            "offer", ("profile_ref", "risk_profile_band", "fund_ref", "fund_risk_band"),
            ("suitability_ref",)),
        Api("compute_max_investment", "The largest order suitability and the portfolio allow.",
            "offer", ("portfolio_ref", "portfolio_value", "concentration_ratio",
                      "cash_balance", "holdings_count", "suitability_ref"),
            ("max_investment_amount",)),
        Api("get_fee_schedule", "Entry fee and charges of a fund.",
            "offer", _FUND, ("fee_ref", "entry_fee_amount")),
        Api("compute_costs_disclosure", "The costs-and-charges disclosure of the order.",
            "offer", ("fee_ref", "entry_fee_amount", "max_investment_amount"), ("costs_ref",)),
        Api("check_dealing_window", "The fund's next dealing window.",
            "offer", ("fund_ref",), ("dealing_ref",)),
        Api("prepare_order", "Prepare the fund order.",
            "offer", ("costs_ref", "dealing_ref", "max_investment_amount"), ("order_ref",)),
        Api("check_settlement_account", "The account that settles the order.",
            "offer", ("portfolio_ref", "cash_balance"), ("settlement_ref",)),
        Api("reserve_settlement_cash", "Reserve the cash that pays for the order.",
            "offer", ("settlement_ref", "order_ref"), ("cash_reservation_ref",)),
        Api("request_investment_approval", "Record one level's approval of the order.",
            "approval", ("cash_reservation_ref",)),
        Api("update_investment_order", "Write the decision back to the order record.",
            "write", ("identity_verified", "kyc_ref", "knowledge_score")),
    ),
)
