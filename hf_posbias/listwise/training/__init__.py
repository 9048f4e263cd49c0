"""DebiasFirst training pieces: training sets, the FIRST / IPS losses, the trainer class
(:mod:`~hf_posbias.listwise.training.trainer`), Pos-Aug, collation and the model card (the entry
point is ``hf_posbias.listwise.training.train``).
"""
