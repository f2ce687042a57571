"""Run analysis: metrics, Gantt charts and run comparison (``batkube analyze`` / ``batkube compare``)."""
