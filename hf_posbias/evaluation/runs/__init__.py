"""Running models on tasks: the evaluate runner, search models (BM25, reranking, endpoints),
exports and the mirror-reversal diagnostic.
"""
