"""Aircraft-inspection tools, one module each, in SOP order."""

from sopgym.domains.aircraft_inspection.tools import (
    file_discrepancy_report,
    get_aircraft_record,
    get_maintenance_log,
    get_mechanical_readings,
    get_type_specifications,
    run_electrical_checks,
    verify_component_authenticity,
)
from sopgym.domains.aircraft_inspection.tools.distractors import DISTRACTORS

TOOLS = [
    get_aircraft_record.run,
    get_type_specifications.run,
    get_mechanical_readings.run,
    run_electrical_checks.run,
    get_maintenance_log.run,
    verify_component_authenticity.run,
    file_discrepancy_report.run,
]

__all__ = ["DISTRACTORS", "TOOLS"]
