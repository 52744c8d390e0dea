"""Customer-service tools, one module each, in SOP order."""

from sopgym.domains.customer_service.tools import (
    analyze_issue_text,
    check_billing_standing,
    check_service_outages,
    create_support_ticket,
    execute_remote_action,
    get_account,
    get_device_status,
    get_firmware_catalog,
    run_line_test,
    validate_session,
)
from sopgym.domains.customer_service.tools.distractors import DISTRACTORS

TOOLS = [
    validate_session.run,
    get_account.run,
    check_billing_standing.run,
    analyze_issue_text.run,
    check_service_outages.run,
    get_device_status.run,
    run_line_test.run,
    get_firmware_catalog.run,
    execute_remote_action.run,
    create_support_ticket.run,
]

__all__ = ["DISTRACTORS", "TOOLS"]
