"""The one time limit a test may set: a guard against hangs, never a performance assertion.

A busy 2-core machine runs a subprocess test several times slower than an idle one, so a limit
tight enough to notice slowness fails good code; 15 minutes only stops a test that hangs.
"""

HANG_GUARD_S = 15 * 60
