"""The user simulator: the other side of a dialogue episode's conversation."""
