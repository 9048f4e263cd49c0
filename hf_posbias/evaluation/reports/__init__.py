"""People-facing outputs: tables and plots, the audit report, the leaderboard and the evidence-
position figure.
"""
