"""The savings scenario as data: 13 APIs giving the paper's 13-node, 26-edge graph, four
exception paths, a product cap on the deposit and three output fields."""

from sopgym.domains.banking._engine.spec import Api, Check, Scenario

SCENARIO = Scenario(
    name="savings",
    title="Fixed-term savings deposits",
    entity="savings application",
    id_prefix="SV",
    context=(
        "The deposits team opens fixed-term savings. A deposit is taken only from a "
        "verified, unsanctioned customer whose source of funds is verified and whose "
        "anti-money-laundering risk is acceptable. A product caps what one customer may "
        "hold in it; a deposit above the cap may be accepted up to the cap. Large deposits "
        "need senior sign-off."
    ),
    given=("customer_id", "full_name", "date_of_birth", "funding_account_number",
           "deposit_amount", "term_months"),
    recorded=("identity_verified", "kyc_ref", "source_of_funds_verified", "funds_ref",
              "aml_risk_score"),
    request_field="deposit_amount",
    limit_field="max_deposit_amount",
    amount_output="accepted_amount",
    tiers=(("officer", 50_000), ("manager", 250_000), ("committee", 1_000_000)),
    checks=(
        Check("identity_verified", "false", "identity_unverified", "identity must be verified"),
        Check("sanctions_hit", "true", "sanctions_match", "no sanctioned customer"),
        Check("source_of_funds_verified", "false", "funds_unverified",
              "the source of funds must be verified"),
        Check("aml_risk_score", "above", "aml_risk_too_high", "acceptable AML risk", 750),
    ),
    task_count=200,
    paper_graph=(13, 26),
    paper_catalog=275,
    apis=(
        Api("get_savings_application", "Fetch a savings application record.", "fetch", ()),
        Api("verify_identity", "Verify the customer's identity against the KYC registry.",
            "screen", ("customer_id", "full_name", "date_of_birth", "funding_account_number",
                       "deposit_amount", "term_months"), ("identity_verified", "kyc_ref")),
        Api("screen_sanctions", "Screen the verified customer against sanctions lists.",
            "screen", ("kyc_ref", "full_name", "date_of_birth", "customer_id", "term_months",
                       "deposit_amount"), ("sanctions_hit", "screening_ref")),
        Api("verify_source_of_funds", "Verify where the deposited money comes from.",
            "screen", ("kyc_ref", "funding_account_number", "deposit_amount",
                       "screening_ref", "customer_id", "full_name"),
            ("source_of_funds_verified", "funds_ref")),
        Api("compute_aml_risk", "Anti-money-laundering risk score of the deposit.",
            "screen", ("screening_ref", "sanctions_hit", "funds_ref",
                       "source_of_funds_verified"), ("aml_risk_score",)),
        Api("get_customer_holdings", "The customer's existing savings with the bank.",
            "offer", ("customer_id", "kyc_ref", "funding_account_number", "full_name",
                      "date_of_birth", "term_months"),
            ("existing_savings_balance", "holdings_ref")),
        Api("get_product_cap", "The most this customer may still deposit in the product.",
            "offer", ("holdings_ref", "existing_savings_balance", "term_months",
                      "deposit_amount", "customer_id", "full_name"), ("max_deposit_amount",)),
        Api("get_savings_rate", "The product's rate for a term, amount and risk.",
            "offer", ("term_months", "max_deposit_amount", "aml_risk_score", "customer_id",
                      "deposit_amount", "date_of_birth"), ("savings_rate", "rate_sheet_id")),
        Api("check_deposit_protection", "Deposit-guarantee coverage of the holdings.",
            "offer", ("holdings_ref", "max_deposit_amount", "existing_savings_balance"),
            ("protection_ref",)),
        Api("prepare_savings_contract", "Draft the fixed-term deposit contract.",
            "offer", ("rate_sheet_id", "savings_rate", "protection_ref",
                      "max_deposit_amount"), ("contract_ref",)),
        Api("schedule_interest_payments", "Schedule the contract's interest payments.",
            "offer", ("contract_ref",), ("schedule_ref",)),
        Api("request_savings_approval", "Record one level's approval of the deposit.",
            "approval", ("contract_ref", "schedule_ref")),
        Api("update_savings_application", "Write the decision back to the application record.",
            "write", ("identity_verified", "kyc_ref", "source_of_funds_verified", "funds_ref",
                      "aml_risk_score")),
    ),
)
