"""candlebench: local, open-weight VLM evaluation for financial chart reasoning."""
