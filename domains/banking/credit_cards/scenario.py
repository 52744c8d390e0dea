"""The credit card scenario as data: 11 APIs giving the paper's 11-node, 17-edge graph, four
exception paths, a credit line sized by affordability and three output fields."""

from sopgym.domains.banking._engine.spec import Api, Check, Scenario

SCENARIO = Scenario(
    name="credit_cards",
    title="Credit card applications",
    entity="card application",
    id_prefix="CC",
    context=(
        "The cards team decides credit card applications. A card goes only to a verified "
        "applicant with no fraud signal, no default on file and a sound credit score. The "
        "credit line never exceeds what affordability and the credit file support; higher "
        "lines need senior sign-off."
    ),
    given=("customer_id", "full_name", "date_of_birth", "annual_income", "requested_limit",
           "card_product", "city"),
    recorded=("identity_verified", "kyc_ref", "credit_score", "credit_file_id"),
    request_field="requested_limit",
    limit_field="max_credit_limit",
    amount_output="credit_limit",
    tiers=(("officer", 5_000), ("manager", 15_000), ("committee", 50_000)),
    checks=(
        Check("identity_verified", "false", "identity_unverified", "identity must be verified"),
        Check("fraud_flag", "true", "fraud_suspected", "no open fraud signal"),
        Check("existing_default", "true", "default_on_file", "no default on the credit file"),
        Check("credit_score", "below", "low_credit_score", "minimum credit quality", 650),
    ),
    task_count=221,
    paper_graph=(11, 17),
    paper_catalog=275,
    apis=(
        Api("get_card_application", "Fetch a credit card application record.", "fetch", ()),
        Api("verify_identity", "Verify the applicant's identity against the KYC registry.",
            "screen", ("customer_id", "full_name", "date_of_birth", "annual_income", "city",
                       "card_product"), ("identity_verified", "kyc_ref")),
        Api("pull_credit_file", "Pull the applicant's credit file.",
            "screen", ("kyc_ref", "customer_id", "full_name", "date_of_birth",
                       "annual_income", "city"),
            ("credit_file_id", "credit_score", "existing_default", "revolving_balance")),
        Api("check_fraud_signals", "Fraud signals on the identity and the credit file.",
            "screen", ("kyc_ref", "credit_file_id"), ("fraud_flag",)),
        Api("get_spending_profile", "Expected monthly card spending.",
            "offer", ("credit_file_id", "revolving_balance", "annual_income", "card_product",
                      "customer_id", "city"), ("spend_band", "monthly_spend_amount")),
        Api("compute_affordability", "Share of income the card's spending would take.",
            "offer", ("annual_income", "requested_limit", "card_product", "city",
                      "monthly_spend_amount", "spend_band"), ("affordability_ratio",)),
        Api("compute_credit_line", "The largest credit line the application supports.",
            "offer", ("affordability_ratio", "credit_score", "revolving_balance",
                      "existing_default", "credit_file_id"), ("max_credit_limit",)),
        Api("get_card_terms", "Terms of a card product at a credit line.",
            "offer", ("card_product", "max_credit_limit", "annual_income", "city",
                      "customer_id", "full_name"), ("terms_ref",)),
        Api("issue_card_offer", "Issue the card offer under its terms.",
            "offer", ("terms_ref",), ("card_offer_id",)),
        Api("request_card_approval", "Record one level's approval of the credit line.",
            "approval", ("card_offer_id",)),
        Api("update_card_application", "Write the decision back to the application record.",
            "write", ("identity_verified", "kyc_ref", "credit_score", "credit_file_id")),
    ),
)
