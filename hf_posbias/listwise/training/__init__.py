"""DebiasFirst training pieces: training sets, the FIRST / IPS losses, Pos-Aug, collation and the
model card (the entry point is ``hf_posbias.listwise.train``).
"""
