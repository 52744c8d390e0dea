"""The account management scenario as data: 10 APIs giving the paper's 10-node, 16-edge
graph, four exception paths, a priced overdraft facility and six output fields."""

from sopgym.domains.banking._engine.spec import Api, Check, Pricing, Scenario

SCENARIO = Scenario(
    name="account_management",
    title="Overdraft facility requests",
    entity="overdraft request",
    id_prefix="OD",
    context=(
        "The current-account team arranges overdraft facilities. Only verified, unsanctioned "
        "customers whose account is active and not persistently overdrawn may have one. The "
        "facility is sized from the account's turnover and risk band and priced at the "
        "tariff's base rate plus the band's premium; larger facilities need senior sign-off."
    ),
    given=("customer_id", "full_name", "date_of_birth", "account_number", "monthly_income",
           "requested_amount", "city"),
    recorded=("identity_verified", "kyc_ref", "average_balance", "overdrawn_days"),
    request_field="requested_amount",
    limit_field="max_overdraft_amount",
    amount_output="approved_amount",
    tiers=(("officer", 2_000), ("manager", 10_000), ("committee", 50_000)),
    checks=(
        Check("identity_verified", "false", "identity_unverified", "identity must be verified"),
        Check("sanctions_hit", "true", "sanctions_match", "no sanctioned customer"),
        Check("account_active", "false", "account_inactive", "the account must be active"),
        Check("overdrawn_days", "above", "persistent_overdraft", "no persistent overdraft", 30),
    ),
    pricing=Pricing(
        base_rate="base_rate",
        band="risk_band",
        premiums=(("A", 0.02), ("B", 0.05), ("C", 0.09)),
        rate_output="overdraft_rate",
        monthly_output="monthly_interest",
    ),
    task_count=214,
    paper_graph=(10, 16),
    paper_catalog=274,
    apis=(
        Api("get_overdraft_request", "Fetch an overdraft request record.", "fetch", ()),
        Api("verify_customer", "Verify the customer and screen them against sanctions lists.",
            "screen", ("customer_id", "full_name", "date_of_birth", "account_number",
                       "monthly_income", "city"),
            ("identity_verified", "kyc_ref", "sanctions_hit")),
        Api("get_account_status", "Status, age, balance and overdraft history of an account.",
            "screen", ("account_number", "customer_id", "kyc_ref", "monthly_income", "city",
                       "full_name"),
            ("account_active", "average_balance", "overdrawn_days", "account_age_months")),
        Api("get_transaction_summary", "Salary credits, turnover and card spending.",
            "offer", ("account_number", "average_balance", "overdrawn_days", "monthly_income",
                      "customer_id", "requested_amount"),
            ("salary_credits_count", "turnover_amount", "card_spend_amount")),
        Api("get_risk_band", "Risk band of the account from its behaviour.",
            "offer", ("average_balance", "overdrawn_days", "account_age_months",
                      "salary_credits_count", "turnover_amount", "card_spend_amount"),
            ("risk_band",)),
        Api("get_overdraft_base_rate", "Base overdraft rate of the tariff for a risk band.",
            "offer", ("risk_band", "account_number", "monthly_income", "city", "customer_id",
                      "full_name"), ("base_rate", "tariff_ref")),
        Api("compute_overdraft_limit", "The largest facility the account supports.",
            "offer", ("risk_band", "turnover_amount", "salary_credits_count"),
            ("max_overdraft_amount",)),
        Api("prepare_facility_agreement", "Draft the facility agreement.",
            "offer", ("tariff_ref", "max_overdraft_amount", "base_rate"), ("agreement_ref",)),
        Api("request_overdraft_approval", "Record one level's approval of the facility.",
            "approval", ("agreement_ref",)),
        Api("update_overdraft_request", "Write the decision back to the request record.",
            "write", ("identity_verified", "kyc_ref", "average_balance", "overdrawn_days")),
    ),
)
