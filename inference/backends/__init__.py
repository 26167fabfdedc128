"""Model backends behind one interface; ``BACKENDS`` maps a config name to a factory."""
