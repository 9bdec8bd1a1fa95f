"""Runs: a scenario's cells, played as duels (serially, with joblib or on Dask), their run
directory, workload estimates and the stamps of generated pages."""
