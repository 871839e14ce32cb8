"""The report's tables, one module each: traversal orders, strategies, graph features,
simulator accuracy, failures, and the recommendations that draw on the others."""
