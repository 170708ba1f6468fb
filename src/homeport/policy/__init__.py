"""Pure permission rules: who may touch what. No I/O here and no imports from the executors."""
