"""Position-aware evaluation: PSI, position-bucketed retrieval sets, MTEB tasks, reports."""
