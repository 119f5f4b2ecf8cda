"""Redis storage of runs, their journals and indexes."""
